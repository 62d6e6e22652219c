"""LAB ONLY: what `provision lab up` declares in the lab's inventory for each node twin.

A node is a lab twin because its inventory says so (`provision_lab: true`), never because of what is
found on it. The declaration lists, with a reason each, the checks a twin cannot show
(`provision_lab_waivers`, check id or fnmatch pattern -> reason); conformance records exactly those as
WAIVED with that reason and judges everything else as on real hardware.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

LAB_VAR = "provision_lab"
WAIVERS_VAR = "provision_lab_waivers"
STANDINS_VAR = "provision_lab_standins"
NOTICE_VAR = "provision_lab_notice"

# The twins' LAB STAND-IN tools (provision/lab/twins/personality/data/tools): named in the declaration so the
# report can list them; no probe on the node looks for them.
STANDIN_TOOLS: tuple[str, ...] = (
    "all_reduce_perf", "apptainer", "dcgmi", "dmesg", "dmidecode", "docker", "fio", "ib_read_bw", "ib_write_bw",
    "ibstat", "ibv_devinfo", "ip", "lscpu", "mdadm", "mpirun", "nvidia-ctk", "nvidia-smi", "nvme", "smartctl", "zfs",
    "zpool",
)

# What no twin can present, whatever the lab host.
TWIN_WAIVERS: dict[str, str] = {
    "kernel.uname": "a twin runs the lab host's kernel: `uname -r` names the host's kernel (the twin presents "
                    "the spec'd release in /proc/sys/kernel/osrelease, judged by kernel.release)",
    "kernel.module.*": "a twin shares the lab host's kernel, built without module support: no kernel module "
                       "can be loaded or shown",
    "infiniband.ipoib": "the lab host has no kernel InfiniBand stack: a twin has no IPoIB interfaces "
                        "(the HCAs are the stand-in ibstat's)",
    "raid.root": "a twin's / is its systemd-nspawn overlay, not an md device",
    "ethernet.*.mtu": "a twin's Ethernet-mode ConnectX ports are the stand-in ibstat's: no netdev carries them",
}
# What a twin cannot present when the lab host's kernel has no md driver: procfs cannot gain a file, so
# there is no /proc/mdstat to bind the simulated one over (mdadm --detail still shows it: raid.state).
NO_MD_WAIVERS: dict[str, str] = {
    check: "the lab host's kernel has no md driver: the twin's /proc/mdstat cannot be presented "
           "(the simulated mirror is judged from mdadm --detail by raid.state)"
    for check in ("raid.array", "raid.sync", "raid.members")
}


def lab_waivers(proc: Path = Path("/proc")) -> dict[str, str]:
    """Check id or pattern -> reason, for twins on this lab host (`proc`: the host's /proc)."""
    waivers = dict(TWIN_WAIVERS)
    if not (proc / "mdstat").exists():
        waivers.update(NO_MD_WAIVERS)
    return waivers


def lab_notice(standins: tuple[str, ...] = STANDIN_TOOLS) -> str:
    """The one line every report shows beside a twin's results (the reports print it as declared)."""
    return f"lab twin: {', '.join(standins) or 'its hardware tools'} are LAB STAND-INs (simulated hardware)"


def lab_declaration(proc: Path = Path("/proc")) -> dict[str, Any]:
    """The host variables that declare a node twin: `provision_lab`, its waivers, its stand-in tools and the
    notice its reports show."""
    return {LAB_VAR: True, WAIVERS_VAR: lab_waivers(proc), STANDINS_VAR: list(STANDIN_TOOLS),
            NOTICE_VAR: lab_notice()}
