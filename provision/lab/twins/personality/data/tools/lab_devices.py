#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Present the simulated NVMe drives in a twin's /dev (run at boot and whenever faults.json changes).

SIMULATED: inside systemd-nspawn /dev is a tmpfs without the host's disks. Each drive of
hardware.json is a sparse 64 MiB regular file under /var/lib/provision-lab/disks/ (made on the
host by prepare_node; made here if missing); /dev/nvmeXn1 is a symlink to it and
/dev/disk/by-id/nvme-<model>_<serial> links to ../../nvmeXn1, as udev would. blkid, wipefs and
mkfs really work on those files. A drive hit by scratch_drive_missing disappears from /dev.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate

DEV = os.environ.get("PROVISION_LAB_DEV", "/dev")
DISK_BYTES = 64 * 1024 * 1024


def _link(target: str, path: str) -> None:
    if os.path.islink(path) and os.readlink(path) == target:
        return
    if os.path.lexists(path):
        os.remove(path)
    os.symlink(target, path)


def sync() -> None:
    hw = labstate.hardware()
    present = {d["name"] for d in labstate.present_drives(hw)}
    by_id = os.path.join(DEV, "disk", "by-id")
    os.makedirs(by_id, exist_ok=True)
    for d in hw["nvme"]:
        backing = labstate.state_path("disks", d["name"])
        node, alias = os.path.join(DEV, d["name"]), os.path.join(by_id, d["by_id"])
        if d["name"] not in present:
            for path in (node, alias):
                if os.path.lexists(path):
                    os.remove(path)
            continue
        if not os.path.exists(backing):
            os.makedirs(os.path.dirname(backing), exist_ok=True)
            with open(backing, "wb") as fh:
                fh.truncate(DISK_BYTES)
        _link(backing, node)
        _link(f"../../{d['name']}", alias)


if __name__ == "__main__":
    sync()
