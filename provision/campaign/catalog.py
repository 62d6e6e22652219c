"""The campaign file: a baseline catalog of firmware components, targets and a policy.

    name: ml_prod_v4_2026q4
    targets: {group: ml_prod_v4}
    components:
      - component: bmc
        version: 11.02.05
        image: ../firmware/smc_x13_bmc_11.02.05.bin   # relative to this file, or an http(s) URL
        sha256: 2f23...
        apply_time: Immediate
        needs_host_reset: false
        after: []                                     # components that must be applied first
        match: {supermicro: {id: "^BMC$"}, default: {name: "(?i)bmc"}}
        applies_to:                                   # required: the platforms and entries, or `any`
          platforms: [{manufacturer: Supermicro, model: SYS-821GE-TNHR}]
          entries: [{id: BMC, related_item: "/redfish/v1/Managers/*"}]
    policy: {waves: {canary: 1, batch_size: 4}, halt: {max_failures: 1}}

Every problem is one InputError line naming the file and the key.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from provision.campaign.policy import Policy
from provision.errors import InputError
from provision.spec.images import ImageChecks
from provision.spec.platforms import AppliesTo
from provision.spec.strict_yaml import load_strict
from provision.spec.validation import describe
from provision.spec.versions import VersionScheme

_VERSION_RE = re.compile(r"^[0-9A-Za-z]+(?:[.\-_][0-9A-Za-z]+)*$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


class Match(_Frozen):
    """How a component is found among a BMC's FirmwareInventory members (regexes, re.search).

    Every pattern given must match: `id` over the member Id, `name` over its Name, `either` over
    Id or Name. A bare string is shorthand for `either`.
    """

    id: str | None = None
    name: str | None = None
    either: str | None = None

    @field_validator("id", "name", "either")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"bad regular expression {value!r}: {exc}") from None
        return value

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"either": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _something(self) -> Match:
        if self.id is None and self.name is None and self.either is None:
            raise ValueError("give an id, name or either pattern")
        return self

    def id_may_match(self, member_id: str) -> bool:
        """Can a member with this Id match at all (decides whether it must be fetched)?"""
        return self.id is None or _found(self.id, member_id)

    def matches(self, member_id: str, member_name: str) -> bool:
        return (
            self.id_may_match(member_id)
            and (self.name is None or _found(self.name, member_name))
            and (self.either is None or _found(self.either, member_id) or _found(self.either, member_name))
        )


@functools.lru_cache(maxsize=65536)
def _found(pattern: str, text: str) -> bool:
    """re.search, remembered: a fleet of one model asks the same hundred Ids again on every BMC."""
    return re.search(pattern, text) is not None


class Component(ImageChecks, _Frozen):
    """One firmware component of the baseline (validated as the spec's firmware lines are: spec.images)."""

    component: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    version: str
    image: str = Field(min_length=1)
    sha256: str
    apply_time: Literal["Immediate", "OnReset"] | None = Field(
        default=None, description="unset: the BMC's choice among what it offers, OnReset first (as in the spec)")
    needs_host_reset: bool = True
    order: Annotated[int, Field(ge=0)] = 50
    after: tuple[str, ...] = ()
    match: dict[str, Match] = Field(default_factory=dict, description="vendor (or 'default') -> Match")
    version_scheme: VersionScheme | None = Field(
        default=None, description="dotted, hex-dotted, date or opaque; unset: the scheme both versions read in")
    applies_to: AppliesTo | None = Field(
        default=None, validate_default=True,
        description="The platforms the image is for and the FirmwareInventory entries it updates, or `any` "
        "(provision/spec/platforms.py); required")

    entries_first = True

    @staticmethod
    def check_image_version(value: str) -> str:
        """A campaign's versions: letters and digits in parts separated by `.`, `-` or `_` (looser than the
        spec's, whose first part is digits and whose separators are `.` and `-`)."""
        if not _VERSION_RE.match(value):
            raise ValueError(f"{value!r} is not a version")
        return value

    @property
    def is_url(self) -> bool:
        return self.image.startswith(("http://", "https://"))

    def matcher(self, vendor: str) -> Match | None:
        """The match rule for `vendor` (lower case), else the default rule, else None."""
        return self.match.get(vendor.lower()) or self.match.get("default")


class Targets(_Frozen):
    """Which inventory hosts the campaign covers: a group and/or host patterns (default: every host)."""

    group: str | None = None
    hosts: tuple[str, ...] = ()


class Catalog(_Frozen):
    """A campaign file, validated."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    description: str = ""
    targets: Targets = Targets()
    components: tuple[Component, ...] = Field(min_length=1)
    policy: Policy = Policy()

    @model_validator(mode="after")
    def _components_consistent(self) -> Catalog:
        names = [c.component for c in self.components]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"component(s) listed twice: {dupes}")
        for comp in self.components:
            unknown = sorted(set(comp.after) - set(names))
            if unknown:
                raise ValueError(f"component {comp.component}: after names unknown component(s) {unknown}")
        apply_order(self.components)  # raises on a cycle
        return self

    def ordered(self) -> list[Component]:
        return list(self._order)

    @functools.cached_property
    def _order(self) -> tuple[Component, ...]:  # asked for on every observation: computed once
        return tuple(apply_order(self.components))

    def component(self, name: str) -> Component:
        for comp in self.components:
            if comp.component == name:
                return comp
        raise KeyError(name)


def apply_order(components: tuple[Component, ...] | list[Component]) -> list[Component]:
    """Topological order honouring `after`, ties broken by `order` then name; ValueError on a cycle."""
    remaining = {c.component: c for c in components}
    done: list[Component] = []
    while remaining:
        placed = {c.component for c in done}
        ready = [c for c in remaining.values() if set(c.after) <= placed]
        if not ready:
            raise ValueError(f"order constraints form a cycle among {sorted(remaining)}")
        ready.sort(key=lambda c: (c.order, c.component))
        done.append(ready[0])
        del remaining[ready[0].component]
    return done


def load_catalog(path: Path) -> Catalog:
    """Read and validate a campaign file; check local images exist and match their sha256."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: campaign file does not exist")
    raw = load_strict(path)
    if not isinstance(raw, dict):
        raise InputError(f"{path}: a campaign file must be a mapping")
    try:
        catalog = Catalog.model_validate(raw)
    except ValidationError as exc:
        raise InputError(f"{path}: {describe(exc, name_loc=lambda loc: _loc_parts(loc, raw))}") from None
    for comp in catalog.components:
        _check_image(path, comp)
    return catalog


def image_path(campaign_file: Path, comp: Component) -> Path:
    image = Path(comp.image)
    return image if image.is_absolute() else Path(campaign_file).parent / image


def _check_image(path: Path, comp: Component) -> None:
    if comp.is_url:
        return
    image = image_path(path, comp)
    where = f"{path}: components.{comp.component}.image"
    if not image.is_file():
        raise InputError(f"{where}: file {image} does not exist")
    digest = file_digest(image, where)
    if digest != comp.sha256:
        raise InputError(f"{where}: sha256 of {image} is {digest}, the catalog says {comp.sha256}")


def file_digest(path: Path, where: str = "") -> str:
    """The file's sha256; an unreadable file is an InputError naming it."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:
        raise InputError(f"{where + ': ' if where else ''}cannot read {path}: {exc.strerror}") from None


def _loc_parts(loc: tuple[int | str, ...], raw: dict[str, Any]) -> list[str]:
    """A component named by its `component` key rather than its list index, when it has one."""
    parts = [str(p) for p in loc]
    comps = raw.get("components")
    if len(loc) > 1 and loc[0] == "components" and isinstance(loc[1], int) and isinstance(comps, list):
        item = comps[loc[1]] if loc[1] < len(comps) else None
        if isinstance(item, dict) and isinstance(item.get("component"), str):
            parts[1] = item["component"]
    return parts
