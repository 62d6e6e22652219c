"""Memory: one DIMM slot."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from provision.redfish.resources.base import Model, Resource


class MemoryLocation(Model):
    """Memory.MemoryLocation: where the DIMM sits."""

    socket: int | None = None
    memory_controller: int | None = None
    channel: int | None = None
    slot: int | None = None


class Memory(Resource):
    """One DIMM (or empty slot)."""

    capacity_mib: int | None = Field(default=None, alias="CapacityMiB")
    memory_device_type: str | None = None
    """DDR4, DDR5, HBM, LPDDR5, ..."""
    memory_type: str | None = None
    """DRAM, NVDIMM_N, ..."""
    operating_speed_mhz: int | None = Field(default=None, alias="OperatingSpeedMhz")
    allowed_speeds_mhz: list[int] = Field(default_factory=list, alias="AllowedSpeedsMHz")
    device_locator: str | None = None
    error_correction: str | None = None
    manufacturer: str | None = None
    part_number: str | None = None
    memory_location: MemoryLocation | None = None

    @field_validator("memory_location", mode="before")
    @classmethod
    def _loc(cls, v: Any) -> Any:
        return v if isinstance(v, dict) else None

    @field_validator("allowed_speeds_mhz", mode="before")
    @classmethod
    def _speeds(cls, v: Any) -> list[int]:
        return [int(x) for x in v if isinstance(x, int | float)] if isinstance(v, list) else []

    @property
    def populated(self) -> bool:
        return self.present and bool(self.capacity_mib)

    @property
    def speed_mhz(self) -> int | None:
        """The running speed; None where the BMC reports 0 (unknown)."""
        return self.operating_speed_mhz or None
