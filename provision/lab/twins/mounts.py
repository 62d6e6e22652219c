"""Mounts the twins make on the host: the per-twin overlay root, and safe removal of trees."""

from __future__ import annotations

import shutil
from pathlib import Path

from provision.errors import LabError
from provision.lab.twins._cmd import ok, run


def mounts_under(path: Path) -> list[Path]:
    """Mount points at or below `path`, deepest first (from /proc/self/mountinfo)."""
    base = str(path.resolve())
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = _unescape(line.split()[4])
        if point == base or point.startswith(base.rstrip("/") + "/"):
            found.append(Path(point))
    return sorted(set(found), key=lambda p: len(p.parts), reverse=True)


def _unescape(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def unmount_all(path: Path) -> None:
    """Unmount everything at or below `path`; lazily when busy. Raise LabError if something stays."""
    for point in mounts_under(path):
        if not ok(["umount", str(point)]):
            ok(["umount", "-l", str(point)])
    left = mounts_under(path)
    if left:
        raise LabError(f"cannot unmount {left[0]}")


def remove_tree(path: Path) -> None:
    """Remove a directory tree, never descending into something still mounted."""
    if not path.exists():
        return
    unmount_all(path)
    shutil.rmtree(path)


def mount_overlay(lower: list[Path], upper: Path, work: Path, target: Path) -> None:
    """Mount a persistent overlay of the read-only `lower` layers (topmost first) with `upper` on top."""
    for d in (upper, work, target):
        d.mkdir(parents=True, exist_ok=True)
    if mounts_under(target) and target in mounts_under(target):
        return
    opts = f"lowerdir={':'.join(str(p) for p in lower)},upperdir={upper},workdir={work}"
    run(["mount", "-t", "overlay", "overlay", "-o", opts, str(target)])
