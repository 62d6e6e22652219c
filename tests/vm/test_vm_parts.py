"""Fast checks of the VM builder's pure parts (no qemu, no root): the initramfs archive and apt's plan."""

from __future__ import annotations

import gzip
import os
import stat
from pathlib import Path

import pytest

from provision.errors import LabError
from provision.lab.vm import debs, initrd


def read_newc(data: bytes) -> dict[str, tuple[int, int, bytes]]:
    """name -> (mode, uid, data) of a newc cpio archive (what the kernel unpacks)."""
    entries, pos = {}, 0
    while True:
        assert data[pos : pos + 6] == b"070701", f"bad magic at {pos}"
        fields = [int(data[pos + 6 + 8 * i : pos + 14 + 8 * i], 16) for i in range(13)]
        mode, uid, size, namesize = fields[1], fields[2], fields[6], fields[11]
        name = data[pos + 110 : pos + 110 + namesize - 1].decode()
        pos += 110 + namesize
        pos += -pos % 4
        body = data[pos : pos + size]
        pos += size + (-size % 4)
        if name == "TRAILER!!!":
            return entries
        entries[name] = (mode, uid, body)


def fake_modules(tmp_path: Path, skip: str = "") -> Path:
    mods = tmp_path / "modules"
    for name in initrd.MODULES:
        if name != skip:
            sub = mods / "kernel" / name
            sub.mkdir(parents=True)
            (sub / f"{name}.ko").write_bytes(name.encode())
    return mods


def test_initramfs_holds_init_busybox_modules_and_the_injected_tree(tmp_path: Path) -> None:
    busybox = tmp_path / "busybox"
    busybox.write_bytes(b"\x7fELF busybox")
    inject = tmp_path / "inject"
    (inject / "root/.ssh").mkdir(parents=True)
    key = inject / "root/.ssh/authorized_keys"
    key.write_text("ssh-ed25519 AAAA test\n")
    key.chmod(0o600)
    (inject / "etc").mkdir()
    os.symlink("/dev/null", inject / "etc/masked.service")
    out = initrd.build(tmp_path / "initrd.gz", busybox, fake_modules(tmp_path), inject)
    entries = read_newc(gzip.decompress(out.read_bytes()))
    mode, _, body = entries["init"]
    assert stat.S_ISREG(mode) and mode & 0o111 and body.startswith(b"#!/bin/busybox sh")
    assert entries["bin/busybox"][2] == b"\x7fELF busybox"
    assert [n for n in initrd.MODULES if f"lib/modules/{n}.ko" not in entries] == []
    mode, uid, body = entries["inject/root/.ssh/authorized_keys"]
    assert stat.S_IMODE(mode) == 0o600 and uid == os.getuid() and body == b"ssh-ed25519 AAAA test\n"
    mode, _, body = entries["inject/etc/masked.service"]
    assert stat.S_ISLNK(mode) and body == b"/dev/null"


def test_init_loads_every_module_and_finds_the_root_by_serial() -> None:
    assert " ".join(initrd.MODULES) in initrd.INIT
    assert initrd.ROOT_SERIAL in initrd.INIT and "switch_root /newroot /sbin/init" in initrd.INIT


def test_a_missing_kernel_module_is_a_lab_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(LabError, match="raid1"):
        initrd.module_files(fake_modules(tmp_path, skip="raid1"))


def test_apt_simulation_lines_become_name_and_version() -> None:
    lines = [
        "Inst udev (252.39-1~deb12u2 Debian:12.15/oldstable [amd64])",
        "Inst libc6 [2.36-9] (2.36-9+deb12u14 Debian:12.15/oldstable [amd64])",
        "Conf udev (252.39-1~deb12u2 Debian:12.15/oldstable [amd64])",
    ]
    found = [m.groups() for m in (debs._INST.match(line) for line in lines) if m]
    assert found == [("udev", "252.39-1~deb12u2"), ("libc6", "2.36-9+deb12u14")]


def test_pool_file_names_escape_the_epoch() -> None:
    assert debs.deb_file_name("busybox-static", "1:1.35.0-4") == "busybox-static_1%3a1.35.0-4_*.deb"
