"""Base of every resource model: Redfish PascalCase names mapped to snake_case fields."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_pascal

from provision.errors import RedfishError


class Model(BaseModel):
    """Frozen, unknown keys ignored, fields named after the Redfish property in PascalCase."""

    model_config = ConfigDict(frozen=True, extra="ignore", populate_by_name=True, alias_generator=to_pascal)

    @classmethod
    def parse(cls, data: Any) -> Self:
        """Build from a Redfish JSON object (one place to catch shape errors: RedfishError, one line)."""
        try:
            return cls.model_validate(data if isinstance(data, dict) else {})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(top level)"
            uri = data.get("@odata.id") if isinstance(data, dict) else None
            about = f"{cls.__name__} {uri}" if isinstance(uri, str) else cls.__name__
            raise RedfishError(f"{about}: unexpected shape at {where}: {first['msg']}") from None


class Status(Model):
    """Redfish Status block."""

    state: str | None = None
    """Enabled, Absent, StandbyOffline, ..."""
    health: str | None = None
    """OK, Warning, Critical."""


class Resource(Model):
    """Fields every Redfish resource has."""

    uri: str = Field(default="", alias="@odata.id")
    """The resource's URI."""
    odata_type: str = Field(default="", alias="@odata.type")
    """Schema type, e.g. #Processor.v1_10_0.Processor."""
    id: str = Field(default="", alias="Id")
    name: str | None = None
    status: Status | None = None

    @field_validator("uri")
    @classmethod
    def _strip(cls, v: str) -> str:
        return v.rstrip("/")

    @property
    def present(self) -> bool:
        """False for slots reported Absent."""
        return self.status is None or self.status.state != "Absent"


def link_ids(value: Any) -> tuple[str, ...]:
    """The @odata.id of each link in a list (or of one link)."""
    items = value if isinstance(value, list) else [value]
    return tuple(str(i["@odata.id"]).rstrip("/") for i in items if isinstance(i, dict) and i.get("@odata.id"))


def dig(obj: Any, *keys: str) -> Any:
    """obj[k1][k2]...; None as soon as a level is missing or not an object (BMCs send odd shapes)."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


_PLACEHOLDERS = frozenset({"", "n/a", "na", "none", "null", "unknown", "not available", "not specified", "-"})


def real_text(value: Any) -> str | None:
    """A BMC's string with padding stripped; None for placeholders ("N/A", "Unknown", "") that say nothing."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return None if text.lower() in _PLACEHOLDERS else text


def texts(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()
