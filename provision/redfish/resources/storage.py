"""Storage subsystem, drives and volumes."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from provision.redfish.resources.base import Resource, dig, link_ids, real_text

# Removable media a BMC lists among the drives: its own virtual media (AMI MegaRAC's "Virtual Cdrom Device" and
# "Virtual HDisk Device" in SimpleStorage, "Virtual Floppy", iDRAC's "Virtual CD"), optical drives, USB sticks.
_VIRTUAL = re.compile(r"\bvirtual\s*(cd|cdrom|dvd|hdisk|floppy|fdd|media|usb|disk|removable)\b|\bvmedia\b", re.I)
_REMOVABLE_MEDIA = frozenset({"CD", "DVD", "FLOPPY", "USBSTICK", "OPTICAL"})


class Drive(Resource):
    """One physical drive."""

    capacity_bytes: int | None = None
    protocol: str | None = None
    """NVMe, SAS, SATA; None when the BMC does not say (then the drive's protocol is unknown, never guessed)."""
    media_type: str | None = None
    """Drive.MediaType: HDD, SSD, SMR (some BMCs put the VirtualMedia types CD, DVD, USBStick here)."""
    model: str | None = None
    serial_number: str | None = None
    manufacturer: str | None = None
    revision: str | None = None
    removable: bool | None = None
    """Removable (not in DMTF Drive; BMCs that list removable devices set it)."""
    physical_location: dict[str, Any] = Field(default_factory=dict)
    """Drive.PhysicalLocation (v1_4+): PartLocation.ServiceLabel / LocationOrdinalValue name the bay."""
    location: list[Any] = Field(default_factory=list)
    """Drive.Location (deprecated): [{"Info": "...", "InfoFormat": "..."}]."""

    @field_validator("protocol", "media_type", "model", "serial_number", mode="before")
    @classmethod
    def _text(cls, v: Any) -> str | None:
        return real_text(v)

    @field_validator("removable", mode="before")
    @classmethod
    def _bool(cls, v: Any) -> bool | None:
        return v if isinstance(v, bool) else None

    @field_validator("physical_location", mode="before")
    @classmethod
    def _obj(cls, v: Any) -> dict[str, Any]:
        return v if isinstance(v, dict) else {}

    @field_validator("location", mode="before")
    @classmethod
    def _list(cls, v: Any) -> list[Any]:
        return v if isinstance(v, list) else []

    @property
    def capacity_tb(self) -> float | None:
        return self.capacity_bytes / 1e12 if self.capacity_bytes else None

    @property
    def is_nvme(self) -> bool:
        """NVMe by Protocol, or a PCIe-attached SSD (some BMCs say Protocol "PCIe" for NVMe drives). A drive whose
        protocol the BMC does not give is not NVMe: its protocol is unknown (`protocol_known`)."""
        proto = (self.protocol or "").upper()
        return proto == "NVME" or (proto == "PCIE" and (self.media_type or "SSD").upper() == "SSD")

    @property
    def protocol_known(self) -> bool:
        return self.protocol is not None

    @property
    def bay(self) -> str | None:
        """Where the drive sits: PhysicalLocation's service label or ordinal, else the deprecated Location info."""
        part = dig(self.physical_location, "PartLocation") or {}
        label = real_text(part.get("ServiceLabel")) if isinstance(part, dict) else None
        ordinal = part.get("LocationOrdinalValue") if isinstance(part, dict) else None
        if label or ordinal is not None:
            return f"{part.get('LocationType') or ''}:{label or ordinal}"
        infos = [real_text(x.get("Info")) for x in self.location if isinstance(x, dict)]
        return next((i for i in infos if i), None)

    @property
    def identity(self) -> tuple[str, ...] | None:
        """Who the drive is, wherever it is listed: its serial number, else model + capacity + bay; None when the
        BMC gives too little to tell one drive from another (then each listing counts on its own)."""
        if self.serial_number:
            return ("serial", self.serial_number.upper())
        if self.model and self.capacity_bytes and self.bay:
            return ("model", self.model.upper(), str(self.capacity_bytes), self.bay)
        return None

    @property
    def removable_media(self) -> bool:
        """Removable media, never a drive of the node: Removable true, a MediaType of removable media (CD, DVD,
        floppy, USB stick, optical), or the name/model of a BMC's virtual media device."""
        if self.removable is True:
            return True
        if (self.media_type or "").upper() in _REMOVABLE_MEDIA:
            return True
        return any(_VIRTUAL.search(x) for x in (self.name, self.model, self.id) if isinstance(x, str))


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
