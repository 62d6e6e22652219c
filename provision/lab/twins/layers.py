"""The read-only layers a twin's root is stacked from: the cached Debian rootfs, then one layer per lab and
factory image with the personality's tools and factory packages (installed once, shared by every twin of the
lab that comes from that image: a server with GPUs comes with its NVIDIA driver, one without does not)."""

from __future__ import annotations

from pathlib import Path

from provision.lab.twins import hooks
from provision.lab.twins.mounts import mount_overlay, remove_tree, unmount_all


def tools_layer(twins_dir: Path, rootfs: Path, image: str = hooks.DEFAULT_IMAGE) -> list[Path]:
    """Build the lab's tools layer of factory `image` over `rootfs`; return the lower layers, topmost first."""
    suffix = "" if image == hooks.DEFAULT_IMAGE else f"-{image}"
    layer, work, merged = (twins_dir / f"tools{suffix}-{part}" for part in ("layer", "work", "merged"))
    remove_tree(layer)
    mount_overlay([rootfs], layer, work, merged)
    try:
        hooks.install_tools(merged, image)
    finally:
        unmount_all(merged)
    remove_tree(merged)
    remove_tree(work)
    return [layer, rootfs]
