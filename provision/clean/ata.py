"""SATA and SAS drives for a clean: how they are listed (lsblk), what they can erase with (hdparm -I's security
section, sg_opcodes' SANITIZE service actions), the commands that erase them. Parsers pure, tested on text as
the tools print it (tests/unit/test_clean_ata.py).

ATA security erase sets a user password, then erases with it (ATA8-ACS SECURITY ERASE UNIT); the erase clears
the password again. The password is a fixed, published throwaway (ERASE_PASSWORD), not a secret: it guards
nothing, and it is what an operator needs should the drive lose power mid-erase (hdparm --security-disable).
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict

from provision.clean.model import Bus, DriveCaps, EraseMethod
from provision.clean.nvme import q
from provision.errors import ParseError

LIST_COMMAND = "lsblk -d -J -o NAME,TRAN,SERIAL,MODEL,TYPE"
TOOL_LIST = "lsblk -d -J"
TOOL_HDPARM = "hdparm -I"
TOOL_OPCODES = "sg_opcodes"
ERASE_PASSWORD = "provision-erase"  # a published throwaway, see the module docstring


class BusDrive(BaseModel):
    """A SATA or SAS whole disk as lsblk lists it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str
    bus: Bus
    serial: str
    model: str = ""


def parse_lsblk(text: str) -> tuple[BusDrive, ...]:
    """`lsblk -d -J -o NAME,TRAN,SERIAL,MODEL,TYPE`: the disks on a SATA or SAS transport (NVMe namespaces
    come from `nvme list`; other transports, partitions and virtual disks are no drive of this kind)."""
    try:
        root = json.loads(text or "{}")
    except ValueError:
        raise ParseError(TOOL_LIST, "not JSON") from None
    devices = root.get("blockdevices") if isinstance(root, dict) else None
    if not isinstance(devices, list):
        raise ParseError(TOOL_LIST, "no blockdevices list")
    out = []
    for d in devices:
        if not isinstance(d, dict) or d.get("type") != "disk":
            continue
        tran = str(d.get("tran") or "").lower()
        if tran not in (Bus.SATA.value, Bus.SAS.value):
            continue
        name = str(d.get("name") or "")
        if not name:
            raise ParseError(TOOL_LIST, f"a {tran} disk without a name")
        out.append(BusDrive(device=name if name.startswith("/dev/") else f"/dev/{name}", bus=Bus(tran),
                            serial=str(d.get("serial") or "").strip(), model=str(d.get("model") or "").strip()))
    return tuple(out)


def hdparm_command(device: str) -> str:
    return f"hdparm -I {q(device)}"


def parse_hdparm_security(text: str) -> DriveCaps:
    """The "Security:" section of `hdparm -I`: "supported", "[not] enabled", "[not] frozen", "[not] supported:
    enhanced erase". A drive whose output has no such section supports no ATA security erase."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == "Security:"), None)
    if start is None:
        return DriveCaps()
    said: set[str] = set()
    for line in lines[start + 1:]:
        if line and not line[0].isspace():
            break
        said.add(" ".join(line.split()))
    if "supported" not in said:
        return DriveCaps()
    return DriveCaps(ata_security=True, ata_enhanced="supported: enhanced erase" in said,
                     ata_frozen="frozen" in said, ata_enabled="enabled" in said)


def opcodes_command(device: str) -> str:
    return f"sg_opcodes --no-inquiry {q(device)}"


_SANITIZE = re.compile(r"^\s*48\s+(?:0x)?([0-9a-f]+)\s+(?:\d+\s+)?Sanitize,", re.IGNORECASE)
"""A SANITIZE line: opcode, service action, the CDB size (sg3_utils 1.45 and later print it), the name."""


def parse_sg_opcodes(text: str) -> DriveCaps:
    """`sg_opcodes`: the SANITIZE (opcode 48h) service actions the drive reports (2 block erase, 3 cryptographic
    erase; overwrite is not used: it is the slowest and proves nothing the other two do not)."""
    actions = {int(m[1], 16) for line in text.splitlines() if (m := _SANITIZE.match(line))}
    return DriveCaps(scsi_sanitize_block=2 in actions, scsi_sanitize_crypto=3 in actions)


def erase_command(method: EraseMethod, device: str) -> str:
    """The one command that erases a SATA or SAS drive (both block until the drive is done)."""
    dev = q(device)
    if method.is_ata:
        flag = "--security-erase-enhanced" if method is EraseMethod.ATA_ERASE_ENHANCED else "--security-erase"
        return (f"hdparm --user-master u --security-set-pass {ERASE_PASSWORD} {dev} && "
                f"hdparm --user-master u {flag} {ERASE_PASSWORD} {dev}")
    if method is EraseMethod.SCSI_SANITIZE_CRYPTO:
        return f"sg_sanitize --quick --crypto {dev}"
    if method is EraseMethod.SCSI_SANITIZE_BLOCK:
        return f"sg_sanitize --quick --block {dev}"
    raise ValueError(f"{method.value} is no SATA or SAS erase")
