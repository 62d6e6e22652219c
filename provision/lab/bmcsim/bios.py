"""BIOS: current attributes, a pending-settings resource checked against the attribute registry,
pending values applied at the next host reset.

Where a tree ships no AttributeRegistry with entries (the Supermicro capture only links a registry
file it does not contain; public-rackmount1 has none), the registry is inferred from the current
attributes: names and JSON types only. Unknown names, read-only and wrong types are then refused;
enumeration lists and bounds are not known, so values are not checked against them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from provision.lab.bmcsim import events
from provision.lab.bmcsim.messages import message
from provision.lab.bmcsim.sel import Sel
from provision.lab.bmcsim.tree import Json, Resources, SeedTree


@dataclass(frozen=True, slots=True)
class Attr:
    name: str
    kind: str  # Enumeration, Integer, String, Boolean, Password, Any
    read_only: bool = False
    values: frozenset[str] | None = None
    lower: int | None = None
    upper: int | None = None
    min_len: int | None = None
    max_len: int | None = None
    pattern: str | None = None


@dataclass(frozen=True, slots=True)
class BiosLayout:
    """Where one system's BIOS lives in a tree, and its registry (shared by every BMC)."""

    bios: str
    settings: str | None
    registry: dict[str, Attr]
    inferred: bool
    full_copy: bool  # the pending resource carries every attribute (Supermicro SD style)


def layout(seed: SeedTree, system: str) -> BiosLayout | None:
    sys_res = seed.get(system) or {}
    bios = str(sys_res.get("Bios", {}).get("@odata.id", "")).rstrip("/")
    bios_res = seed.get(bios) if bios else None
    if bios_res is None:
        return None
    settings = bios_res.get("@Redfish.Settings", {}).get("SettingsObject", {}).get("@odata.id")
    settings = str(settings).rstrip("/") if settings else None
    registry = _registry_from_tree(seed, str(bios_res.get("AttributeRegistry") or ""), bios_res.get("Attributes") or {})
    inferred = registry is None
    if registry is None:
        registry = _infer(bios_res.get("Attributes") or {})
    pending = (seed.get(settings) or {}).get("Attributes") or {} if settings else {}
    full = bool(pending) and set(pending) >= set(bios_res.get("Attributes") or {})
    return BiosLayout(bios, settings, registry, inferred, full)


def _registry_from_tree(seed: SeedTree, name: str, current: Json) -> dict[str, Attr] | None:
    """The attribute registry the Bios resource names (its `AttributeRegistry`), else the first one found:
    a whole capture holds several (HPE: one per language and store), a pruned one at most one."""
    found: list[tuple[str, Json]] = []
    for uri in seed.uris():
        res = seed.get(uri) or {}
        if str(res.get("@odata.type", "")).startswith("#AttributeRegistry.") and \
                isinstance(res.get("RegistryEntries"), dict):
            found.append((uri, res))
    if not found:
        return None
    named = [res for uri, res in found if name and name in (res.get("Id"), uri.rsplit("/", 1)[-1])]
    entries = (named or [found[0][1]])[0]["RegistryEntries"]
    listed = [a for a in entries.get("Attributes", []) if isinstance(a, dict) and "AttributeName" in a]
    forms = {a["AttributeName"]: _form(a, current.get(a["AttributeName"])) for a in listed}
    votes = [f for f in forms.values() if f is not None]
    usual = "display" if votes.count("display") > votes.count("name") else "name"
    return {a["AttributeName"]: _attr(a, forms[a["AttributeName"]] or usual) for a in listed}


def _enum(a: Json, key: str) -> frozenset[str]:
    values = a.get("Value")
    return frozenset(str(v[key]) for v in values if isinstance(v, dict) and key in v) if isinstance(values, list) \
        else frozenset()


def _form(a: Json, value: Any) -> str | None:
    """Which registry form the BIOS shows an enumeration's current value in: "name" (a ValueName, as the
    DMTF AttributeRegistry schema says it holds), "display" (a ValueDisplayName only: the Supermicro X13
    capture's Bios), None when it does not tell. A write is then judged in that form, as the BMC would."""
    if a.get("Type") != "Enumeration" or not isinstance(value, str):
        return None
    names, shown = _enum(a, "ValueName"), _enum(a, "ValueDisplayName")
    if value in names and value not in shown:
        return "name"
    return "display" if value in shown and value not in names else None


def _attr(a: Json, form: str = "name") -> Attr:
    names = None
    if isinstance(a.get("Value"), list):
        names = _enum(a, "ValueDisplayName" if form == "display" else "ValueName") or _enum(a, "ValueName")
    return Attr(
        name=a["AttributeName"], kind=str(a.get("Type", "Any")),
        read_only=bool(a.get("ReadOnly") or a.get("Immutable")), values=names,
        lower=a.get("LowerBound"), upper=a.get("UpperBound"),
        min_len=a.get("MinLength"), max_len=a.get("MaxLength"), pattern=a.get("ValueExpression"),
    )


def _infer(current: Json) -> dict[str, Attr]:
    kinds = {bool: "Boolean", int: "Integer", str: "String"}
    return {k: Attr(k, kinds.get(type(v), "Any")) for k, v in current.items()}


def check(registry: dict[str, Attr], attrs: Json) -> list[Json]:
    """Base messages for every attribute the registry refuses; empty when all are acceptable."""
    errors: list[Json] = []
    for name, value in attrs.items():
        spec = registry.get(name)
        prop = f"/Attributes/{name}"
        if spec is None:
            errors.append(message("PropertyUnknown", name, related=[prop]))
        elif spec.read_only:
            errors.append(message("PropertyNotWritable", name, related=[prop]))
        else:
            err = _check_value(spec, value)
            if err:
                errors.append(message(err, _show(value), name, related=[prop]))
    return errors


def _check_value(spec: Attr, value: Any) -> str | None:
    if spec.kind == "Any" or value is None:
        return None
    if spec.kind == "Boolean":
        return None if isinstance(value, bool) else "PropertyValueTypeError"
    if spec.kind == "Integer":
        if not isinstance(value, int) or isinstance(value, bool):
            return "PropertyValueTypeError"
        low_ok = spec.lower is None or value >= spec.lower
        return None if low_ok and (spec.upper is None or value <= spec.upper) else "PropertyValueOutOfRange"
    if not isinstance(value, str):
        return "PropertyValueTypeError"
    if spec.kind == "Enumeration":
        return None if spec.values is None or value in spec.values else "PropertyValueNotInList"
    return _check_string(spec, value)


def _check_string(spec: Attr, value: str) -> str | None:
    if spec.max_len is not None and len(value) > spec.max_len:
        return "PropertyValueOutOfRange"
    if spec.min_len is not None and len(value) < spec.min_len:
        return "PropertyValueOutOfRange"
    if spec.pattern and spec.kind != "Password" and re.fullmatch(spec.pattern, value) is None:
        return "PropertyValueOutOfRange"
    return None


def _show(value: Any) -> str:
    return "******" if isinstance(value, str) and len(value) > 64 else str(value)


class Bios:
    """One system's BIOS state in one BMC."""

    __slots__ = ("_defaults", "_node", "_res", "_sel", "layout")

    def __init__(self, node: str, res: Resources, sel: Sel, lay: BiosLayout) -> None:
        self._node = node
        self._res = res
        self._sel = sel
        self.layout = lay
        self._defaults = dict((res.get(lay.bios) or {}).get("Attributes") or {})
        """The factory values: the attributes the BMC started with (what Bios.ResetBios goes back to)."""

    def reset_to_defaults(self) -> None:
        """Bios.ResetBios: the factory values staged in the pending resource, applied at the next host reset
        (as Dell, HPE and Lenovo document it); without a pending resource they are current at once."""
        current = (self._res.get(self.layout.bios) or {}).get("Attributes") or {}
        changed = {k: v for k, v in self._defaults.items() if current.get(k) != v}
        if self.layout.settings:
            settings = self._res.mutable(self.layout.settings)
            settings["Attributes"] = {**current, **self._defaults} if self.layout.full_copy else changed
        else:
            self._res.mutable(self.layout.bios).setdefault("Attributes", {}).update(self._defaults)
        events.record(self._node, "bios.reset", names=sorted(changed))
        self._sel.add(f"BIOS reset to defaults requested ({len(changed)} attributes differ)", names=sorted(changed))

    def patch_settings(self, body: Json) -> list[Json]:
        """Validate and stage a PATCH of the pending resource; returns errors (nothing staged if any)."""
        attrs = body.get("Attributes")
        others = [k for k in body if k != "Attributes" and not k.startswith("@")]
        errors = [message("PropertyUnknown", k, related=[f"/{k}"]) for k in others]
        if not isinstance(attrs, dict):
            errors.append(message("PropertyMissing", "Attributes", related=["/Attributes"]))
            return errors
        errors += check(self.layout.registry, attrs)
        if errors:
            return errors
        target = self.layout.settings or self.layout.bios
        self._res.mutable(target).setdefault("Attributes", {}).update(attrs)
        events.record(self._node, "bios.staged", names=sorted(attrs))
        return []

    def pending(self) -> Json:
        if not self.layout.settings:
            return {}
        current = (self._res.get(self.layout.bios) or {}).get("Attributes") or {}
        staged = (self._res.get(self.layout.settings) or {}).get("Attributes") or {}
        return {k: v for k, v in staged.items() if current.get(k) != v}

    def apply_pending(self, stuck: bool) -> None:
        """At a host reset: pending values become current (unless the stuck-pending fault is on)."""
        pending = self.pending()
        if not pending or not self.layout.settings:
            return
        if stuck:
            self._sel.add("BIOS settings not applied at reset (fault bios-stuck-pending)",
                          severity="Warning", names=sorted(pending))
            return
        bios = self._res.mutable(self.layout.bios)
        bios.setdefault("Attributes", {}).update(pending)
        settings = self._res.mutable(self.layout.settings)
        settings["Attributes"] = dict(bios["Attributes"]) if self.layout.full_copy else {}
        self._sel.add(f"BIOS settings applied at host reset ({len(pending)} attributes)",
                      names=sorted(pending))
