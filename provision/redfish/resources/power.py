"""Chassis Power and Thermal: PSUs, redundancy, temperatures, fans."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from provision.redfish.resources.base import Model, Resource, real_text


class PowerSupply(Model):
    """One PSU."""

    name: str | None = None
    member_id: str | None = None
    model: str | None = None
    manufacturer: str | None = None
    serial_number: str | None = None
    part_number: str | None = None
    power_capacity_watts: float | None = None
    firmware_version: str | None = None
    status: dict[str, Any] = Field(default_factory=dict)

    @field_validator("manufacturer", "serial_number", "part_number", mode="before")
    @classmethod
    def _text(cls, v: Any) -> str | None:
        return real_text(v)

    @property
    def present(self) -> bool:
        return self.status.get("State") != "Absent"


class Redundancy(Model):
    """A redundancy group."""

    name: str | None = None
    mode: str | None = None
    min_num_needed: int | None = None
    max_num_supported: int | None = None
    status: dict[str, Any] = Field(default_factory=dict)


class PowerControl(Model):
    """One PowerControl entry: what the chassis draws (Power.v1 PowerConsumedWatts, PowerMetrics)."""

    name: str | None = None
    power_consumed_watts: float | None = None
    power_capacity_watts: float | None = None
    power_metrics: dict[str, Any] = Field(default_factory=dict)

    @property
    def interval_max_watts(self) -> float | None:
        """PowerMetrics.MaxConsumedWatts: the highest draw over the BMC's averaging interval."""
        value = self.power_metrics.get("MaxConsumedWatts")
        return float(value) if isinstance(value, int | float) else None


class Power(Resource):
    """Chassis Power (the deprecated-but-universal schema)."""

    power_supplies: list[PowerSupply] = Field(default_factory=list)
    redundancy: list[Redundancy] = Field(default_factory=list)
    power_control: list[PowerControl] = Field(default_factory=list)


class Temperature(Model):
    name: str | None = None
    reading_celsius: float | None = None
    upper_threshold_critical: float | None = None
    upper_threshold_non_critical: float | None = None
    physical_context: str | None = None


class Fan(Model):
    name: str | None = None
    reading: float | None = None
    reading_units: str | None = None
    status: dict[str, Any] = Field(default_factory=dict)


class Thermal(Resource):
    """Chassis Thermal."""

    temperatures: list[Temperature] = Field(default_factory=list)
    fans: list[Fan] = Field(default_factory=list)
    redundancy: list[Redundancy] = Field(default_factory=list)


def power_from_subsystem(uri: str, supplies: list[dict[str, Any]], groups: Any = None,
                         consumed_watts: float | None = None) -> Power:
    """PowerSubsystem/PowerSupplies (Redfish 2020.4+) in the shape of the legacy Power resource; its
    PowerSupplyRedundancy groups (MinNeededInGroup, MaxSupportedInGroup, RedundancyType) as Redundancy, and
    the chassis' EnvironmentMetrics power reading, when it has one, as its PowerControl."""
    redundancy = _groups("PowerSupplyRedundancy", groups)
    control = [] if consumed_watts is None else [{"Name": "EnvironmentMetrics", "PowerConsumedWatts": consumed_watts}]
    return Power.parse({"@odata.id": uri, "Id": "PowerSubsystem", "PowerSupplies": supplies, "Redundancy": redundancy,
                        "PowerControl": control})


def _groups(name: str, groups: Any) -> list[dict[str, Any]]:
    """Redfish RedundantGroup entries (RedundancyType, MinNeededInGroup, MaxSupportedInGroup, Status) in the
    shape of the legacy Redundancy objects."""
    return [{"Name": name, "Mode": g.get("RedundancyType"), "MinNumNeeded": g.get("MinNeededInGroup"),
             "MaxNumSupported": g.get("MaxSupportedInGroup"), "Status": g.get("Status") or {}}
            for g in (groups if isinstance(groups, list) else []) if isinstance(g, dict)]


def thermal_from_subsystem(uri: str, metrics: dict[str, Any] | None, fans: list[dict[str, Any]],
                           groups: Any = None) -> Thermal:
    """ThermalSubsystem (ThermalMetrics readings and Fans) in the shape of the legacy Thermal resource; its
    FanRedundancy groups as Redundancy (none of the four whole captures fills it; the schema's shape)."""
    temps = []
    for r in (metrics or {}).get("TemperatureReadingsCelsius") or []:
        if not isinstance(r, dict):
            continue
        source = str(r.get("DataSourceUri") or r.get("@odata.id") or "")
        temps.append({"Name": r.get("DeviceName") or source.rsplit("/", 1)[-1] or None,
                      "ReadingCelsius": r.get("Reading"), "PhysicalContext": r.get("PhysicalContext")})
    out_fans = []
    for f in fans:
        raw = f.get("SpeedPercent")
        speed: dict[str, Any] = raw if isinstance(raw, dict) else {}
        rpm = speed.get("SpeedRPM")
        out_fans.append({"Name": f.get("Name"), "Reading": rpm if rpm is not None else speed.get("Reading"),
                         "ReadingUnits": "RPM" if rpm is not None else "Percent", "Status": f.get("Status") or {}})
    return Thermal.parse({"@odata.id": uri, "Id": "ThermalSubsystem", "Temperatures": temps, "Fans": out_fans,
                          "Redundancy": _groups("FanRedundancy", groups)})
