"""Service root, ComputerSystem and its boot settings."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from provision.redfish.resources.base import Model, Resource, dig, text_or_none, texts


class ServiceRoot(Resource):
    """/redfish/v1."""

    redfish_version: str | None = None
    vendor: str | None = None
    product: str | None = None
    protocol_features_supported: dict[str, Any] = Field(default_factory=dict)
    oem: dict[str, Any] = Field(default_factory=dict)


class Boot(Model):
    """ComputerSystem.Boot."""

    boot_source_override_enabled: str | None = None
    boot_source_override_target: str | None = None
    boot_source_override_mode: str | None = None
    allowed_targets: tuple[str, ...] = Field(default=(), alias="BootSourceOverrideTarget@Redfish.AllowableValues")


class ComputerSystem(Resource):
    """A host as its BMC describes it."""

    manufacturer: str | None = None
    model: str | None = None
    serial_number: str | None = None
    bios_version: str | None = None
    power_state: str | None = None
    boot: Boot = Boot()
    processor_summary: dict[str, Any] = Field(default_factory=dict)
    memory_summary: dict[str, Any] = Field(default_factory=dict)
    actions: dict[str, Any] = Field(default_factory=dict)

    @property
    def reset_target(self) -> str | None:
        return text_or_none(dig(self.actions, "#ComputerSystem.Reset", "target"))

    @property
    def reset_types(self) -> tuple[str, ...]:
        return texts(dig(self.actions, "#ComputerSystem.Reset", "ResetType@Redfish.AllowableValues"))

    @property
    def total_memory_gib(self) -> float | None:
        value = self.memory_summary.get("TotalSystemMemoryGiB")
        return float(value) if isinstance(value, int | float) else None
