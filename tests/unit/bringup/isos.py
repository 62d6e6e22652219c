"""Real ISO 9660 images made with xorriso for the installer-check tests: bootable on UEFI (an El Torito EFI
image, a FAT file system where mkfs.vfat is installed), on BIOS (a no-emulation boot image), on both, or
on neither (a plain data ISO)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

KINDS = ("efi", "bios", "both", "data")
needs_xorriso = pytest.mark.skipif(shutil.which("xorriso") is None, reason="needs xorriso")


def _run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)


def build(home: Path, kind: str) -> Path:
    """The image of `kind` (one of KINDS) under `home`."""
    tree = home / f"{kind}-tree"
    tree.mkdir(parents=True)
    (tree / "readme.txt").write_text("an installer's files\n")
    boot: list[str] = []
    if kind in ("bios", "both"):
        (tree / "bios.bin").write_bytes(b"\xeb\xfe" + bytes(4094))  # jmp $: never run, only catalogued
        boot += ["-b", "bios.bin", "-no-emul-boot", "-boot-load-size", "4"]
    if kind in ("efi", "both"):
        efi = tree / "efi.img"
        efi.write_bytes(bytes(1440 * 1024))
        if shutil.which("mkfs.vfat"):
            _run(["mkfs.vfat", str(efi)])
        boot += (["-eltorito-alt-boot"] if boot else []) + ["-e", "efi.img", "-no-emul-boot"]
    out = home / f"{kind}.iso"
    _run(["xorriso", "-as", "mkisofs", "-quiet", "-R", "-V", kind.upper(), *boot, "-o", str(out), str(tree)])
    return out


@pytest.fixture(scope="session")
def isos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    home = tmp_path_factory.mktemp("isos")
    return {kind: build(home, kind) for kind in KINDS}
