"""A clean (and a retirement) as a run of stages through the bring-up engine: the same node leases, journal
and resume rules."""

from __future__ import annotations

from collections.abc import Sequence

from provision.bringup.engine import run_bringup
from provision.bringup.model import BringupResult
from provision.bringup.options import BringupOptions
from provision.bringup.stage import Progress, Stage
from provision.bringup.stages.bios import BiosStage
from provision.bringup.stages.reset import ResetStage
from provision.clean import records
from provision.clean.bmc_reduce import ReduceAccountsStage, StagedFirmwareStage
from provision.clean.bmc_stages import BiosDefaultsStage, BmcStateStage, DoneStage, GuardStage
from provision.clean.disks import DisksStage
from provision.clean.options import CleanOptions
from provision.clean.retire import DrainStage, RetireStage
from provision.journal import Journal
from provision.spec import HostEntry


def clean_stages(opts: CleanOptions) -> list[Stage]:
    """guard -> staged-firmware -> disks -> bios-defaults -> bios -> reset -> bmc-state -> accounts -> done (staged
    firmware cancelled before the first host reset would apply it)."""
    return [GuardStage(opts), StagedFirmwareStage(opts.bringup), DisksStage(opts), BiosDefaultsStage(opts),
            BiosStage(opts.bringup), ResetStage(opts.bringup), BmcStateStage(opts), ReduceAccountsStage(opts.bringup),
            DoneStage(opts)]


def retire_stages(bringup: BringupOptions, clean: CleanOptions | None) -> list[Stage]:
    """drain -> the clean's stages (with --clean; else the BMC accounts reduced to the spec's) -> retire."""
    middle = clean_stages(clean) if clean is not None else [ReduceAccountsStage(bringup)]
    return [DrainStage(bringup), *middle, RetireStage(bringup)]


def run_clean(hosts: Sequence[HostEntry], opts: CleanOptions, journal: Journal | None, *, plan_only: bool = False,
              concurrency: int = 4, progress: Progress | None = None) -> BringupResult:
    args: dict[str, object] = {"level": opts.level.value, "include_boot": opts.include_boot, "by": opts.by}
    return run_bringup(hosts, clean_stages(opts), journal=journal, plan_only=plan_only, concurrency=concurrency,
                       progress=progress, kind=records.CLEAN, args=args)


def run_retire(hosts: Sequence[HostEntry], bringup: BringupOptions, clean: CleanOptions | None,
               journal: Journal | None, *, plan_only: bool = False, concurrency: int = 4,
               progress: Progress | None = None) -> BringupResult:
    args: dict[str, object] = {"clean": clean is not None, "by": records.operator()}
    if clean is not None:
        args.update(level=clean.level.value, include_boot=clean.include_boot)
    return run_bringup(hosts, retire_stages(bringup, clean), journal=journal, plan_only=plan_only,
                       concurrency=concurrency, progress=progress, kind=records.RETIRE, args=args)
