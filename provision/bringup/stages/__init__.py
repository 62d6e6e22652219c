"""The bring-up stages, in order: preflight -> firmware -> bios -> reset -> os -> configure -> verify."""

from __future__ import annotations

from provision.bringup.options import BringupOptions
from provision.bringup.stage import Stage
from provision.bringup.stages.bios import BiosStage
from provision.bringup.stages.configure import ConfigureStage
from provision.bringup.stages.firmware import FirmwareStage
from provision.bringup.stages.os_stage import OsStage
from provision.bringup.stages.preflight import PreflightStage
from provision.bringup.stages.reset import ResetStage
from provision.bringup.stages.verify import VerifyStage


def default_stages(opts: BringupOptions) -> list[Stage]:
    return [PreflightStage(opts), FirmwareStage(opts), BiosStage(opts), ResetStage(opts), OsStage(opts),
            ConfigureStage(opts), VerifyStage(opts)]


__all__ = ["default_stages"]
