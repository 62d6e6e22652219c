"""One cgroup per twin: everything the twin runs lands in it, so teardown can kill it all at once.

The supervisor joins <v2 root>/provision-lab/pl-nodeNN; on hybrid hosts systemd-nspawn mirrors the tree
into the name=systemd v1 hierarchy, so removal covers every hierarchy that holds the twin's group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from provision.errors import LabError

CGROUP_FS = Path("/sys/fs/cgroup")
V2_CANDIDATES = (CGROUP_FS, CGROUP_FS / "unified")
LAB_GROUP = "provision-lab"


def _is_v2(root: Path) -> bool:
    return (root / "cgroup.procs").exists() and (root / "cgroup.subtree_control").exists()


def v2_root() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (pure v2 or hybrid), or None."""
    return next((root for root in V2_CANDIDATES if _is_v2(root)), None)


def path_for(name: str) -> Path | None:
    """The v2 group a twin's supervisor joins."""
    root = v2_root()
    return root / LAB_GROUP / name if root else None


def groups_for(name: str) -> list[Path]:
    """Every existing group of this twin, in any hierarchy."""
    roots = [CGROUP_FS, *(p for p in CGROUP_FS.iterdir() if p.is_dir())] if CGROUP_FS.is_dir() else []
    return [root / LAB_GROUP / name for root in roots if (root / LAB_GROUP / name / "cgroup.procs").exists()]


def pids(group: Path) -> list[int]:
    """Every pid in `group` and its sub-groups."""
    found: list[int] = []
    for procs in group.rglob("cgroup.procs") if group.is_dir() else []:
        with contextlib.suppress(OSError):
            found += [int(p) for p in procs.read_text().split()]
    return found


def kill(name: str, timeout: float = 10) -> None:
    """Kill every process of the twin `name`, wait for them to go, then remove its groups."""
    groups = groups_for(name)
    for group in groups:
        if (group / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (group / "cgroup.kill").write_text("1\n")
    for group in groups:
        _kill_remaining(group, timeout)
        _remove(group)


def _kill_remaining(group: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while pids(group):
        for pid in pids(group):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise LabError(f"processes left in cgroup {group}: {pids(group)[:5]}")
        time.sleep(0.1)


def _remove(group: Path) -> None:
    subs = sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
    for sub in [*subs, group]:
        with contextlib.suppress(OSError):
            sub.rmdir()
    with contextlib.suppress(OSError):
        group.parent.rmdir()  # provision-lab/ goes when no other twin uses it
    if group.exists():
        raise LabError(f"cannot remove cgroup {group}")
