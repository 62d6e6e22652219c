"""SATA and SAS drives in a clean: the method per capability and level (a frozen drive, one with a stranger's
password, one that lists nothing), the parsers of lsblk, hdparm -I and sg_opcodes as the tools print them, the
commands, and the partition-to-disk rule that keeps a SATA boot mirror out of the erase."""

from __future__ import annotations

import json

import pytest

from provision.clean import ata
from provision.clean.disks import whole_disk
from provision.clean.model import Bus, CleanLevel, Drive, DriveCaps, EraseMethod
from provision.clean.plan import choose_method, why_unerasable
from provision.errors import ParseError

S, E = CleanLevel.SANITIZE, CleanLevel.ERASE
ATA = DriveCaps(ata_security=True)
ATA_ENH = DriveCaps(ata_security=True, ata_enhanced=True)
FROZEN = DriveCaps(ata_security=True, ata_enhanced=True, ata_frozen=True)
LOCKED = DriveCaps(ata_security=True, ata_enabled=True)
SAS = DriveCaps(scsi_sanitize_crypto=True, scsi_sanitize_block=True)
SAS_BLOCK = DriveCaps(scsi_sanitize_block=True)


@pytest.mark.parametrize(("caps", "level", "method"), [
    (ATA_ENH, S, EraseMethod.ATA_ERASE_ENHANCED),
    (ATA_ENH, E, EraseMethod.ATA_ERASE_ENHANCED),
    (ATA, S, EraseMethod.ATA_ERASE),
    (FROZEN, S, None),  # frozen: no security command is taken, never "cleaned"
    (LOCKED, E, None),  # someone else's password: the erase would need it
    (SAS, S, EraseMethod.SCSI_SANITIZE_CRYPTO),
    (SAS_BLOCK, E, EraseMethod.SCSI_SANITIZE_BLOCK),
    (DriveCaps(), S, None),
    (SAS, CleanLevel.METADATA, None),
])
def test_method_per_capability_and_level(caps: DriveCaps, level: CleanLevel, method: EraseMethod | None) -> None:
    assert choose_method(caps, level) == method


@pytest.mark.parametrize(("caps", "said"), [
    (FROZEN, "/dev/sdb (WD1): ATA security is frozen"),
    (LOCKED, "/dev/sdb (WD1): an ATA security password is already set"),
    (DriveCaps(), "/dev/sdb (WD1): supports no sanitize method (no erase command)"),
])
def test_why_a_drive_is_not_erased(caps: DriveCaps, said: str) -> None:
    d = Drive(device="/dev/sdb", controller="/dev/sdb", bus=Bus.SATA, serial="WD1", caps=caps)
    assert why_unerasable(d, S).startswith(said)


HDPARM_OK = """
/dev/sdb:

ATA device, with non-removable media
\tModel Number:       Samsung SSD 870 EVO 1TB
Commands/features:
\tEnabled\tSupported:
\t   *\tSecurity Mode feature set
Security:
\tMaster password revision code = 65534
\t\tsupported
\tnot\tenabled
\tnot\tlocked
\tnot\tfrozen
\tnot\texpired: security count
\t\tsupported: enhanced erase
\t2min for SECURITY ERASE UNIT. 2min for ENHANCED SECURITY ERASE UNIT.
Logical Unit WWN Device Identifier: 5002538f4132c1a5
Checksum: correct
"""


@pytest.mark.parametrize(("text", "caps"), [
    (HDPARM_OK, ATA_ENH),
    (HDPARM_OK.replace("not\tfrozen", "\tfrozen"), FROZEN),
    (HDPARM_OK.replace("not\tenabled", "\tenabled").replace("\t\tsupported: enhanced", "\tnot\tsupported: enhanced"),
     LOCKED),
    (HDPARM_OK.replace("\t\tsupported\n", "\tnot\tsupported\n"), DriveCaps()),
    ("/dev/sdb:\n\nATA device\nChecksum: correct\n", DriveCaps()),  # no Security section
])
def test_hdparm_security_section(text: str, caps: DriveCaps) -> None:
    assert ata.parse_hdparm_security(text) == caps


SG_OPCODES = """  Opcode  Service    CDB    Name
  (hex)   action(h)  size
-----------------------------------------------
   00                  6    Test Unit Ready
   48        1        10    Sanitize, overwrite
   48        2        10    Sanitize, block erase
   48        3        10    Sanitize, cryptographic erase
   48       1f        10    Sanitize, exit failure mode
"""


@pytest.mark.parametrize(("text", "caps"), [
    (SG_OPCODES, SAS),
    (SG_OPCODES.replace("   48        3        10    Sanitize, cryptographic erase\n", ""), SAS_BLOCK),
    ("   00                  6    Test Unit Ready\n   48        1        10    Sanitize, overwrite\n", DriveCaps()),
])
def test_sg_opcodes(text: str, caps: DriveCaps) -> None:
    assert ata.parse_sg_opcodes(text) == caps


def test_lsblk_lists_sata_and_sas_disks_only() -> None:
    text = json.dumps({"blockdevices": [
        {"name": "sda", "tran": "sata", "serial": "S1 ", "model": "SSD", "type": "disk"},
        {"name": "sdb", "tran": "sas", "serial": "S2", "model": None, "type": "disk"},
        {"name": "nvme0n1", "tran": "nvme", "serial": "N1", "model": "X", "type": "disk"},
        {"name": "sr0", "tran": "sata", "serial": "D", "model": "DVD", "type": "rom"},
        {"name": "vda", "tran": None, "serial": None, "model": None, "type": "disk"}]})
    got = ata.parse_lsblk(text)
    assert [(d.device, d.bus, d.serial) for d in got] == [("/dev/sda", Bus.SATA, "S1"), ("/dev/sdb", Bus.SAS, "S2")]
    with pytest.raises(ParseError, match="lsblk"):
        ata.parse_lsblk("not json")


@pytest.mark.parametrize(("method", "command"), [
    (EraseMethod.ATA_ERASE_ENHANCED, "hdparm --user-master u --security-set-pass provision-erase /dev/sdb && "
     "hdparm --user-master u --security-erase-enhanced provision-erase /dev/sdb"),
    (EraseMethod.ATA_ERASE, "hdparm --user-master u --security-set-pass provision-erase /dev/sdb && "
     "hdparm --user-master u --security-erase provision-erase /dev/sdb"),
    (EraseMethod.SCSI_SANITIZE_CRYPTO, "sg_sanitize --quick --crypto /dev/sdb"),
    (EraseMethod.SCSI_SANITIZE_BLOCK, "sg_sanitize --quick --block /dev/sdb"),
])
def test_erase_commands(method: EraseMethod, command: str) -> None:
    assert ata.erase_command(method, "/dev/sdb") == command


def test_an_nvme_method_is_no_sata_command() -> None:
    with pytest.raises(ValueError, match="no SATA or SAS erase"):
        ata.erase_command(EraseMethod.FORMAT_USER, "/dev/sdb")


@pytest.mark.parametrize(("member", "disk"), [
    ("/dev/nvme0n1p2", "/dev/nvme0n1"), ("/dev/nvme0n1", "/dev/nvme0n1"), ("/dev/sda2", "/dev/sda"),
    ("/dev/sdab12", "/dev/sdab"), ("/dev/sda", "/dev/sda"), ("/dev/vdb1", "/dev/vdb"),
])
def test_boot_member_to_whole_disk(member: str, disk: str) -> None:
    assert whole_disk(member) == disk


def test_sg_opcodes_of_an_older_sg3_utils_without_the_size_column() -> None:
    assert ata.parse_sg_opcodes("   48        2      Sanitize, block erase\n   48        3      Sanitize, cryptographic"
                                " erase\n") == SAS
