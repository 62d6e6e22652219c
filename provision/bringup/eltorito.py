"""Whether an ISO 9660 image boots from a (virtual) CD, and on which firmware: pure, from a few sectors.

What a host's firmware reads to boot a CD (ISO 9660; the "El Torito" Bootable CD-ROM Format
Specification 1.0, Phoenix/IBM 1995; UEFI spec, "ISO-9660 and El Torito"), sectors of 2048 bytes:

    sector 16       the Primary Volume Descriptor: type 1, "CD001", version 1; the volume's size in
                    logical blocks (LE word at 80) and the block size (LE half at 128)
    sector 17       the Boot Record Volume Descriptor: type 0, "CD001", version 1, "EL TORITO SPECIFICATION"
                    (zero padded) at 7, the boot catalog's first sector (LE word at 0x47)
    boot catalog    32-byte entries: the validation entry (header 0x01, platform, checksum: the 16-bit LE
                    words of the entry sum to 0, key bytes 0x55 0xAA at 30); the initial/default entry
                    (boot indicator 0x88: bootable, 0x00: not; for the validation entry's platform); then
                    sections: a header (0x90, or 0x91 for the last) naming a platform and how many entries
                    follow, each a section entry (0x88 / 0x00) or a section entry extension (0x44)

Platform 0x00 is 80x86 (a BIOS boots it), 0xEF an EFI system partition (UEFI boots it). An image whose
only bootable entries are for other platforms (PowerPC, Mac) boots neither.
"""

from __future__ import annotations

import struct
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from provision.errors import ProvisionError

SECTOR = 2048
PVD_SECTOR = 16
BOOT_RECORD_SECTOR = 17
ENTRY = 32
STANDARD_ID = b"CD001"
EL_TORITO = b"EL TORITO SPECIFICATION"
BOOTABLE = 0x88
NOT_BOOTABLE = 0x00
MORE_HEADERS, LAST_HEADER, EXTENSION = 0x90, 0x91, 0x44


class Platform(StrEnum):
    BIOS = "bios"
    UEFI = "uefi"


PLATFORM_IDS = {0x00: Platform.BIOS, 0xEF: Platform.UEFI}


class NotBootable(ProvisionError):
    """The image is not one a host boots from CD (names the URL and what is wrong)."""


class Descriptors(BaseModel):
    """What sectors 16-17 say: the volume's size and where the boot catalog is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    volume_bytes: int
    catalog_sector: int


class Bootable(BaseModel):
    """The platforms whose firmware finds a bootable entry in the catalog."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    platforms: frozenset[Platform]

    def boots(self, mode: Platform | None) -> bool:
        """On a host in boot `mode` (None: either)."""
        return bool(self.platforms) if mode is None else mode in self.platforms


def _descriptor(data: bytes, sector: int) -> bytes:
    return data[(sector - PVD_SECTOR) * SECTOR:(sector - PVD_SECTOR + 1) * SECTOR]


def descriptors(data: bytes, where: str) -> Descriptors:
    """From sectors 16 and 17 (`data` starts at byte 16 * 2048); `where` names the image in messages."""
    pvd = _descriptor(data, PVD_SECTOR)
    if len(pvd) < SECTOR or pvd[0] != 1 or pvd[1:6] != STANDARD_ID or pvd[6] != 1:
        raise NotBootable(f"{where}: not an ISO 9660 image (no primary volume descriptor at sector 16)")
    blocks, block = struct.unpack_from("<I", pvd, 80)[0], struct.unpack_from("<H", pvd, 128)[0]
    brvd = _descriptor(data, BOOT_RECORD_SECTOR)
    if len(brvd) < SECTOR or brvd[0] != 0 or brvd[1:6] != STANDARD_ID or \
            brvd[7:39] != EL_TORITO.ljust(32, b"\0"):
        raise NotBootable(f"{where}: ISO 9660 but not bootable from CD (no El Torito boot record at sector 17)")
    catalog = struct.unpack_from("<I", brvd, 0x47)[0]
    if catalog <= BOOT_RECORD_SECTOR or (blocks and catalog >= blocks * block // SECTOR):
        raise NotBootable(f"{where}: bad El Torito boot catalog (its sector {catalog} is outside the volume)")
    return Descriptors(volume_bytes=blocks * block, catalog_sector=catalog)


def _validation(entry: bytes, where: str) -> int:
    """The validation entry's platform id."""
    words = struct.unpack("<16H", entry)
    if entry[0] != 0x01 or entry[30:32] != b"\x55\xaa":
        raise NotBootable(f"{where}: bad El Torito boot catalog (no validation entry)")
    if sum(words) & 0xFFFF:
        raise NotBootable(f"{where}: bad El Torito boot catalog (validation entry checksum does not sum to 0)")
    return entry[1]


def platforms(catalog: bytes, where: str) -> Bootable:
    """The platforms with a bootable entry in the boot catalog (`catalog` starts at its first sector)."""
    entries = [catalog[i:i + ENTRY] for i in range(0, len(catalog) - ENTRY + 1, ENTRY)]
    if len(entries) < 2:
        raise NotBootable(f"{where}: bad El Torito boot catalog (cut short: {len(catalog)} bytes)")
    found: set[Platform] = set()
    platform = _validation(entries[0], where)
    default = entries[1]
    if default[0] not in (BOOTABLE, NOT_BOOTABLE):
        raise NotBootable(f"{where}: bad El Torito boot catalog (initial entry indicator {default[0]:#04x})")
    if default[0] == BOOTABLE and platform in PLATFORM_IDS:
        found.add(PLATFORM_IDS[platform])
    found |= _sections(entries[2:], where)
    return Bootable(platforms=frozenset(found))


def _sections(entries: list[bytes], where: str) -> set[Platform]:
    """The platforms of bootable section entries; the sections end after the last header's entries (or
    at an entry that is no header: a catalog without sections)."""
    found: set[Platform] = set()
    i = 0
    while i < len(entries) and entries[i][0] in (MORE_HEADERS, LAST_HEADER):
        header = entries[i]
        count = struct.unpack_from("<H", header, 2)[0]
        i += 1
        while count and i < len(entries):
            entry = entries[i]
            i += 1
            if entry[0] == EXTENSION:  # more selection criteria for the entry before: no boot image
                continue
            if entry[0] == BOOTABLE and header[1] in PLATFORM_IDS:
                found.add(PLATFORM_IDS[header[1]])
            count -= 1
        if count:
            raise NotBootable(f"{where}: bad El Torito boot catalog (a section runs past the catalog's sector)")
        if header[0] == LAST_HEADER:
            break
    return found


def check(data: bytes, catalog: bytes, mode: Platform | None, where: str) -> Bootable:
    """Sectors 16-17 and the catalog's sector -> the platforms; raises NotBootable when none is `mode`."""
    descriptors(data, where)
    found = platforms(catalog, where)
    if not found.boots(mode):
        has = ", ".join(sorted(p.value.upper() for p in found.platforms)) or "on no platform"
        need = mode.value.upper() if mode is not None else "BIOS or UEFI"
        raise NotBootable(f"{where}: no bootable El Torito entry for {need} (the catalog boots {has})")
    return found
