"""The whole Mockup-Creator captures under tests/fixtures/redfish/full, loaded as {uri: json}.

Some captures hold folders named `*.json` (schema files saved as resources) and a few bodies that are not JSON
(Lenovo's TelemetryService metric reports): only `index.json` files are read, and unparseable ones skipped."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

FULL = Path(__file__).resolve().parents[2] / "fixtures" / "redfish" / "full"
CAPTURES = ("hpe", "lenovo", "nvidia_gh200", "supermicro")


@cache
def _load(name: str) -> dict[str, Any]:
    root = FULL / name
    out: dict[str, Any] = {}
    for f in root.rglob("index.json"):
        if not f.is_file():
            continue
        try:
            data = json.loads(f.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        rel = f.parent.relative_to(root).as_posix()
        out[("/" + rel).rstrip("/") or "/"] = data
    return out


def full_tree(name: str) -> dict[str, Any]:
    """A copy (tests may change it)."""
    return dict(_load(name))


def get(name: str, uri: str) -> Any:
    return _load(name)[uri.rstrip("/")]


def firmware_entries(name: str) -> list[Any]:
    from provision.redfish.resources import SoftwareInventory

    t = _load(name)
    base = "/redfish/v1/UpdateService/FirmwareInventory/"
    return [SoftwareInventory.parse(v) for k, v in sorted(t.items()) if k.startswith(base) and k.count("/") == 5]


def registry(name: str, uri: str) -> Any:
    from provision.redfish.resources import AttributeRegistry

    return AttributeRegistry.from_json(get(name, uri))
