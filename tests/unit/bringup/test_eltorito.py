"""eltorito: from sectors 16-17 and the boot catalog, the platforms an image boots on, on real xorriso
images and on those images with one field broken (each refusal names the image and what is wrong)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from provision.bringup import eltorito
from provision.bringup.eltorito import SECTOR, NotBootable, Platform
from tests.unit.bringup.isos import isos, needs_xorriso

pytestmark = needs_xorriso
__all__ = ["isos"]  # the fixture
W = "installer http://x/i.iso"
BIOS, UEFI = Platform.BIOS, Platform.UEFI


def _parts(image: bytes) -> tuple[bytes, bytes]:
    head = image[16 * SECTOR:18 * SECTOR]
    at = eltorito.descriptors(head, W).catalog_sector * SECTOR
    return head, image[at:at + SECTOR]


@pytest.mark.parametrize(("kind", "platforms"), [
    ("efi", {UEFI}), ("bios", {BIOS}), ("both", {BIOS, UEFI}),
])
def test_xorriso_images_boot_on_their_platforms(isos: dict[str, Path], kind: str, platforms: set[Platform]) -> None:
    image = isos[kind].read_bytes()
    head, catalog = _parts(image)
    assert eltorito.descriptors(head, W).volume_bytes == len(image)
    assert eltorito.platforms(catalog, W).platforms == platforms
    for mode in (None, BIOS, UEFI):
        if mode is None or mode in platforms:
            assert eltorito.check(head, catalog, mode, W).platforms == platforms
        else:
            with pytest.raises(NotBootable, match=f"^{W}: no bootable El Torito entry for {mode.value.upper()} "
                                                  r"\(the catalog boots (BIOS|UEFI)\)$"):
                eltorito.check(head, catalog, mode, W)


def test_a_data_iso_has_no_boot_record(isos: dict[str, Path]) -> None:
    head = isos["data"].read_bytes()[16 * SECTOR:18 * SECTOR]
    with pytest.raises(NotBootable, match=f"^{W}: ISO 9660 but not bootable from CD "
                                          r"\(no El Torito boot record at sector 17\)$"):
        eltorito.descriptors(head, W)


@pytest.mark.parametrize("head", [b"", b"<html><body>404 Not Found</body></html>", bytes(4096),
                                  b"\x01CD002\x01" + bytes(4088)])
def test_not_iso_9660(head: bytes) -> None:
    with pytest.raises(NotBootable, match=rf"^{W}: not an ISO 9660 image \(no primary volume descriptor"):
        eltorito.descriptors(head, W)


def _with(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new):]


def _resum(entry: bytes) -> bytes:
    """The validation entry with its checksum made right again."""
    words = struct.unpack("<16H", _with(entry, 28, b"\0\0"))
    return _with(entry, 28, struct.pack("<H", -sum(words) & 0xFFFF))


def test_the_catalog_pointer_must_lie_inside_the_volume(isos: dict[str, Path]) -> None:
    head, _ = _parts(isos["efi"].read_bytes())
    for sector in (0, 17, 10**6):
        with pytest.raises(NotBootable, match=rf"bad El Torito boot catalog \(its sector {sector} is outside"):
            eltorito.descriptors(_with(head, SECTOR + 0x47, struct.pack("<I", sector)), W)


@pytest.mark.parametrize(("at", "new", "why"), [
    (0, b"\x02", "no validation entry"),
    (30, b"\x55\x55", "no validation entry"),
    (31, b"\x00", "no validation entry"),
    (4, b"X", "validation entry checksum does not sum to 0"),
    (32, b"\x42", r"initial entry indicator 0x42"),
])
def test_a_broken_catalog(isos: dict[str, Path], at: int, new: bytes, why: str) -> None:
    _, catalog = _parts(isos["efi"].read_bytes())
    with pytest.raises(NotBootable, match=rf"^{W}: bad El Torito boot catalog \({why}\)$"):
        eltorito.platforms(_with(catalog, at, new), W)
    with pytest.raises(NotBootable, match="cut short"):
        eltorito.platforms(catalog[:40], W)


def test_platform_and_bootable_indicator_come_from_validation_and_section_headers(isos: dict[str, Path]) -> None:
    _, catalog = _parts(isos["both"].read_bytes())  # validation 0x00 + initial entry, then 0x91 0xEF section
    assert eltorito.platforms(_with(catalog, 32, b"\x00"), W).platforms == {UEFI}  # initial: not bootable
    assert eltorito.platforms(_with(catalog, 96, b"\x00"), W).platforms == {BIOS}  # section entry: not bootable
    assert eltorito.platforms(_with(catalog, 65, b"\x01"), W).platforms == {BIOS}  # the section is PowerPC's
    ppc = _resum(_with(catalog[:32], 1, b"\x01")) + catalog[32:]
    assert eltorito.platforms(ppc, W).platforms == {UEFI}  # the initial entry is PowerPC's
    assert eltorito.platforms(_with(catalog, 64, bytes(32)), W).platforms == {BIOS}  # no sections at all


def test_section_entry_extensions_are_skipped_and_sections_chain(isos: dict[str, Path]) -> None:
    _, catalog = _parts(isos["both"].read_bytes())
    header, entry = catalog[64:96], catalog[96:128]
    ext = b"\x44" + bytes(31)
    bios_hdr = _with(_with(header, 0, b"\x90"), 1, b"\x00")
    chained = catalog[:64] + bios_hdr + ext + entry + header + entry + bytes(SECTOR - 192)
    initial_off = _with(chained, 32, b"\x00")
    assert eltorito.platforms(initial_off, W).platforms == {BIOS, UEFI}
    with pytest.raises(NotBootable, match=r"a section runs past the catalog's sector"):
        eltorito.platforms(catalog[:64] + _with(header, 2, b"\x05") + entry, W)
