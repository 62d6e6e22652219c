"""BIOS current settings, its pending-settings pointer and the attribute registry."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from provision.redfish.resources.base import Model, Resource

AttrValue = str | int | bool | float | None


class Bios(Resource):
    """Bios (current) or its settings object (pending)."""

    attribute_registry: str | None = None
    attributes: dict[str, AttrValue] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict, alias="@Redfish.Settings")
    etag: str | None = Field(default=None, alias="@odata.etag")

    @property
    def settings_uri(self) -> str | None:
        obj = self.settings.get("SettingsObject") or {}
        uri = obj.get("@odata.id")
        return str(uri).rstrip("/") if uri else None

    @property
    def supported_apply_times(self) -> tuple[str, ...]:
        return tuple(self.settings.get("SupportedApplyTimes") or ())


class RegistryValue(Model):
    value_name: str


class RegistryAttribute(Model):
    """One attribute as the AttributeRegistry defines it."""

    attribute_name: str
    type: str = "String"
    read_only: bool = False
    immutable: bool = False
    hidden: bool = False
    reset_required: bool | None = None
    value: list[RegistryValue] = Field(default_factory=list)
    lower_bound: int | None = None
    upper_bound: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    value_expression: str | None = None

    @property
    def allowed(self) -> tuple[str, ...]:
        return tuple(v.value_name for v in self.value)


class AttributeRegistry(Model):
    """A BIOS AttributeRegistry (only the parts validation needs)."""

    id: str = Field(default="", alias="Id")
    attributes: dict[str, RegistryAttribute] = Field(default_factory=dict)
    dependencies: list[dict[str, Any]] = Field(default_factory=list)
    inferred: bool = False
    """True when built from current values (names and JSON types only), not from a real registry."""

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AttributeRegistry:
        entries = data.get("RegistryEntries") or {}
        attrs = {a["AttributeName"]: RegistryAttribute.parse(a) for a in entries.get("Attributes") or []
                 if isinstance(a, dict) and a.get("AttributeName")}
        return cls(Id=str(data.get("Id", "")), attributes=attrs, dependencies=entries.get("Dependencies") or [])

    @classmethod
    def infer(cls, current: dict[str, AttrValue]) -> AttributeRegistry:
        kinds = {bool: "Boolean", int: "Integer", float: "Number", str: "String"}
        attrs = {k: RegistryAttribute(AttributeName=k, Type=kinds.get(type(v), "Any")) for k, v in current.items()}
        return cls(Id="inferred", attributes=attrs, inferred=True)
