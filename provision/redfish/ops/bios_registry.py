"""Find a BIOS AttributeRegistry and check values against it (existence, type, enum, bounds,
read-only, dependencies that lock an attribute)."""

from __future__ import annotations

import re
from typing import Any

from provision.redfish.connector import ROOT, Connector
from provision.redfish.resources import AttributeRegistry, Bios
from provision.redfish.resources.bios import AttrValue


def fetch_registry(conn: Connector, bios: Bios) -> AttributeRegistry:
    """The registry the Bios names (via /Registries file locations, or Bios/BiosRegistry); when the
    BMC publishes none, one inferred from the current values (names and JSON types only)."""
    stem = re.split(r"[.]", bios.attribute_registry or "BiosAttributeRegistry")[0]
    files = [f for f in conn.members(_registries_uri(conn)) if str(f.get("Id", "")).startswith(stem)
             or str(f.get("Registry", "")).startswith(stem)]
    uris = [str(loc.get("Uri")) for f in files for loc in f.get("Location") or [] if loc.get("Uri")]
    uris.append(f"{bios.uri}/BiosRegistry")
    for uri in dict.fromkeys(uris):
        data = conn.get_optional(uri)
        if data and str(data.get("@odata.type", "")).startswith("#AttributeRegistry"):
            return AttributeRegistry.from_json(data)
    return AttributeRegistry.infer(bios.attributes)


def _registries_uri(conn: Connector) -> str:
    link = (conn.root.get("Registries") or {}).get("@odata.id")
    return str(link) if link else f"{ROOT}/Registries"


def check_value(registry: AttributeRegistry, name: str, value: AttrValue) -> str | None:
    """Why the registry refuses `name = value`; None when acceptable."""
    entry = registry.attributes.get(name)
    if entry is None:
        return "no such attribute in the registry"
    if entry.read_only or entry.immutable:
        return "read-only"
    kind = entry.type
    if kind == "Boolean":
        return None if isinstance(value, bool) else f"must be a boolean, not {value!r}"
    if kind == "Integer":
        if not isinstance(value, int) or isinstance(value, bool):
            return f"must be an integer, not {value!r}"
        if entry.lower_bound is not None and value < entry.lower_bound:
            return f"{value} below the lower bound {entry.lower_bound}"
        if entry.upper_bound is not None and value > entry.upper_bound:
            return f"{value} above the upper bound {entry.upper_bound}"
        return None
    if kind in ("Enumeration", "String", "Password") and not isinstance(value, str):
        return f"must be a string, not {value!r}"
    if kind == "Enumeration" and entry.allowed and value not in entry.allowed:
        return f"{value!r} not one of {list(entry.allowed)}"
    if kind == "String" and isinstance(value, str):
        return _check_string(entry.min_length, entry.max_length, entry.value_expression, value)
    return None


def _check_string(lo: int | None, hi: int | None, expr: str | None, value: str) -> str | None:
    if lo is not None and len(value) < lo:
        return f"shorter than {lo} characters"
    if hi is not None and len(value) > hi:
        return f"longer than {hi} characters"
    if expr and re.fullmatch(expr, value) is None:
        return f"does not match {expr!r}"
    return None


_OPS = {
    "EQU": lambda a, b: a == b, "NEQ": lambda a, b: a != b,
    "GTR": lambda a, b: a > b, "GEQ": lambda a, b: a >= b,
    "LSS": lambda a, b: a < b, "LEQ": lambda a, b: a <= b,
}


def locked_by(registry: AttributeRegistry, name: str, values: dict[str, AttrValue]) -> str | None:
    """A dependency that makes `name` read-only (or hidden/greyed out) given `values`; None if none."""
    for dep in registry.dependencies:
        body = dep.get("Dependency") or {}
        if dep.get("Type", "Map") != "Map" or body.get("MapToAttribute") != name:
            continue
        if body.get("MapToProperty") not in ("ReadOnly", "Immutable", "GrayOut") or body.get("MapToValue") is not True:
            continue
        terms = body.get("MapFrom") or []
        if terms and _holds(terms, values):
            return " and ".join(f"{t.get('MapFromAttribute')} {t.get('MapFromCondition')} {t.get('MapFromValue')!r}"
                                for t in terms)
    return None


def forced_value(registry: AttributeRegistry, name: str, values: dict[str, AttrValue]) -> tuple[bool, AttrValue]:
    """(True, value) when a Map dependency that holds for `values` sets `name`'s CurrentValue (HPE workload
    profiles set and lock NumaGroupSizeOpt, Sriov, ...); a locked attribute whose forced value is the target needs
    no write and is not a refusal. (False, None) when nothing forces it."""
    for dep in registry.dependencies:
        body = dep.get("Dependency") or {}
        if dep.get("Type", "Map") != "Map" or body.get("MapToAttribute") != name:
            continue
        if body.get("MapToProperty") == "CurrentValue" and _holds(body.get("MapFrom") or [], values):
            return True, body.get("MapToValue")
    return False, None


def _holds(terms: list[dict[str, Any]], values: dict[str, AttrValue]) -> bool:
    result: bool | None = None
    for t in terms:
        if t.get("MapFromProperty", "CurrentValue") != "CurrentValue":
            return False
        op = _OPS.get(str(t.get("MapFromCondition")))
        have = values.get(str(t.get("MapFromAttribute")))
        try:
            ok = bool(op and have is not None and op(have, t.get("MapFromValue")))
        except TypeError:
            ok = False
        if result is None:
            result = ok
        elif t.get("MapTerms") == "OR":
            result = result or ok
        else:
            result = result and ok
    return bool(result)
