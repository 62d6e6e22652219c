"""Typed values of a clean: the level asked for, each drive's erase capabilities, the method chosen, the
evidence an erase leaves."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict


class CleanLevel(StrEnum):
    """How far a clean goes on the data drives."""

    METADATA = "metadata"  # pools and arrays stopped, labels wiped; the data blocks stay
    ERASE = "erase"  # every data drive formatted with a secure erase (crypto where it can)
    SANITIZE = "sanitize"  # NVMe sanitize where the controller lists it, else the best format


class Bus(StrEnum):
    """How the drive is attached (lsblk TRAN): the tools that erase it."""

    NVME = "nvme"
    SATA = "sata"  # hdparm: ATA security erase
    SAS = "sas"  # sg_sanitize: SCSI SANITIZE


class EraseMethod(StrEnum):
    SANITIZE_CRYPTO = "sanitize-crypto"  # nvme sanitize --sanact=4
    SANITIZE_BLOCK = "sanitize-block"  # nvme sanitize --sanact=2
    FORMAT_CRYPTO = "format-crypto"  # nvme format --ses=2
    FORMAT_USER = "format-user"  # nvme format --ses=1
    SCSI_SANITIZE_CRYPTO = "scsi-sanitize-crypto"  # sg_sanitize --crypto
    SCSI_SANITIZE_BLOCK = "scsi-sanitize-block"  # sg_sanitize --block
    ATA_ERASE_ENHANCED = "ata-security-erase-enhanced"  # hdparm --security-erase-enhanced
    ATA_ERASE = "ata-security-erase"  # hdparm --security-erase

    @property
    def is_sanitize(self) -> bool:
        """An NVMe sanitize: it runs on in the controller, and its sanitize log says how it ended."""
        return self in (EraseMethod.SANITIZE_CRYPTO, EraseMethod.SANITIZE_BLOCK)

    @property
    def is_ata(self) -> bool:
        return self in (EraseMethod.ATA_ERASE_ENHANCED, EraseMethod.ATA_ERASE)


class DriveCaps(BaseModel):
    """What one drive says it can erase with: an NVMe controller's id-ctrl (SANICAP, OACS, FNA), a SATA drive's
    security feature set (hdparm -I), a SAS drive's supported SANITIZE service actions (sg_opcodes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    sanitize_crypto: bool = False
    sanitize_block: bool = False
    format: bool = False
    format_crypto: bool = False
    scsi_sanitize_crypto: bool = False
    scsi_sanitize_block: bool = False
    ata_security: bool = False
    """The ATA security feature set is supported."""
    ata_enhanced: bool = False
    """... with the enhanced security erase."""
    ata_frozen: bool = False
    """Security frozen (SECURITY FREEZE LOCK, which most BIOSes send at boot): no security command is taken."""
    ata_enabled: bool = False
    """A user password is set already (by someone else): the erase would need it."""

    @classmethod
    def of(cls, sanicap: int | None, oacs: int | None, fna: int | None) -> DriveCaps:
        """From the identify-controller fields (absent: not supported)."""
        sanicap, oacs, fna = sanicap or 0, oacs or 0, fna or 0
        fmt = bool(oacs & 0x2)
        return cls(sanitize_crypto=bool(sanicap & 0x1), sanitize_block=bool(sanicap & 0x2), format=fmt,
                   format_crypto=fmt and bool(fna & 0x4))

    def describe(self) -> str:
        named = (("sanitize crypto", self.sanitize_crypto), ("sanitize block", self.sanitize_block),
                 ("format", self.format), ("format crypto", self.format_crypto),
                 ("SCSI sanitize crypto", self.scsi_sanitize_crypto), ("SCSI sanitize block", self.scsi_sanitize_block),
                 ("ATA security erase", self.ata_security), ("enhanced", self.ata_enhanced),
                 ("security frozen", self.ata_frozen), ("security password set", self.ata_enabled))
        said = [name for name, on in named if on]
        return ", ".join(said) or "no erase command"


class Drive(BaseModel):
    """One NVMe namespace, SATA or SAS drive of the node, as observed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str
    """The block device, /dev/nvme0n1 or /dev/sda."""
    controller: str
    """An NVMe namespace's controller's character device, /dev/nvme0 (sanitize is a controller command); the
    device itself for a SATA or SAS drive."""
    bus: Bus = Bus.NVME
    serial: str
    model: str = ""
    boot: bool = False
    """A member of the boot mirror (erased only with --include-boot, and last)."""
    caps: DriveCaps = DriveCaps()


class SanitizeStatus(StrEnum):
    """SSTAT bits 2:0 of the NVMe sanitize status log."""

    NEVER = "never"
    COMPLETED = "completed"
    IN_PROGRESS = "in progress"
    FAILED = "failed"
    COMPLETED_NO_DEALLOCATE = "completed (no deallocate)"

    @property
    def succeeded(self) -> bool:
        return self in (SanitizeStatus.COMPLETED, SanitizeStatus.COMPLETED_NO_DEALLOCATE)


class SanitizeLog(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    status: SanitizeStatus
    progress: int
    """SPROG: 65535 when no sanitize is in progress."""
    global_erased: bool = False

    @property
    def succeeded(self) -> bool:
        return self.status.succeeded


class ZeroRead(BaseModel):
    """A read of the first and last MiB of a drive: bytes read and how many were not zero."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    first_bytes: int
    first_nonzero: int
    last_bytes: int
    last_nonzero: int

    @property
    def zeroed(self) -> bool:
        return (self.first_bytes == MIB and self.last_bytes == MIB
                and self.first_nonzero == 0 and self.last_nonzero == 0)

    def describe(self) -> str:
        if self.zeroed:
            return "first and last MiB read back zeroed"
        return (f"first MiB: {self.first_bytes} bytes read, {self.first_nonzero} not zero; "
                f"last MiB: {self.last_bytes} bytes read, {self.last_nonzero} not zero")


MIB = 1024 * 1024


class DriveEvidence(BaseModel):
    """What one drive's erase left: the method, when it ran, what the drive reported, what was read back."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    device: str
    serial: str
    method: EraseMethod
    started_at: float
    ended_at: float
    sanitize: SanitizeLog | None = None
    read_back: ZeroRead
    resumed: bool = False
    """Found done after an interruption (its intent was journaled, its outcome was not): not run again."""

    @property
    def seconds(self) -> float:
        return round(self.ended_at - self.started_at, 3)
