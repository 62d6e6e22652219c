"""BIOS current settings, its pending-settings pointer and the attribute registry."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from provision.redfish.resources.base import Model, Resource, dig, text_or_none, texts

AttrValue = str | int | bool | float | None


class Bios(Resource):
    """Bios (current) or its settings object (pending)."""

    attribute_registry: str | None = None
    attributes: dict[str, AttrValue] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict, alias="@Redfish.Settings")
    etag: str | None = Field(default=None, alias="@odata.etag")

    @property
    def settings_uri(self) -> str | None:
        uri = text_or_none(dig(self.settings, "SettingsObject", "@odata.id"))
        return uri.rstrip("/") if uri else None

    @property
    def supported_apply_times(self) -> tuple[str, ...]:
        return texts(self.settings.get("SupportedApplyTimes"))


class RegistryValue(Model):
    """One enumeration value (DMTF AttributeRegistry): ValueName is what the attribute holds,
    ValueDisplayName what a person reads."""

    value_name: str
    value_display_name: str | None = None


class RegistryAttribute(Model):
    """One attribute as the AttributeRegistry defines it."""

    attribute_name: str
    display_name: str | None = None
    """What BIOS setup shows a person (the registry's DisplayName)."""
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
        listed = dig(data, "RegistryEntries", "Attributes")
        attrs = {str(a["AttributeName"]): RegistryAttribute.parse(a) for a in listed or []
                 if isinstance(listed, list) and isinstance(a, dict) and a.get("AttributeName")}
        deps = dig(data, "RegistryEntries", "Dependencies")
        deps = [d for d in deps if isinstance(d, dict)] if isinstance(deps, list) else []
        return cls(Id=str(data.get("Id", "")), attributes=attrs, dependencies=deps)

    def spelling(self, name: str, value: AttrValue) -> AttrValue:
        """`value` as this registry spells it for enumeration `name`: a value given as one of its
        ValueDisplayNames (the AttributeRegistry schema's human form) becomes that entry's ValueName;
        anything else is returned as it is (and judged by bios_registry.check_value)."""
        entry = self.attributes.get(name)
        if entry is None or entry.type != "Enumeration" or not isinstance(value, str) or value in entry.allowed:
            return value
        for v in entry.value:
            if v.value_display_name is not None and v.value_display_name == value:
                return v.value_name
        return value

    @classmethod
    def infer(cls, current: dict[str, AttrValue]) -> AttributeRegistry:
        kinds = {bool: "Boolean", int: "Integer", float: "Number", str: "String"}
        attrs = {k: RegistryAttribute(AttributeName=k, Type=kinds.get(type(v), "Any")) for k, v in current.items()}
        return cls(Id="inferred", attributes=attrs, inferred=True)
