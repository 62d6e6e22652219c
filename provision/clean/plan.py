"""The clean's decisions, pure: which method erases a drive, what the disks stage does, whether a node may be
cleaned at all. Tested as tables (tests/unit/test_clean_plan.py)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from provision.bringup.model import Action, StagePlan
from provision.clean.model import CleanLevel, Drive, DriveCaps, DriveEvidence, EraseMethod, SanitizeLog, ZeroRead
from provision.errors import CheckFailed
from provision.spec.platforms import PlatformIdentity

DISKS = "disks"

# The order each level tries the methods a drive lists (the first it supports wins). A drive lists the methods of
# its own bus only (NVMe, SCSI or ATA), so each level is one order per bus: sanitize before a format or a
# security erase at `sanitize`, the quicker format or security erase first at `erase`.
PREFERENCE: dict[CleanLevel, tuple[EraseMethod, ...]] = {
    CleanLevel.SANITIZE: (EraseMethod.SANITIZE_CRYPTO, EraseMethod.SANITIZE_BLOCK, EraseMethod.FORMAT_CRYPTO,
                          EraseMethod.FORMAT_USER, EraseMethod.SCSI_SANITIZE_CRYPTO, EraseMethod.SCSI_SANITIZE_BLOCK,
                          EraseMethod.ATA_ERASE_ENHANCED, EraseMethod.ATA_ERASE),
    CleanLevel.ERASE: (EraseMethod.FORMAT_CRYPTO, EraseMethod.FORMAT_USER, EraseMethod.SANITIZE_CRYPTO,
                       EraseMethod.SANITIZE_BLOCK, EraseMethod.ATA_ERASE_ENHANCED, EraseMethod.ATA_ERASE,
                       EraseMethod.SCSI_SANITIZE_CRYPTO, EraseMethod.SCSI_SANITIZE_BLOCK),
    CleanLevel.METADATA: (),
}


def supports(caps: DriveCaps, method: EraseMethod) -> bool:
    """The drive lists `method` and will take it now (an ATA security erase: not frozen, no password set)."""
    ata = caps.ata_security and not caps.ata_frozen and not caps.ata_enabled
    return {EraseMethod.SANITIZE_CRYPTO: caps.sanitize_crypto, EraseMethod.SANITIZE_BLOCK: caps.sanitize_block,
            EraseMethod.FORMAT_CRYPTO: caps.format_crypto, EraseMethod.FORMAT_USER: caps.format,
            EraseMethod.SCSI_SANITIZE_CRYPTO: caps.scsi_sanitize_crypto,
            EraseMethod.SCSI_SANITIZE_BLOCK: caps.scsi_sanitize_block,
            EraseMethod.ATA_ERASE_ENHANCED: ata and caps.ata_enhanced, EraseMethod.ATA_ERASE: ata}[method]


def choose_method(caps: DriveCaps, level: CleanLevel) -> EraseMethod | None:
    """The erase `level` asks for that the drive supports; None when it supports none of them (or the level
    erases nothing: metadata)."""
    return next((m for m in PREFERENCE[level] if supports(caps, m)), None)


def why_unerasable(d: Drive, level: CleanLevel) -> str:
    """One line naming the drive and why no method of `level` can erase it."""
    where = f"{d.device} ({d.serial})"
    if d.caps.ata_security and d.caps.ata_frozen:
        return (f"{where}: ATA security is frozen (the BIOS froze it at boot): not erased; suspend and resume the "
                "node (or hot-plug the drive) to unfreeze it, then clean again")
    if d.caps.ata_security and d.caps.ata_enabled:
        return (f"{where}: an ATA security password is already set (not this clean's): not erased; "
                "hdparm --security-disable with that password, then clean again")
    return f"{where}: supports no {level.value} method ({d.caps.describe()})"


class MdArray(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str
    members: tuple[str, ...] = ()
    """Member partitions or drives, as mdadm names them."""
    boot: bool = False


class ZfsPool(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    boot: bool = False
    """A leaf of it is on a boot drive."""


class Interrupted(BaseModel):
    """A drive whose erase intent is journaled in this clean without an outcome (the run was killed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    started_at: float
    sanitize: SanitizeLog | None = None
    read_back: ZeroRead


class DisksObserved(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    drives: tuple[Drive, ...]
    pools: tuple[ZfsPool, ...] = ()
    arrays: tuple[MdArray, ...] = ()
    boot_known: bool = True
    """The boot drives could be told from the data drives (the spec's boot mirror, read with mdadm)."""
    erased: frozenset[str] = frozenset()
    """Serials with erase evidence journaled in this clean (a resumed clean does not erase them again)."""
    interrupted: dict[str, Interrupted] = Field(default_factory=dict)
    observed_at: float = 0.0


class DestroyPool(Action):
    pass


class StopArray(Action):
    members: tuple[str, ...] = ()


class WipeLabels(Action):
    pass


class EraseDrive(Action):
    drive: Drive
    method: EraseMethod


class RecordResumed(Action):
    """Bookkeeping: an interrupted erase found done (the drive's own log and a read back say so)."""

    evidence: DriveEvidence


class Unerasable(Action):
    """A drive the level cannot erase: an error once the other drives are done."""

    why: str


def _drive_target(d: Drive) -> str:
    return f"{d.device} {d.serial}"


def _resumed(node: str, d: Drive, method: EraseMethod, seen: Interrupted, at: float) -> RecordResumed | None:
    """Evidence for an interrupted erase that completed: a sanitize the drive's log says succeeded, or a format,
    and in both cases the first and last MiB read back zeroed. None: it did not complete; erase again."""
    if not seen.read_back.zeroed:
        return None
    if method.is_sanitize and (seen.sanitize is None or not seen.sanitize.succeeded):
        return None
    evidence = DriveEvidence(node=node, device=d.device, serial=d.serial, method=method, started_at=seen.started_at,
                             ended_at=at, sanitize=seen.sanitize, read_back=seen.read_back, resumed=True)
    return RecordResumed(kind="drive-evidence", target=_drive_target(d), after=f"{method.value} completed before "
                         "the interruption (read back); not run again", changes_node=False, evidence=evidence)


def _drive_actions(node: str, d: Drive, level: CleanLevel, observed: DisksObserved) -> list[Action]:
    if d.serial in observed.erased:
        return []
    actions: list[Action] = [WipeLabels(kind="wipe-labels", target=d.device)]
    if level is CleanLevel.METADATA:
        return actions
    method = choose_method(d.caps, level)
    if method is None:
        why = why_unerasable(d, level)
        return [Unerasable(kind="drive-unerasable", target=_drive_target(d), after=why, why=why)]
    seen = observed.interrupted.get(d.serial)
    done = _resumed(node, d, method, seen, observed.observed_at) if seen is not None else None
    if done is not None:
        return [done]
    return [*actions, EraseDrive(kind="drive-erase", target=_drive_target(d), after=method.value, drive=d,
                                 method=method)]


def plan_disks(node: str, observed: DisksObserved, level: CleanLevel, include_boot: bool) -> StagePlan:
    """Pure: data pools destroyed, data arrays stopped, then each data drive's labels wiped and (erase,
    sanitize) the drive erased by the method `choose_method` picks; the boot drives (and their pool or array)
    only with `include_boot`, and last. A drive supporting no method is planned as Unerasable (the node fails
    once the others are done); drives erased earlier in this clean are left alone."""
    if not observed.boot_known and not include_boot:
        raise CheckFailed(f"{node}: cannot tell the boot drives from the data drives (the spec names no boot "
                          "mirror, or mdadm could not read it): nothing erased; --include-boot erases them all")
    data = [d for d in observed.drives if not d.boot]
    boot = [d for d in observed.drives if d.boot] if include_boot else []
    actions: list[Action] = [DestroyPool(kind="pool-destroy", target=p.name) for p in observed.pools
                             if include_boot or not p.boot]
    actions += [StopArray(kind="md-stop", target=a.device, members=a.members) for a in observed.arrays
                if not a.boot]
    for d in [*data, *boot]:
        actions += _drive_actions(node, d, level, observed)
    skipped = sorted(d.device for d in observed.drives if d.serial in observed.erased)
    notes = [f"erased earlier in this clean: {', '.join(skipped)}"] if skipped else []
    if not include_boot and any(d.boot for d in observed.drives):
        notes.append("boot drives kept (--include-boot erases them)")
    if not observed.drives:
        notes.append("no NVMe, SATA or SAS drives found")
    return StagePlan(stage=DISKS, node=node, actions=tuple(actions), note="; ".join(notes))


# ---- guards -------------------------------------------------------------------------------------------------
class KnownIdentity(BaseModel):
    """What a node is known to be: its serial and UUID as a source recorded them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    serial: str | None = None
    uuid: str | None = None


def check_identity(node: str, now: PlatformIdentity, known: Sequence[KnownIdentity]) -> str:
    """Raise CheckFailed unless the identity read now matches every recorded serial and UUID (at least one must
    be recorded: a node never identified is not erased on trust). Returns what was compared."""
    serial, uuid = now.system.serial_number, now.system.uuid
    compared: list[str] = []
    for k in known:
        for what, was, is_now in (("serial", k.serial, serial), ("UUID", k.uuid, uuid)):
            if was is None:
                continue
            if (is_now or "").strip().lower() != was.strip().lower():
                raise CheckFailed(f"{node}: the BMC reports {what} {is_now or '(none)'}, the {k.source} holds {was}: "
                                  "not the node it was (a board swap, or the wrong BMC); nothing erased")
            compared.append(f"{what} ({k.source})")
    if not compared:
        raise CheckFailed(f"{node}: no serial or UUID recorded for it (the inventory's provision_bmc_identity, or the "
                          "journal's readings from bring-up and bmc inventory): its identity cannot be checked; "
                          "nothing erased")
    return f"identity matches: serial {serial}, UUID {uuid}"


def check_drained(node: str, slurm_name: str, drained: bool | None) -> str:
    """Raise CheckFailed for a node Slurm does not show drained (None: provision_slurm is not set)."""
    if drained is None:
        return "no provision_slurm: Slurm not asked"
    if not drained:
        raise CheckFailed(f"{node}: Slurm node {slurm_name} is not drained (scontrol update nodename={slurm_name} "
                          "state=drain reason=...): its jobs may still run; nothing erased")
    return f"drained in Slurm ({slurm_name})"
