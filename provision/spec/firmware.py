"""The BIOS and firmware sections of the spec."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field, field_validator, model_validator

from provision.spec.digests import check_sha256
from provision.spec.frozen import Frozen, NonNegativeInt
from provision.spec.platforms import AppliesTo, entries_named, missing_applies_to
from provision.spec.versions import VersionScheme, check_scheme, check_version


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


class FirmwareComponent(Frozen):
    """One line of the firmware baseline."""

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

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        return check_version(value)

    @model_validator(mode="after")
    def _in_scheme(self) -> FirmwareComponent:
        check_scheme(self.version, self.version_scheme)
        return self

    @field_validator("sha256")
    @classmethod
    def _sha(cls, value: str) -> str:
        return check_sha256(value)

    @field_validator("applies_to")
    @classmethod
    def _applies_to(cls, value: AppliesTo | None) -> AppliesTo:
        return missing_applies_to(value)

    @model_validator(mode="after")
    def _entries_named(self) -> FirmwareComponent:
        return entries_named(self, self.updated_by == "bmc")

    @property
    def target(self) -> AppliesTo:
        """`applies_to`, never None once validated."""
        return missing_applies_to(self.applies_to)
