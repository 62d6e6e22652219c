#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `ibv_devinfo` (ibverbs-utils) for lab twins, in rdma-core 44's layout."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ibstat
import labstate

_STATES = {"Active": "PORT_ACTIVE (4)", "Down": "PORT_DOWN (1)", "Init": "PORT_INIT (2)"}


def _guid(raw: str) -> str:
    g = raw[2:].rjust(16, "0")
    return ":".join(g[i:i + 4] for i in range(0, 16, 4))


def render(hca: dict[str, Any]) -> str:
    state, _phys, _rate = ibstat.port_state(hca)
    ib = hca["link_layer"] == "InfiniBand"
    mtu = "4096 (5)" if ib else "1024 (3)"
    lid = hca["lid"] if ib and state == "Active" else 0
    sm = hca["sm_lid"] if ib and state == "Active" else 0
    return (
        f"hca_id:\t{hca['name']}\n"
        f"\ttransport:\t\t\tInfiniBand (0)\n"
        f"\tfw_ver:\t\t\t\t{hca['firmware']}\n"
        f"\tnode_guid:\t\t\t{_guid(hca['node_guid'])}\n"
        f"\tsys_image_guid:\t\t\t{_guid(hca['node_guid'])}\n"
        f"\tvendor_id:\t\t\t0x02c9\n"
        f"\tvendor_part_id:\t\t\t{hca['part_id']}\n"
        f"\thw_ver:\t\t\t\t0x0\n"
        f"\tboard_id:\t\t\tMT_{'0000000838' if ib else '0000000359'}\n"
        f"\tphys_port_cnt:\t\t\t1\n"
        f"\t\tport:\t1\n"
        f"\t\t\tstate:\t\t\t{_STATES.get(state, 'PORT_DOWN (1)')}\n"
        f"\t\t\tmax_mtu:\t\t4096 (5)\n"
        f"\t\t\tactive_mtu:\t\t{mtu}\n"
        f"\t\t\tsm_lid:\t\t\t{sm}\n"
        f"\t\t\tport_lid:\t\t{lid}\n"
        f"\t\t\tport_lmc:\t\t0x00\n"
        f"\t\t\tlink_layer:\t\t{hca['link_layer']}\n\n"
    )


def main(args: list[str]) -> int:
    hcas = labstate.hardware()["hcas"]
    if not hcas:
        labstate.die("No IB devices found", 0)
    want = None
    for i, a in enumerate(args):
        if a in ("-d", "--ib-dev") and i + 1 < len(args):
            want = args[i + 1]
        elif a.startswith("--ib-dev="):
            want = a.split("=", 1)[1]
    chosen = [h for h in hcas if want is None or h["name"] == want]
    if not chosen:
        labstate.die(f"IB device '{want}' wasn't found", 255)
    if "-l" in args or "--list" in args:
        sys.stdout.write(f"{len(hcas)} HCAs found:\n" + "".join(f"\t{h['name']}\n" for h in hcas))
        return 0
    sys.stdout.write("".join(render(h) for h in chosen))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
