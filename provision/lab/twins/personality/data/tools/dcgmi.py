#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `dcgmi` (DCGM 3.3) for lab twins: `diag -r 1..4 [-j]`, `discovery -l`, `--version`.
Needs nvidia-dcgm.service active (as the real one needs nv-hostengine). Faults change results:
gpu_missing (7 device ids), nvlink_down (PCIe/NVLink test fails), fabric_manager_failed (CUDA
cannot initialise)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate

NO_ENGINE = ("Error: unable to establish a connection to the specified host: localhost\n"
             "Error: Unable to connect to host engine. Host engine connection invalid/disconnected.\n")
RULE = "+---------------------------+------------------------------------------------+"


def _version() -> str:
    return labstate.upstream(labstate.installed_version("datacenter-gpu-manager") or "1:3.3.9")


def results(level: int) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """Sections of a diag run: (section, [(test, result, warning)])."""
    hw = labstate.hardware()
    driver = labstate.driver_version()
    gpus = labstate.visible_gpus(hw)
    ids = ",".join(g["device_id"][2:6].lower() for g in gpus)
    cuda_ok = not hw.get("gpu_fabric") or (driver is not None and labstate.fabric_manager_ok(driver))
    persist = labstate.service_active("nvidia-persistenced.service")
    cuda = ("Pass", "") if cuda_ok else (
        "Fail", "cuInit failed: system not yet initialized (CUDA error 802); is nvidia-fabricmanager running?")
    meta = [("DCGM Version", _version(), ""), ("Driver Version Detected", driver or "N/A", ""),
            ("GPU Device IDs Detected", ids, "")]
    deploy = [("Denylist", "Pass", ""), ("NVML Library", "Pass", ""), ("CUDA Main Library", *cuda),
              ("Permissions and OS Blocks", "Pass", ""),
              ("Persistence Mode", "Pass" if persist else "Warn",
               "" if persist else "Persistence mode for GPU 0 is disabled. Enable persistence mode."),
              ("Environment Variables", "Pass", ""), ("Page Retirement/Row Remap", "Pass", ""),
              ("Graphics Processes", "Pass", ""), ("Inforom", "Pass", "")]
    sections = [("Metadata", meta), ("Deployment", deploy)]
    if level >= 2:
        down = labstate.fault("nvlink_down")
        if down:
            bad = next((i for i, g in enumerate(gpus) if g["index"] == int(down["gpu"])), None)
            others = ", ".join(str(i) for i in range(len(gpus)) if i != bad)
            sections.append(("Integration", [("PCIe", f"Pass - GPUs: {others}", ""),
                                             ("", f"Fail - GPU: {bad}",
                                              f"GPU {bad} NvLink link {down['link']} is currently down.")]))
        else:
            sections.append(("Integration", [("PCIe", "Pass - All" if cuda_ok else "Skip - All", "")]))
        hardware = [("GPU Memory", "Pass - All" if cuda_ok else "Skip - All", "")]
        if level >= 3:
            hardware.append(("Diagnostic", "Pass - All" if cuda_ok else "Skip - All", ""))
        sections.append(("Hardware", hardware))
    if level >= 3:
        stress = [(t, "Pass - All" if cuda_ok else "Skip - All", "")
                  for t in ("Targeted Stress", "Targeted Power", "Memory Bandwidth")]
        if level >= 4:
            stress += [("Memtest", "Pass - All" if cuda_ok else "Skip - All", ""),
                       ("Pulse Test", "Pass - All" if cuda_ok else "Skip - All", "")]
        sections.append(("Stress", [*stress, ("EUD Test", "Skip - All", "")]))
    return sections


def _row(name: str, value: str) -> list[str]:
    chunks = textwrap.wrap(value, 46) or [""]
    return [f"| {name if i == 0 else '':<25} | {c:<46} |" for i, c in enumerate(chunks)]


def render_table(sections: list[tuple[str, list[tuple[str, str, str]]]]) -> str:
    out = ["Successfully ran diagnostic for group.", RULE,
           "| Diagnostic                | Result                                         |",
           "+===========================+================================================+"]
    for n, (title, rows) in enumerate(sections):
        label = f"-----  {title}  "
        if n < 2:
            out.append(f"|{label:-<27}+{'':-<48}|")
        else:
            out.append(f"+{label:-<27}+{'':-<48}+")
        for name, result, warning in rows:
            out += _row(name, result)
            if warning:
                out += _row("Warning", warning)
    out.append(RULE)
    return "\n".join(out) + "\n"


def render_json(sections: list[tuple[str, list[tuple[str, str, str]]]], level: int) -> str:
    categories = []
    for title, rows in sections[1:]:
        tests = []
        for name, result, warning in rows:
            entry: dict[str, Any] = {"name": name, "results": [{"status": result.split(" - ")[0]}]}
            if warning:
                entry["results"][0]["warnings"] = [{"warning": warning}]
            tests.append(entry)
        categories.append({"category": title, "tests": tests})
    meta = {k: v for k, v, _ in sections[0][1]}
    doc = {"DCGM GPU Diagnostic": {"test_categories": categories},
           "version": meta["DCGM Version"], "Driver Version Detected": meta["Driver Version Detected"],
           "GPU Device IDs": meta["GPU Device IDs Detected"].split(","), "runLevel": level}
    return json.dumps(doc, indent=4) + "\n"


def main(args: list[str]) -> int:
    if args[:1] in (["--version"], ["-v"]):
        sys.stdout.write(f"dcgmi  version: {_version()} (LAB STAND-IN)\n")
        return 0
    if not labstate.service_active("nvidia-dcgm.service"):
        sys.stdout.write(NO_ENGINE)
        return 255
    if args[:1] == ["discovery"]:
        gpus = labstate.visible_gpus(labstate.hardware())
        lines = [f"{len(gpus)} GPU{'s' if len(gpus) != 1 else ''} found.", "+--------+" + "-" * 66 + "+",
                 "| GPU ID | Device Information" + " " * 48 + "|", "+--------+" + "-" * 66 + "+"]
        for i, g in enumerate(gpus):
            lines += [f"| {i:<6} | Name: {g['name']:<60}|", f"|        | PCI Bus ID: {g['bus_id']:<54}|",
                      f"|        | Device UUID: {g['uuid']:<53}|", "+--------+" + "-" * 66 + "+"]
        sys.stdout.write("\n".join(lines) + "\n")
        return 0
    if args[:1] != ["diag"]:
        labstate.die("dcgmi: LAB STAND-IN supports: diag -r N [-j], discovery -l, --version", 2)
    level = 1
    for i, a in enumerate(args):
        if a in ("-r", "--run") and i + 1 < len(args):
            level = {"short": 1, "medium": 2, "long": 3, "xlong": 4}.get(args[i + 1], 0) or int(args[i + 1])
    if labstate.driver_version() is None:
        sys.stdout.write("Error: Unable to complete diagnostic for group 2147483647. Return: (-3) "
                         "NVML library not found or failed to load.\n")
        return 226
    sections = results(level)
    sys.stdout.write(render_json(sections, level) if "-j" in args or "--json" in args else render_table(sections))
    failed = any(r.startswith("Fail") for _t, rows in sections for _n, r, _w in rows)
    return 226 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
