"""The VM's initramfs: busybox, the kernel modules the cloud kernel needs to reach its root, and an init
that loads them, mounts the ext4 root, lays this run's files over it and switch_roots into systemd.

Written as a newc cpio archive by Python (no host cpio needed); gzip-compressed.
"""

from __future__ import annotations

import gzip
import os
import stat
from pathlib import Path

# Load order matters: insmod resolves no dependencies. ext4 is built into the cloud kernel.
MODULES = (
    "virtio", "virtio_ring", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci",
    "virtio_blk", "failover", "net_failover", "virtio_net", "md-mod", "raid1",
)  # fmt: skip
ROOT_SERIAL = "provision-root"  # the root disk is found by its virtio serial, whatever its name
INIT = f"""#!/bin/busybox sh
# provision VM init: load the modules, mount the root, lay this run's files over it, start systemd.
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
echo 1 > /proc/sys/kernel/printk
for m in {' '.join(MODULES)}; do insmod /lib/modules/$m.ko || echo "provision-vm: insmod $m failed"; done
root=; i=0
while [ -z "$root" ] && [ $i -lt 100 ]; do
  for s in /sys/block/vd*/serial; do [ "$(cat "$s" 2>/dev/null)" = {ROOT_SERIAL} ] && root=${{s%/serial}}; done
  [ -z "$root" ] && sleep 0.1; i=$((i+1))
done
mkdir -p /newroot
if ! mount -t ext4 -o rw "/dev/${{root##*/}}" /newroot; then echo "provision-vm: cannot mount the root"; poweroff -f; fi
[ -d /inject ] && cp -a /inject/. /newroot/
umount /proc /sys /dev
echo "provision-vm: switching to the root filesystem"
exec switch_root /newroot /sbin/init
"""


def module_files(modules_dir: Path) -> dict[str, Path]:
    """name -> .ko path for MODULES under the kernel's /lib/modules/<version>."""
    found = {p.name[:-3]: p for p in modules_dir.rglob("*.ko") if p.name[:-3] in MODULES}
    missing = [m for m in MODULES if m not in found]
    if missing:
        from provision.errors import LabError

        raise LabError(f"kernel modules missing from {modules_dir}: {', '.join(missing)}")
    return found


def build(out: Path, busybox: Path, modules_dir: Path, inject: Path | None = None) -> Path:
    """Write the initramfs to `out`; `inject` (a tree) is copied over the root at boot."""
    writer = _Newc()
    for d in ("bin", "dev", "proc", "sys", "newroot", "lib", "lib/modules"):
        writer.directory(d)
    writer.file("bin/busybox", busybox.read_bytes(), 0o755)
    writer.file("init", INIT.encode(), 0o755)
    for name, path in module_files(modules_dir).items():
        writer.file(f"lib/modules/{name}.ko", path.read_bytes(), 0o644)
    if inject is not None:
        writer.tree(inject, "inject")
    out.write_bytes(gzip.compress(writer.finish(), compresslevel=1))
    return out


class _Newc:
    """A minimal writer of the cpio 'newc' format the kernel unpacks."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.ino = 1

    def _entry(self, name: str, mode: int, data: bytes = b"", uid: int = 0, gid: int = 0) -> None:
        encoded = name.encode() + b"\0"
        fields = [self.ino, mode, uid, gid, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0]
        header = b"070701" + b"".join(f"{v:08x}".encode() for v in fields)
        self.ino += 1
        self.parts.append(_pad(header + encoded) + _pad(data))

    def directory(self, name: str, mode: int = 0o755, uid: int = 0, gid: int = 0) -> None:
        self._entry(name, stat.S_IFDIR | mode, uid=uid, gid=gid)

    def file(self, name: str, data: bytes, mode: int, uid: int = 0, gid: int = 0) -> None:
        self._entry(name, stat.S_IFREG | mode, data, uid, gid)

    def tree(self, src: Path, prefix: str) -> None:
        """Add `src` as `prefix`, keeping modes and owners (regular files, directories, symlinks)."""
        for dirpath, dirnames, filenames in os.walk(src):
            rel = Path(dirpath).relative_to(src)
            info = os.lstat(dirpath)
            self.directory(str(Path(prefix) / rel), stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid)
            dirnames.sort()
            for fname in sorted(filenames):
                path = Path(dirpath) / fname
                info = os.lstat(path)
                name = str(Path(prefix) / rel / fname)
                if stat.S_ISLNK(info.st_mode):
                    self._entry(name, info.st_mode, os.readlink(path).encode(), info.st_uid, info.st_gid)
                elif stat.S_ISREG(info.st_mode):
                    self.file(name, path.read_bytes(), stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid)

    def finish(self) -> bytes:
        self._entry("TRAILER!!!", 0)
        return b"".join(self.parts)


def _pad(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)
