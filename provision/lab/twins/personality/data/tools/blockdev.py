#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `blockdev --getsize64` for the twin's NVMe drives: inside systemd-nspawn each drive is a regular
file (lab_devices.py), which the real blockdev's ioctl refuses; its size is the file's. Everything else (and any
other device) is the real blockdev."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate

REAL = ("/usr/sbin/blockdev", "/sbin/blockdev")


def main(args: list[str]) -> int:
    if len(args) == 2 and args[0] == "--getsize64":
        drive = labstate.find_drive(labstate.hardware(), args[1])
        if drive is not None and os.path.exists(args[1]):
            sys.stdout.write(f"{os.path.getsize(os.path.realpath(args[1]))}\n")
            return 0
    real = next((p for p in REAL if os.path.exists(p)), None)
    if real is None:
        return labstate.die("blockdev: LAB STAND-IN found no real blockdev", 1)
    os.execv(real, [real, *args])
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
