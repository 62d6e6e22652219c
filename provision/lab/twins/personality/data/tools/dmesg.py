#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `dmesg` (util-linux 2.38 default layout: `[seconds.micros] message`) of the spec'd server.

A twin shares the lab host's kernel, whose ring buffer says nothing about the simulated GPUs: this
stand-in prints the NVIDIA driver's load lines for the spec'd GPUs and, under the gpu_xid fault, the
Xid line the real driver logs (NVIDIA's documented format, `NVRM: Xid (PCI:dddd:bb:dd): N, ...`).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate


def render(hw: dict) -> str:
    kernel = "6.1.0-27-amd64"
    try:
        with open(labstate.state_path("proc", "sys", "kernel", "osrelease"), encoding="utf-8") as fh:
            kernel = fh.read().strip() or kernel
    except OSError:
        pass
    lines = [(0.0, f"Linux version {kernel} (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) "
                   "12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian")]
    lines.append((0.0, f"Command line: BOOT_IMAGE=/vmlinuz-{kernel} root=/dev/md0 ro quiet"))
    driver = labstate.kernel_module_version()
    if driver:
        lines.append((9.871234, "nvidia: module license 'NVIDIA' taints kernel."))
        lines.append((9.902113, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {driver}"))
    for n, line in enumerate(labstate.xid_lines(hw)):
        lines.append((812.436571 + n, line))
    return "".join(f"[{t:12.6f}] {text}\n" for t, text in lines)


def main(args: list[str]) -> int:
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write("Usage:\n dmesg [options]\n\nLAB STAND-IN (simulated kernel log)\n")
        return 0
    sys.stdout.write(render(labstate.hardware()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
