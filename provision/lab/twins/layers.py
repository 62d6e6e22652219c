"""The read-only layers a twin's root is stacked from: the cached Debian rootfs, then one layer per lab
with the personality's tools and factory packages (installed once, shared by every twin of the lab)."""

from __future__ import annotations

from pathlib import Path

from provision.lab.twins import hooks
from provision.lab.twins.mounts import mount_overlay, remove_tree, unmount_all


def tools_layer(twins_dir: Path, rootfs: Path) -> list[Path]:
    """Build the lab's tools layer over `rootfs`; return the lower layers for the twins, topmost first."""
    layer, work, merged = twins_dir / "tools-layer", twins_dir / "tools-work", twins_dir / "tools-merged"
    remove_tree(layer)
    mount_overlay([rootfs], layer, work, merged)
    try:
        hooks.install_tools(merged)
    finally:
        unmount_all(merged)
    remove_tree(merged)
    remove_tree(work)
    return [layer, rootfs]
