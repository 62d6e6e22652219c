#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated NVIDIA fabric manager daemon (nv-fabricmanager) for lab twins.

Runs under nvidia-fabricmanager.service. Like the real one it refuses to run when the driver is
missing or its version differs from the fabric manager's, and it exits (the unit fails) while the
fabric_manager_failed fault is set; systemd restarts it, so clearing the fault heals it.
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate

LOG = os.environ.get("PROVISION_LAB_FM_LOG", "/var/log/fabricmanager.log")


def log(message: str) -> None:
    line = f"[{time.strftime('%b %d %Y %H:%M:%S')}] [INFO] [tid {os.getpid()}] {message}\n"
    sys.stdout.write(line)
    sys.stdout.flush()
    try:
        with open(LOG, "a", encoding="utf-8") as fh:
            fh.write(line)
    except OSError:
        pass


def problem() -> str | None:
    own = next((v for v in map(labstate.installed_version, ("nvidia-fabricmanager-550",
                                                             "nvidia-fabricmanager-560")) if v), None)
    driver = labstate.driver_version()
    if labstate.fault("fabric_manager_failed") is not None:
        return "LAB FAULT fabric_manager_failed: NVSwitch training failed, aborting fabric manager"
    if driver is None:
        return "fabric manager failed to open NVIDIA driver: no NVIDIA driver is loaded"
    if own is None or labstate.upstream(own) != driver:
        return (f"fabric manager version {labstate.upstream(own) if own else 'unknown'} is incompatible with "
                f"the loaded NVIDIA driver version {driver}")
    return None


def inputs() -> tuple[tuple[int, int, int] | None, ...]:
    """What problem() is decided from (the faults and the dpkg database), as (inode, mtime, size)."""
    paths = (labstate.state_path("faults.json"), os.path.join(labstate.DPKG_ADMINDIR or "/var/lib/dpkg", "status"))
    found: list[tuple[int, int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            found.append(None)
            continue
        found.append((st.st_ino, st.st_mtime_ns, st.st_size))
    return tuple(found)


def main() -> int:
    seen = inputs()
    why = problem()
    if why:
        log(why)
        return 1
    log(f"Fabric Manager version {labstate.driver_version()} is running (LAB STAND-IN)")
    log("Successfully configured all the available NVSwitches to route GPU NVLink traffic.")
    while True:  # re-checked when the faults or the packages change: a stat every 2 s, no dpkg-query
        time.sleep(2)
        now = inputs()
        if now == seen:
            continue
        seen = now
        why = problem()
        if why:
            log(why)
            return 1


if __name__ == "__main__":
    sys.exit(main())
