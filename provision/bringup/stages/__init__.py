"""The bring-up stages, in order: bmc-password -> bmc-accounts -> preflight -> bmc -> firmware -> bios -> reset -> os
-> configure -> verify. The day-zero BMC stages (bmc_accounts, bmc_setup) plan nothing for a profile without a
`bmc:` section; the account stages come before preflight, whose login needs the site account they make."""

from __future__ import annotations

from provision.bringup.options import BringupOptions
from provision.bringup.stage import Stage
from provision.bringup.stages.bios import BiosStage
from provision.bringup.stages.bmc_accounts import BmcAccountsStage, BmcPasswordStage
from provision.bringup.stages.bmc_setup import BmcSetupStage
from provision.bringup.stages.configure import ConfigureStage
from provision.bringup.stages.firmware import FirmwareStage
from provision.bringup.stages.os_stage import OsStage
from provision.bringup.stages.preflight import PreflightStage
from provision.bringup.stages.reset import ResetStage
from provision.bringup.stages.verify import VerifyStage


def default_stages(opts: BringupOptions) -> list[Stage]:
    return [BmcPasswordStage(opts), BmcAccountsStage(opts), PreflightStage(opts), BmcSetupStage(opts),
            FirmwareStage(opts), BiosStage(opts), ResetStage(opts), OsStage(opts), ConfigureStage(opts),
            VerifyStage(opts)]


def bmc_setup_stages(opts: BringupOptions) -> list[Stage]:
    """`provision bmc setup`: the day-zero BMC stages alone."""
    return [BmcPasswordStage(opts), BmcAccountsStage(opts), BmcSetupStage(opts)]


__all__ = ["bmc_setup_stages", "default_stages"]
