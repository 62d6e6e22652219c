"""PCIe devices (where the Supermicro HGX tree lists its GPUs)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from provision.redfish.resources.base import Resource, text_or_none


class PCIeDevice(Resource):
    """One PCIe device."""

    manufacturer: str | None = None
    model: str | None = None
    device_type: str | None = None
    serial_number: str | None = None
    part_number: str | None = None
    firmware_version: str | None = None
    pcie_interface: dict[str, Any] = Field(default_factory=dict, alias="PCIeInterface")
    oem: dict[str, Any] = Field(default_factory=dict)

    @property
    def pcie_type(self) -> str | None:
        return text_or_none(self.pcie_interface.get("PCIeType"))

    @property
    def lanes(self) -> int | None:
        value = self.pcie_interface.get("LanesInUse")
        return int(value) if isinstance(value, int) else None
