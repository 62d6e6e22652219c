"""PCIe devices (where the Supermicro HGX tree lists its GPUs)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from provision.redfish.resources.base import Resource, real_text, text_or_none


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

    @field_validator("model", "manufacturer", "serial_number", "firmware_version", "part_number", mode="before")
    @classmethod
    def _text(cls, v: Any) -> str | None:
        return real_text(v)

    @property
    def label(self) -> str | None:
        """Model, else the Name (Lenovo says Model "N/A" and Name "NVIDIA L40")."""
        return self.model or real_text(self.name)

    @property
    def pcie_type(self) -> str | None:
        return text_or_none(self.pcie_interface.get("PCIeType"))

    @property
    def lanes(self) -> int | None:
        value = self.pcie_interface.get("LanesInUse")
        return int(value) if isinstance(value, int) else None
