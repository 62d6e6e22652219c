#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `lscpu` (util-linux 2.38, Debian 12 layout) presenting the spec'd CPUs."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate


def _ranges(cpu: dict[str, Any], node: int) -> str:
    per, total = cpu["cores_per_socket"], cpu["cores_per_socket"] * cpu["sockets"]
    parts = [f"{node * per}-{node * per + per - 1}"]
    if cpu["threads_per_core"] > 1:
        parts.append(f"{total + node * per}-{total + node * per + per - 1}")
    return ",".join(parts)


def fields(hw: dict[str, Any]) -> list[tuple[str, str]]:
    c = hw["cpu"]
    n = c.get("logical_cpus") or c["sockets"] * c["cores_per_socket"] * c["threads_per_core"]
    cores = c["sockets"] * c["cores_per_socket"]
    out = [
        ("Architecture", "x86_64"), ("CPU op-mode(s)", "32-bit, 64-bit"),
        ("Address sizes", "46 bits physical, 57 bits virtual"), ("Byte Order", "Little Endian"),
        ("CPU(s)", str(n)), ("On-line CPU(s) list", f"0-{n - 1}"), ("Vendor ID", c["vendor_id"]),
        ("BIOS Vendor ID", "Intel(R) Corporation" if c["vendor_id"] == "GenuineIntel"
         else "Advanced Micro Devices, Inc."),
        ("Model name", c["model_name"]), ("BIOS Model name", f"{c['model_name']}  CPU @ {c['base_mhz'] / 1000:.1f}GHz"),
        ("BIOS CPU family", "179"), ("CPU family", str(c["family"])), ("Model", str(c["model"])),
        ("Thread(s) per core", str(c["threads_per_core"])), ("Core(s) per socket", str(c["cores_per_socket"])),
        ("Socket(s)", str(c["sockets"])), ("Stepping", str(c["stepping"])), ("CPU(s) scaling MHz", "100%"),
        ("CPU max MHz", f"{c['max_mhz']}.0000"), ("CPU min MHz", "800.0000"),
        ("BogoMIPS", f"{c['base_mhz'] * 2:.2f}"), ("Flags", " ".join(c["flags"])),
        ("Virtualization", "VT-x"), ("L1d cache", f"{cores * 48 // 1024} MiB ({cores} instances)"),
        ("L1i cache", f"{cores * 32 // 1024} MiB ({cores} instances)"),
        ("L2 cache", f"{cores * 2} MiB ({cores} instances)"),
        ("L3 cache", f"{c['l3_kb_per_socket'] * c['sockets'] // 1024} MiB ({c['sockets']} instances)"),
        ("NUMA node(s)", str(c["sockets"])),
    ]
    out += [(f"NUMA node{i} CPU(s)", _ranges(c, i)) for i in range(c["sockets"])]
    out += [(f"Vulnerability {v}", "Not affected") for v in (
        "Gather data sampling", "Itlb multihit", "L1tf", "Mds", "Meltdown", "Mmio stale data", "Retbleed",
        "Spec rstack overflow")]
    out += [("Vulnerability Spec store bypass", "Mitigation; Speculative Store Bypass disabled via prctl"),
            ("Vulnerability Spectre v1", "Mitigation; usercopy/swapgs barriers and __user pointer sanitization"),
            ("Vulnerability Spectre v2", "Mitigation; Enhanced / Automatic IBRS; IBPB conditional; RSB filling;"
             " PBRSB-eIBRS SW sequence; BHI BHI_DIS_S"),
            ("Vulnerability Srbds", "Not affected"), ("Vulnerability Tsx async abort", "Not affected")]
    return out


def main(args: list[str]) -> int:
    rows = fields(labstate.hardware())
    if "-J" in args or "--json" in args:
        data = {"lscpu": [{"field": k + ":", "data": v} for k, v in rows]}
        sys.stdout.write(json.dumps(data, indent=3) + "\n")
        return 0
    sys.stdout.write("".join(f"{k + ':':<41}{v}\n" for k, v in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
