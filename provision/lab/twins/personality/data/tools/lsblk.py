#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `lsblk --nodeps --json`: the simulated server's whole disks (its NVMe drives, hardware.json), not
the lab host's, which a twin sharing the host's /sys would otherwise list (a clean would then look for SATA and
SAS drives the server does not have). Every other call is the real lsblk."""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate

REAL = ("/usr/bin/lsblk", "/bin/lsblk")
COLUMNS = ("name", "tran", "serial", "model", "type", "size")


def _columns(args: list[str]) -> list[str] | None:
    """The -o/--output columns (lower case); None when an option this stand-in does not render is given."""
    cols: list[str] = ["name"]
    it = iter(args)
    for a in it:
        if a in ("-d", "--nodeps", "-J", "--json", "-dJ", "-Jd"):
            continue
        if a in ("-o", "--output"):
            cols = [c.lower() for c in next(it, "").split(",") if c]
        elif a.startswith("--output="):
            cols = [c.lower() for c in a.split("=", 1)[1].split(",") if c]
        else:
            return None
    return cols if all(c in COLUMNS for c in cols) else None


def main(args: list[str]) -> int:
    nodeps = any(a in ("-d", "--nodeps", "-dJ", "-Jd") for a in args)
    json_out = any(a in ("-J", "--json", "-dJ", "-Jd") for a in args)
    cols = _columns(args) if nodeps and json_out else None
    if cols is not None:
        disks = []
        for d in labstate.hardware()["nvme"]:
            row = {"name": d["name"], "tran": "nvme", "serial": d["serial"], "model": d["model"], "type": "disk",
                   "size": str(d["size_bytes"])}
            disks.append({c: row[c] for c in cols})
        sys.stdout.write(json.dumps({"blockdevices": disks}, indent=3) + "\n")
        return 0
    real = next((p for p in REAL if os.path.exists(p)), None)
    if real is None:
        return labstate.die("lsblk: LAB STAND-IN found no real lsblk", 1)
    os.execv(real, [real, *args])
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
