#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""`ip` of a twin whose own link stands for an on-board PCI NIC (hardware.json `nics`).

The twin's eth0 is one end of a veth pair. iproute2 (5.15+, with `-d`) names a real NIC's device as
`"parentbus": "pci", "parentdev": "0000:05:00.0"` and gives a veth `"linkinfo": {"info_kind": "veth"}`
plus its peer's `link_index`/`link_netnsid`. For `ip -j ...` (JSON) this runs the real /usr/bin/ip and
presents each listed NIC as a real host shows it: its PCI parent with `-d`, no veth kind, no peer. Every
other call (text output, changes) is the real ip, unchanged: the entry point never starts Python for them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate

REAL_IP = os.environ.get("PROVISION_LAB_REAL_IP", "/usr/bin/ip")
PEER_KEYS = ("link_index", "link_netnsid", "link")


def _flag(args: list[str], *names: str) -> bool:
    """An iproute2 global option: `-x`/`--x` matched as a prefix of its full name, before the object."""
    for arg in args:
        if not arg.startswith("-"):
            return False
        opt = arg[2:] if arg.startswith("--") else arg[1:]
        if opt and any(name.startswith(opt) for name in names):
            return True
    return False


def present(links: list[Any], nics: dict[str, dict[str, Any]], details: bool) -> list[Any]:
    """The links as the simulated server shows them (pure)."""
    out = []
    for link in links:
        nic = nics.get(str(link.get("ifname"))) if isinstance(link, dict) else None
        if nic is None:
            out.append(link)
            continue
        shown = {k: v for k, v in link.items() if k not in PEER_KEYS and k != "linkinfo"}
        if details:
            shown["parentbus"], shown["parentdev"] = "pci", nic["pci_address"]
        out.append(shown)
    return out


def main(args: list[str]) -> int:
    done = subprocess.run([REAL_IP, *args], capture_output=True, text=True, check=False)
    sys.stderr.write(done.stderr)
    try:
        with open(labstate.state_path("hardware.json"), encoding="utf-8") as fh:
            nics = {n["name"]: n for n in json.load(fh).get("nics", [])}
        json_out = done.returncode == 0 and nics and _flag(args, "json")
        links = json.loads(done.stdout) if json_out else None
    except (OSError, ValueError, KeyError, AttributeError):  # no simulated NIC to present: the real output
        links = None
    if not isinstance(links, list):
        sys.stdout.write(done.stdout)
        return done.returncode
    sys.stdout.write(json.dumps(present(links, nics, _flag(args, "details")), separators=(",", ":")) + "\n")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
