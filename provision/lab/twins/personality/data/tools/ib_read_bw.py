#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated perftest `ib_read_bw` (4.5) for lab twins: ib_write_bw.py's model, titled RDMA_Read."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ib_write_bw

if __name__ == "__main__":
    sys.exit(ib_write_bw.main(sys.argv[1:], test="Read"))
