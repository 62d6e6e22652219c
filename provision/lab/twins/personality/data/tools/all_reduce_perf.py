#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated nccl-tests `all_reduce_perf` for lab twins (nccl-tests 2.13 output layout).

Bus bandwidth follows a latency + bandwidth model of the spec'd GPUs: NVSwitch H100s peak near
470 GB/s (less with an NVLink down), PCIe cards near 22 GB/s. Faults: gpu_missing (fewer GPUs than
-g: CUDA 'invalid device ordinal'), fabric not registered (CUDA 'system not yet initialized').

Under the stand-in mpirun (OMPI_COMM_WORLD_SIZE, PROVISION_LAB_MPI_HOSTS) it is rank 0 of a job over several
nodes, one GPU per rank (-g 1): it lists every rank (hosts from the hostfile, GPUs of this twin: the others
cannot be reached), and the ring's bus bandwidth is capped by this node's InfiniBand HCAs (their delivered
rate, so ib_port_slow, ib_port_down and ib_bw_low lower it). Its small-message time models a fabric that
meets the seed's < 5 us (4.4 us); real two-node NDR fabrics are not known here (never measured).
"""

from __future__ import annotations

import os
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ib_write_bw
import ibstat
import labstate

LATENCY_S = 30e-6
MULTINODE_LATENCY_S = 4.4e-6
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def _size(text: str) -> int:
    text = text.strip().upper()
    return int(float(text[:-1]) * UNITS[text[-1]]) if text and text[-1] in UNITS else int(text)


def _opt(args: list[str], short: str, long: str, default: str) -> str:
    for i, a in enumerate(args):
        if a in (short, long) and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(long + "="):
            return a.split("=", 1)[1]
    return default


def peak_busbw(gpus: list[dict]) -> float:
    """GB/s of the bus bandwidth plateau for these GPUs."""
    links = [g["nvlinks"] - sum(labstate.link_inactive(g, n) for n in range(g["nvlinks"])) for g in gpus]
    if gpus and all(g["nvlinks"] for g in gpus):
        return 470.0 * min(links) / max(g["nvlinks"] for g in gpus)
    return 22.0


def ib_busbw(hw: dict) -> float:
    """GB/s this node's InfiniBand HCAs deliver together (a Down port delivers nothing)."""
    total = 0.0
    for hca in hw.get("hcas", []):
        if hca["link_layer"] != "InfiniBand":
            continue
        state, _phys, rate = ibstat.port_state(hca)
        total += ib_write_bw.delivered_gbits(hca, rate) / 8 if state == "Active" else 0.0
    return total


def _mpi() -> tuple[int, list[str]]:
    hosts = [h for h in os.environ.get("PROVISION_LAB_MPI_HOSTS", "").split(",") if h]
    return int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1") or 1), hosts


def _fail(host: str, what: str) -> int:
    sys.stdout.write(f"{host}: Test CUDA failure common.cu:891 '{what}'\n"
                     f" .. {host} pid {os.getpid()}: Test failure common.cu:844\n")
    return 2


def main(args: list[str]) -> int:
    host = socket.gethostname()
    lo, hi = _size(_opt(args, "-b", "--minbytes", "32M")), _size(_opt(args, "-e", "--maxbytes", "32M"))
    factor, ngpus = int(_opt(args, "-f", "--stepfactor", "2")), int(_opt(args, "-g", "--ngpus", "1"))
    hw = labstate.hardware()
    driver = labstate.driver_version()
    gpus = labstate.visible_gpus(hw)
    if driver is None or not labstate.installed_version("libnccl2"):
        return _fail(host, "no CUDA-capable device is detected")
    if hw.get("gpu_fabric") and not labstate.fabric_manager_ok(driver):
        return _fail(host, "system not yet initialized")
    world, hosts = _mpi()
    per_node = max(1, world // max(1, len(hosts))) if len(hosts) > 1 else ngpus
    if max(ngpus, per_node) > len(gpus):
        return _fail(host, "invalid device ordinal")
    used = gpus[:per_node]
    peak, latency, ranks = peak_busbw(used), LATENCY_S, [(host, r, g) for r, g in enumerate(used)]
    if len(hosts) > 1:
        peak, latency = min(peak, ib_busbw(hw)), MULTINODE_LATENCY_S
        ranks = [(h, r, used[r]) for h in hosts for r in range(per_node)]
    n = len(ranks)
    ratio = 2 * (n - 1) / n if n > 1 else 1.0
    out = [f"# nThread 1 nGpus {ngpus} minBytes {lo} maxBytes {hi} step: {factor}(factor) warmup iters: 5 "
           "iters: 20 agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    for rank, (on, dev, g) in enumerate(ranks):
        out.append(f"#  Rank {rank:2d} Group  0 Pid {os.getpid():6d} on {on:>10} device {dev:2d} "
                   f"[0x{g['bus_id'].split(':')[1].lower()}] {g['name']}")
    out += ["#", "#" + " " * 62 + "out-of-place                       in-place          ",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw"
            "   busbw #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)"
            "  (GB/s)       "]
    sizes, size, total = [], lo, 0.0
    while size <= hi:
        sizes.append(size)
        size *= factor
    for size in sizes:
        seconds = latency + size / (peak / ratio * 1e9)
        algbw = size / seconds / 1e9
        busbw = algbw * ratio
        total += busbw
        row = f"{seconds * 1e6:8.2f} {algbw:7.2f} {busbw:7.2f} {0:6d}"
        out.append(f"{size:12d}  {size // 4:12d}     float     sum      -1 {row} {row}")
    out += ["# Out of bounds values : 0 OK", f"# Avg bus bandwidth    : {total / max(1, len(sizes)):.4f} ", "#", ""]
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
