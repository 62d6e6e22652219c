"""The BIOS and firmware sections of the spec."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field, field_validator

from provision.spec.frozen import Frozen, NonNegativeInt
from provision.spec.images import ImageChecks
from provision.spec.platforms import AppliesTo
from provision.spec.versions import VersionScheme


class BiosValue(StrEnum):
    ENABLED = "enabled"
    DISABLED = "disabled"


BIOS_NEUTRAL_KEYS: frozenset[str] = frozenset(
    {
        "sriov",
        "above_4g_decoding",
        "hyperthreading",
        "power_profile",
        "numa",
        "sub_numa_clustering",
        "iommu",
        "boot_mode",
        "turbo",
        "resizable_bar",
    }
)


class Bios(Frozen):
    """BIOS settings by vendor-neutral key, plus raw per-vendor attributes."""

    settings: dict[str, str | int | bool]
    vendor_attributes: dict[str, dict[str, str | int | bool]] = Field(default_factory=dict)

    @field_validator("settings")
    @classmethod
    def _known_keys(cls, value: dict[str, str | int | bool]) -> dict[str, str | int | bool]:
        unknown = sorted(set(value) - BIOS_NEUTRAL_KEYS)
        if unknown:
            raise ValueError(f"unknown BIOS key(s) {unknown}; known: {sorted(BIOS_NEUTRAL_KEYS)}")
        return value


class FirmwareComponent(ImageChecks, Frozen):
    """One line of the firmware baseline (validated as a campaign's components are: spec.images)."""

    component: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    version: str
    image: str = Field(min_length=1, description="Path relative to the inventory directory, or absolute")
    sha256: str
    apply_time: Literal["Immediate", "OnReset"] | None = Field(
        default=None, description="When the BMC applies the image; unset: the BMC's choice among what it offers "
        "for the update method, OnReset first (a GH200's multipart push offers Immediate only)")
    needs_host_reset: bool = True
    order: NonNegativeInt = 50
    updated_by: Literal["bmc", "os"] = Field(
        default="bmc",
        description="bmc: flashed out-of-band through Redfish; os: flashed in-band (e.g. mlxfwmanager for "
        "ConnectX adapters the BMC marks not updateable) and checked on the node",
    )
    match: dict[str, str] = Field(
        default_factory=dict,
        description="Per-vendor regex over FirmwareInventory Id/Name; vendors/ supply defaults",
    )
    version_scheme: VersionScheme | None = Field(
        default=None, description="How the running and baseline versions are ordered (dotted, hex-dotted, date, "
        "opaque); unset: the scheme both read in; versions of no common scheme are never ordered")
    applies_to: AppliesTo | None = Field(
        default=None, validate_default=True,
        description="The platforms the image is for and the FirmwareInventory entries it updates, or `any` "
        "(provision/spec/platforms.py); required")

    @property
    def flashed_by_bmc(self) -> bool:
        return self.updated_by == "bmc"
