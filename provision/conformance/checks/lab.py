"""Is the node a lab twin? Which of its tools are LAB STAND-INs? (The report says so.)"""

from __future__ import annotations

from provision.conformance.facts import NodeFacts, Probe

SECTION = "lab_standins"
MARKER = "LAB STAND-IN"
TWIN = "@twin"
TOOLS = ("nvidia-smi", "dcgmi", "ibstat", "zpool", "zfs", "mdadm", "nvme", "lscpu", "dmidecode",
         "all_reduce_perf", "fio", "ib_write_bw")
# One grep over every tool found on PATH; prints the stand-ins' paths. PATH is searched with shell builtins
# (as `command -v` would, without a subshell per tool: forks are what a gather costs on the node).
COMMAND = (
    f"p=; _o=$IFS; for t in {' '.join(TOOLS)}; do IFS=:; for d in $PATH; do "
    "[ -n \"$d\" ] && [ -f \"$d/$t\" ] && [ -x \"$d/$t\" ] && { p=\"$p $d/$t\"; break; }; done; IFS=$_o; done; "
    f"[ -n \"$p\" ] && grep -ls '{MARKER}' $p; "
    f"test -e /var/lib/provision-lab/hardware.json && echo {TWIN}; true"
)


def probe() -> Probe:
    return Probe(name=SECTION, command=COMMAND)


def standins(facts: NodeFacts) -> tuple[bool, tuple[str, ...]]:
    """(the node is a lab twin, the tools found to be stand-ins)."""
    section = facts.section(SECTION)
    lines = section.stdout.split() if section else []
    tools = tuple(sorted({t.rsplit("/", 1)[-1] for t in lines if t != TWIN}))
    return (TWIN in lines or bool(tools)), tools
