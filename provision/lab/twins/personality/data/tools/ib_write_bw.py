#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated perftest `ib_write_bw` / `ib_read_bw` (4.5) for lab twins (ib_read_bw.py calls main with "Read").

Without a peer argument it is the server, with one the client. A twin cannot reach another twin (twins
reach only the lab host), so no connection is made: each side prints the result table for its own HCA,
about 96.6 % of the port's rate (ib_port_slow halves the rate; ib_bw_low leaves the port Active at full
rate and delivers 60 % of it, as a bad cable or a downtrained HCA slot does). A Down port cannot run the
test; an unknown device is refused as perftest refuses it. Options read: -d, -p, -D, -s, -F, --report_gbits.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ibstat
import labstate

RULE = "-" * 87
WITH_VALUE = {"-d", "--ib-dev", "-D", "--duration", "-s", "--size", "-i", "--ib-port", "-p", "--port", "-q",
              "--qp", "-n", "--iters", "-x", "--gid-index", "-m", "--mtu"}


def _parse(args: list[str]) -> tuple[dict[str, str], list[str]]:
    opts, rest, skip = {}, [], False
    for i, a in enumerate(args):
        if skip:
            skip = False
            continue
        if a in WITH_VALUE and i + 1 < len(args):
            opts[a], skip = args[i + 1], True
        elif a.startswith("-"):
            opts[a.split("=")[0]] = a.split("=", 1)[1] if "=" in a else "1"
        else:
            rest.append(a)
    return opts, rest


def _header(dev: str, ib: bool, test: str) -> list[str]:
    return [RULE, f"                    RDMA_{test} BW Test",
            f" Dual-port       : OFF\t\tDevice         : {dev}",
            " Number of qps   : 1\t\tTransport type : IB",
            " Connection type : RC\t\tUsing SRQ      : OFF", " PCIe relax order: ON", " ibv_wr* API     : ON",
            " TX depth        : 128", " CQ Moderation   : 1", " Mtu             : 4096[B]",
            f" Link type       : {'IB' if ib else 'Ethernet'}", " Max inline data : 0[B]",
            " rdma_cm QPs\t : OFF", " Data ex. method : Ethernet", RULE]


def delivered_gbits(hca: dict, rate: int) -> float:
    low = labstate.fault("ib_bw_low")
    factor = int(low["percent"]) / 100 if low and low.get("hca") == hca["name"] else 1.0
    return rate * 0.966 * factor


def main(args: list[str], test: str = "Write") -> int:
    opts, rest = _parse(args)
    hcas = {h["name"]: h for h in labstate.hardware()["hcas"]}
    dev = opts.get("-d") or opts.get("--ib-dev") or next(iter(hcas), "")
    hca = hcas.get(dev)
    if hca is None:
        return labstate.die(f" IB device {dev} not found\n Unable to find the Infiniband/RoCE device", 1)
    state, _phys, rate = ibstat.port_state(hca)
    if state != "Active":
        labstate.die(f" Port number 1 state is {state}\n Couldn't set the link layer\n"
                     " Couldn't get context for the device", 1)
    ib = hca["link_layer"] == "InfiniBand"
    banner = []
    if not rest:
        banner = ["", "*" * 41, "* Waiting for client to connect... *", "*" * 41]
    gbits = delivered_gbits(hca, rate)
    size = int(opts.get("-s") or opts.get("--size") or 65536)
    seconds = float(opts.get("-D") or opts.get("--duration") or 5)
    msg_rate = gbits * 1e9 / 8 / size / 1e6
    iters = int(msg_rate * 1e6 * seconds)
    unit, avg = ("Gb/sec", gbits) if "--report_gbits" in opts else ("MB/sec", gbits * 125)
    lid = hca["lid"]
    lines = [*banner, *_header(dev, ib, test),
             f" local address: LID {lid:#06x} QPN 0x00a2 PSN 0x5f3b21 RKey 0x1fdfbf VAddr 0x007f4a2c000000",
             f" remote address: LID {lid:#06x} QPN 0x00a3 PSN 0x1c8e7d RKey 0x1fe0c0 VAddr 0x007f2b6a000000",
             RULE, f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   MsgRate[Mpps]",
             f" {size:<10d} {iters:<10d}       0.00               {avg:.2f} \t\t     {msg_rate:.6f}", RULE]
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
