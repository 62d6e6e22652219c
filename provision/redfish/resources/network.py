"""Network adapters and their ports (NetworkPort and the newer Port schema, one model)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from provision.redfish.resources.base import Resource


class NetworkAdapter(Resource):
    """One NIC or HCA."""

    manufacturer: str | None = None
    model: str | None = None
    part_number: str | None = None
    serial_number: str | None = None
    controllers: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def firmware_version(self) -> str | None:
        for c in self.controllers:
            if c.get("FirmwarePackageVersion"):
                return str(c["FirmwarePackageVersion"])
        return None


class NetworkPort(Resource):
    """A port: link technology and speed, from either NetworkPort or Port."""

    link_network_technology: str | None = None
    active_link_technology: str | None = None
    current_speed_gbps: float | None = None
    current_link_speed_mbps: int | None = None
    link_status: str | None = None
    physical_port_number: str | None = None

    @property
    def technology(self) -> str | None:
        """Ethernet, InfiniBand, ..."""
        return self.link_network_technology or self.active_link_technology

    @property
    def speed_gbps(self) -> float | None:
        if self.current_speed_gbps:
            return self.current_speed_gbps
        if self.current_link_speed_mbps:
            return self.current_link_speed_mbps / 1000
        return None
