"""Storage subsystem, drives and volumes."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from provision.redfish.resources.base import Resource, link_ids


class Drive(Resource):
    """One physical drive."""

    capacity_bytes: int | None = None
    protocol: str | None = None
    """NVMe, SAS, SATA."""
    media_type: str | None = None
    model: str | None = None
    serial_number: str | None = None
    manufacturer: str | None = None
    revision: str | None = None

    @property
    def capacity_tb(self) -> float | None:
        return self.capacity_bytes / 1e12 if self.capacity_bytes else None

    @property
    def is_nvme(self) -> bool:
        """NVMe by Protocol, or a PCIe-attached SSD (some BMCs say Protocol "PCIe" for NVMe drives); a drive whose
        protocol the BMC does not give counts as NVMe, as before (Supermicro's NVMe backplane says nothing)."""
        proto = (self.protocol or "NVMe").upper()
        return proto == "NVME" or (proto == "PCIE" and (self.media_type or "SSD").upper() == "SSD")


class Storage(Resource):
    """A storage subsystem with its drive links."""

    drives: list[Any] = Field(default_factory=list)
    storage_controllers: list[Any] = Field(default_factory=list)
    volumes: dict[str, Any] = Field(default_factory=dict)

    @property
    def drive_uris(self) -> tuple[str, ...]:
        return link_ids(self.drives)


class Volume(Resource):
    """A logical volume (RAID set)."""

    capacity_bytes: int | None = None
    raid_type: str | None = Field(default=None, alias="RAIDType")
    volume_type: str | None = None


class SimpleStorage(Resource):
    """SimpleStorage: a controller with its Devices inline (no Drive resources)."""

    devices: list[dict[str, Any]] = Field(default_factory=list)

    def drives(self) -> list[Drive]:
        """Each present device as a Drive, addressed by a JSON pointer into this resource."""
        out = []
        for i, dev in enumerate(d for d in self.devices if isinstance(d, dict)):
            out.append(Drive.parse({**dev, "@odata.id": f"{self.uri}#/Devices/{i}",
                                    "Id": str(dev.get("Id") or dev.get("Name") or i)}))
        return [d for d in out if d.present]
