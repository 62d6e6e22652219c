"""Memory: one DIMM slot."""

from __future__ import annotations

from pydantic import Field

from provision.redfish.resources.base import Resource


class Memory(Resource):
    """One DIMM (or empty slot)."""

    capacity_mib: int | None = Field(default=None, alias="CapacityMiB")
    memory_device_type: str | None = None
    """DDR4, DDR5, ..."""
    operating_speed_mhz: int | None = Field(default=None, alias="OperatingSpeedMhz")
    device_locator: str | None = None
    error_correction: str | None = None
    manufacturer: str | None = None
    part_number: str | None = None

    @property
    def populated(self) -> bool:
        return self.present and bool(self.capacity_mib)
