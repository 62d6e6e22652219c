#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Pick the kernel a twin boots: the newest installed linux-image-<release> stand-in (run at boot).

SIMULATED: writes the release to $PROVISION_LAB_STATE/proc/sys/kernel/osrelease in place; that file
is bind-mounted over /proc/sys/kernel/osrelease. With no kernel package installed it is left as is.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate

_IMAGE = re.compile(r"^linux-image-(\d+\.\d+\.\d+-\d+-[a-z0-9]+)$")


def installed_kernels() -> list[str]:
    cmd = ["dpkg-query", "-W", "-f=${db:Status-Abbrev} ${Package}\\n", "linux-image-*"]
    if labstate.DPKG_ADMINDIR:
        cmd.insert(1, f"--admindir={labstate.DPKG_ADMINDIR}")
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    releases = []
    for line in done.stdout.splitlines():
        status, _, package = line.partition(" ")
        match = _IMAGE.match(package.strip())
        if status[1:2] == "i" and match:  # "ii" installed, "hi" installed and held
            releases.append(match[1])
    return releases


def _key(release: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", release))


def main() -> int:
    kernels = installed_kernels()
    if not kernels:
        return 0
    path = labstate.state_path("proc", "sys", "kernel", "osrelease")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "r+" if os.path.exists(path) else "w", encoding="utf-8") as fh:
        fh.write(max(kernels, key=_key) + "\n")
        fh.truncate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
