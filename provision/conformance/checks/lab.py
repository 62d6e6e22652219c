"""Which of a node's tools are LAB STAND-INs? For the report's display only.

Whether a node is a lab twin is the inventory's declaration (HostEntry.lab), never this probe's: a stray
file or tool on a real node changes no verdict.
"""

from __future__ import annotations

from provision.conformance.facts import NodeFacts, Probe

SECTION = "lab_standins"
MARKER = "LAB STAND-IN"
TOOLS = ("nvidia-smi", "dmesg", "dcgmi", "ibstat", "zpool", "zfs", "mdadm", "nvme", "lscpu", "dmidecode",
         "all_reduce_perf", "fio", "ib_write_bw")
# One grep over every tool found on PATH; prints the stand-ins' paths. PATH is searched with shell builtins
# (as `command -v` would, without a subshell per tool: forks are what a gather costs on the node).
COMMAND = (
    f"p=; _o=$IFS; for t in {' '.join(TOOLS)}; do IFS=:; for d in $PATH; do "
    "[ -n \"$d\" ] && [ -f \"$d/$t\" ] && [ -x \"$d/$t\" ] && { p=\"$p $d/$t\"; break; }; done; IFS=$_o; done; "
    f"[ -n \"$p\" ] && grep -ls '{MARKER}' $p; true"
)


def probe() -> Probe:
    return Probe(name=SECTION, command=COMMAND)


def standins(facts: NodeFacts) -> tuple[str, ...]:
    """The tools found to be stand-ins (display only)."""
    section = facts.section(SECTION)
    lines = section.stdout.split() if section else []
    return tuple(sorted({t.rsplit("/", 1)[-1] for t in lines}))
