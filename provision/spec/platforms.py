"""Platforms: what a node is (its identity, as its BMC reads it) and which platforms a profile or a
firmware image is for (patterns), so nothing is ever sent to a board it was not built for.

A platform pattern is a mapping of shell-style globs (fnmatch: `*`, `?`, `[...]`), matched whole and
case-insensitively:

    platforms:
      - {manufacturer: Supermicro, model: SYS-821GE-TNHR}      # Manufacturer + Model
      - {manufacturer: Lenovo, sku: "7Z23*"}                   # Manufacturer + SKU (machine type)

`manufacturer` and at least one of `model`/`sku` are required; every field given must match. They are
matched against the ComputerSystem's Manufacturer, Model and SKU, or, where the system gives one empty or
not at all, its chassis' (a GH200's System_0 names neither). A value the BMC does not give never fits.

A firmware image states what it applies to:

    applies_to:
      platforms: [{manufacturer: Supermicro, model: SYS-821GE-TNHR}]
      entries:                          # the FirmwareInventory entries it updates
        - {id: BIOS, related_item: "/redfish/v1/Systems/*/Bios"}
        - {id: "HGX_FW_GPU_SXM_*", software_id: "0x0020", manufacturer: NVIDIA}

An entry selector's `id` must match the entry's Id; `software_id`, `manufacturer` and `related_item` (any of
the entry's RelatedItem URIs) are checked where the BMC gives them. `applies_to: any` is the operator's word
that an image fits every platform (its entries are then found by the vendor plugin's rules).
"""

from __future__ import annotations

import fnmatch
import re
from enum import StrEnum
from functools import lru_cache
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from provision.errors import NotApplicable


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


def check_glob(value: str) -> str:
    """A glob pattern: not empty, one printable line, every `[` closed (fnmatch would take it literally)."""
    if not value:
        raise ValueError("empty pattern")
    if not value.isprintable():
        raise ValueError(f"pattern {value!r} holds a control character")
    depth = 0
    for ch in value:
        if ch == "[":
            if depth:
                raise ValueError(f"pattern {value!r}: '[' inside a [...] set")
            depth = 1
        elif ch == "]" and depth:
            depth = 0
    if depth:
        raise ValueError(f"pattern {value!r}: '[' is never closed")
    return value


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(fnmatch.translate(pattern.casefold()))


def glob_fits(pattern: str, value: str | None) -> bool:
    """Whole-string, case-insensitive glob match; a value not given (None or empty) never fits."""
    return bool(value) and _compiled(pattern).match(str(value).strip().casefold()) is not None


def literal(text: str) -> str:
    """A glob that matches exactly `text` (its `*`, `?` and `[` taken literally)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


# ---- identity ------------------------------------------------------------------------------------
class Board(_Frozen):
    """A ComputerSystem or a Chassis as the BMC names it."""

    uri: str | None = None
    manufacturer: str | None = None
    model: str | None = None
    sku: str | None = None
    part_number: str | None = None
    serial_number: str | None = None
    uuid: str | None = None


class BmcIdentity(_Frozen):
    """The node's BMC (its Manager)."""

    uri: str | None = None
    model: str | None = None
    firmware_version: str | None = None


class DeviceKind(StrEnum):
    """What answers as the node (provision/redfish/ops/identity.py device_kind)."""

    COMPUTE = "compute"
    """A host with CPUs (ProcessorSummary.Count above 0, or not stated)."""
    DPU = "dpu"
    """A DPU's or SmartNIC's BMC: SystemType DPU, or no host CPUs and a Card chassis of the system's Model."""
    SWITCH = "switch"
    """A switch tray: no host CPUs, and Fabrics with members."""
    DEVICE = "device"
    """No host CPUs, and not recognised as either."""


KIND_TEXT = {DeviceKind.DPU: "a DPU", DeviceKind.SWITCH: "a switch tray", DeviceKind.DEVICE: "a device"}


class PlatformIdentity(_Frozen):
    """What a node is, read from its BMC: the host system, its chassis and the BMC itself."""

    system: Board
    chassis: Board | None = None
    bmc: BmcIdentity | None = None
    kind: DeviceKind = DeviceKind.COMPUTE
    host_cpus: int | None = Field(default=None, description="ProcessorSummary.Count (None: not stated)")

    def _field(self, name: str) -> str | None:
        own = getattr(self.system, name)
        if own:
            return str(own)
        other = getattr(self.chassis, name) if self.chassis is not None else None
        return str(other) if other else None

    @property
    def manufacturer(self) -> str | None:
        return self._field("manufacturer")

    @property
    def model(self) -> str | None:
        return self._field("model")

    @property
    def sku(self) -> str | None:
        return self._field("sku")

    @property
    def name(self) -> str:
        """`Supermicro SYS-821GE-TNHR`, for messages ('unknown' for what the BMC does not say)."""
        return f"{self.manufacturer or 'unknown manufacturer'} {self.model or self.sku or 'unknown model'}"

    @property
    def described(self) -> str:
        """The name, and what it is when it is not a compute node: `..., a switch tray with no host CPUs`."""
        if self.kind is DeviceKind.COMPUTE:
            return self.name
        return f"{self.name}, {KIND_TEXT[self.kind]} with no host CPUs"


# ---- patterns ------------------------------------------------------------------------------------
class PlatformPattern(_Frozen):
    """Manufacturer + Model and/or SKU globs (module docstring)."""

    manufacturer: str
    model: str | None = None
    sku: str | None = None

    @field_validator("manufacturer", "model", "sku")
    @classmethod
    def _glob(cls, value: str | None) -> str | None:
        return None if value is None else check_glob(value)

    @model_validator(mode="after")
    def _model_or_sku(self) -> PlatformPattern:
        if self.model is None and self.sku is None:
            raise ValueError("a platform needs a model or a sku pattern beside its manufacturer")
        return self

    def fits(self, identity: PlatformIdentity) -> bool:
        return (glob_fits(self.manufacturer, identity.manufacturer)
                and (self.model is None or glob_fits(self.model, identity.model))
                and (self.sku is None or glob_fits(self.sku, identity.sku)))

    def __str__(self) -> str:
        return " ".join(x for x in (self.manufacturer, self.model, f"SKU {self.sku}" if self.sku else None) if x)


def _any_or(value: Any) -> Any:
    """`any` (the word) for 'every platform'."""
    if isinstance(value, str) and value.strip().lower() == "any":
        return {"any_platform": True}
    return value


class Platforms(_Frozen):
    """A profile's `platforms:`: a list of patterns, or `any`."""

    any_platform: bool = False
    patterns: tuple[PlatformPattern, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, value: Any) -> Any:
        value = _any_or(value)
        return {"patterns": value} if isinstance(value, list | tuple) else value

    @model_validator(mode="after")
    def _some(self) -> Platforms:
        if not self.any_platform and not self.patterns:
            raise ValueError("name at least one platform ({manufacturer, model or sku}), or say `any`")
        return self

    def fits(self, identity: PlatformIdentity | None) -> bool:
        """Whether the identity fits; an identity not read (None) fits only `any`."""
        if self.any_platform:
            return True
        return identity is not None and any(p.fits(identity) for p in self.patterns)

    def __str__(self) -> str:
        return "any platform" if self.any_platform else " or ".join(str(p) for p in self.patterns)


class EntrySelector(_Frozen):
    """Which FirmwareInventory entries an image updates (module docstring)."""

    id: str
    software_id: str | None = None
    manufacturer: str | None = None
    related_item: str | None = None

    @field_validator("id", "software_id", "manufacturer", "related_item")
    @classmethod
    def _glob(cls, value: str | None) -> str | None:
        return None if value is None else check_glob(value)

    def matches(self, entry_id: str, software_id: str | None, manufacturer: str | None,
                related: tuple[str, ...]) -> bool:
        if not glob_fits(self.id, entry_id):
            return False
        if self.software_id is not None and software_id and not glob_fits(self.software_id, software_id):
            return False
        if self.manufacturer is not None and manufacturer and not glob_fits(self.manufacturer, manufacturer):
            return False
        return not (self.related_item is not None and related
                    and not any(glob_fits(self.related_item, r) for r in related))


class AppliesTo(_Frozen):
    """An image's `applies_to:` (module docstring), or `any`."""

    any_platform: bool = False
    platforms: tuple[PlatformPattern, ...] = ()
    entries: tuple[EntrySelector, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _shape(cls, value: Any) -> Any:
        return _any_or(value)

    @model_validator(mode="after")
    def _some(self) -> AppliesTo:
        if not self.any_platform and not self.platforms:
            raise ValueError("applies_to needs platforms: [{manufacturer, model or sku}, ...], or say "
                             "`applies_to: any`")
        return self

    def fits(self, identity: PlatformIdentity | None) -> bool:
        """Whether the image is for this node; an identity not read (None) fits only `any`."""
        if self.any_platform:
            return True
        return identity is not None and any(p.fits(identity) for p in self.platforms)

    def describe(self) -> str:
        return "any platform" if self.any_platform else " or ".join(str(p) for p in self.platforms)


class _HasTarget(Protocol):
    @property
    def applies_to(self) -> AppliesTo | None: ...


_ImageT = TypeVar("_ImageT", bound=_HasTarget)


def missing_applies_to(value: AppliesTo | None) -> AppliesTo:
    """The validator of an image's required `applies_to` (None: not given)."""
    if value is None:
        raise ValueError("missing: say which platforms the image is for (applies_to: {platforms: [...], "
                         "entries: [...]}), or `applies_to: any`")
    return value


def entries_named(image: _ImageT, by_bmc: bool) -> _ImageT:
    """An image flashed through the BMC for named platforms must name the entries it updates (a name
    fragment is not enough to send a board its firmware)."""
    target = image.applies_to
    if by_bmc and target is not None and not target.any_platform and not target.entries:
        raise ValueError("applies_to.entries: name the FirmwareInventory entries the image updates "
                         "([{id, software_id, manufacturer, related_item}]), or say `applies_to: any`")
    return image


def refuse_profile(node: str, profile: str, platforms: Platforms, identity: PlatformIdentity | None) -> None:
    """NotApplicable, one line, when the node's identity fits none of the profile's platforms (an identity
    that could not be read fits only `platforms: any`)."""
    if identity is not None and identity.kind is not DeviceKind.COMPUTE:  # a profile describes a compute node
        raise NotApplicable(f"{node} is {a_platform(identity.described)}; profile {profile} describes compute "
                            f"nodes ({platforms}): refused, nothing written")
    if platforms.fits(identity):
        return
    what = f"is {a_platform(identity.name)}" if identity is not None else "could not be identified"
    raise NotApplicable(f"{node} {what}; profile {profile} describes {platforms}: refused, nothing written")


def a_platform(name: str) -> str:
    """`a Supermicro ...`, `an HPE ...`, `an NVIDIA ...` (an all-capitals word is read letter by letter)."""
    word = name.split(" ", 1)[0]
    vowel_sound = "AEFHILMNORSX" if word.isupper() and len(word) > 1 else "AEIOU"
    return ("an " if word[:1].upper() in vowel_sound else "a ") + name
