#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `ibstat` (infiniband-diags) for lab twins; format of the gpud ConnectX-7 captures."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate


def port_state(hca: dict[str, Any]) -> tuple[str, str, int]:
    """(State, Physical state, Rate) of port 1 after faults."""
    down = labstate.fault("ib_port_down")
    if down and down.get("hca") == hca["name"]:
        return "Down", "Disabled", 40 if hca["link_layer"] == "Ethernet" else 10
    slow = labstate.fault("ib_port_slow")
    if slow and slow.get("hca") == hca["name"]:
        return "Active", "LinkUp", int(slow["rate"])
    return "Active", "LinkUp", int(hca["rate"])


def port_guid(hca: dict[str, Any]) -> str:
    if hca["link_layer"] == "Ethernet":  # RoCE ports derive their GUID from the MAC
        g = hca["node_guid"][2:]
        return "0x" + g[:6] + "fffe" + g[10:] if len(g) == 16 else hca["node_guid"]
    return str(hca["node_guid"])


def render(hca: dict[str, Any]) -> str:
    state, phys, rate = port_state(hca)
    ib = hca["link_layer"] == "InfiniBand"
    lid = hca["lid"] if ib and state == "Active" else 0
    sm = hca["sm_lid"] if ib and state == "Active" else 0
    return (
        f"CA '{hca['name']}'\n\tCA type: {hca['ca_type']}\n\tNumber of ports: 1\n"
        f"\tFirmware version: {hca['firmware']}\n\tHardware version: 0\n"
        f"\tNode GUID: {hca['node_guid']}\n\tSystem image GUID: {hca['node_guid']}\n\tPort 1:\n"
        f"\t\tState: {state}\n\t\tPhysical state: {phys}\n\t\tRate: {rate}\n\t\tBase lid: {lid}\n"
        f"\t\tLMC: 0\n\t\tSM lid: {sm}\n\t\tCapability mask: {'0xa751e848' if ib else '0x00010000'}\n"
        f"\t\tPort GUID: {port_guid(hca)}\n\t\tLink layer: {hca['link_layer']}\n"
    )


def main(args: list[str]) -> int:
    hcas = labstate.hardware()["hcas"]
    if not hcas:
        labstate.die("ibpanic: [...] umad_get_cas_names(): No IB devices found", 255)
    names = [a for a in args if not a.startswith("-")]
    if args[:1] in (["-l"], ["--list_of_cas"]):
        sys.stdout.write("".join(h["name"] + "\n" for h in hcas))
        return 0
    chosen = [h for h in hcas if not names or h["name"] == names[0]]
    if not chosen:
        labstate.die(f"ibpanic: [{os.getpid()}] main: stat of IB device '{names[0]}' failed: No such file or directory",
                     255)
    sys.stdout.write("".join(render(h) for h in chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
