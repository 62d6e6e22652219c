"""Fuzzing of every Redfish resource model: parse() of random and mutated JSON from the real captured trees
(tests/fixtures/redfish) builds a model or raises RedfishError, and every property of what parsed answers."""

from __future__ import annotations

import contextlib
import copy
import json
from functools import cache
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from provision.errors import RedfishError
from provision.redfish import resources as r
from provision.redfish.resources.base import Model
from tests.conftest import ROOT

TREES = ROOT / "tests" / "fixtures" / "redfish"

# @odata.type name -> the model that parses it
MODELS: dict[str, type[Model]] = {
    "ServiceRoot": r.ServiceRoot, "ComputerSystem": r.ComputerSystem, "Processor": r.Processor,
    "Memory": r.Memory, "Storage": r.Storage, "Drive": r.Drive, "Volume": r.Volume, "Bios": r.Bios,
    "SoftwareInventory": r.SoftwareInventory, "UpdateService": r.UpdateService, "LogEntry": r.LogEntry,
    "NetworkAdapter": r.NetworkAdapter, "NetworkPort": r.NetworkPort, "Port": r.NetworkPort,
    "PCIeDevice": r.PCIeDevice, "Power": r.Power, "Thermal": r.Thermal, "Task": r.Task,
}
NESTED: dict[str, type[Model]] = {"PowerSupplies": r.PowerSupply, "Redundancy": r.Redundancy,
                                  "Temperatures": r.Temperature, "Fans": r.Fan, "Boot": r.Boot, "Status": r.Status}


@cache
def seeds() -> dict[str, list[dict[str, Any]]]:
    """Real captured resources grouped by model name (at most 6 per model, to keep the search focused)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(TREES.rglob("*.json")):
        if not path.is_file():  # a mockup-creator capture has folders named `*.json` (JsonSchemas, RegistryStore)
            continue
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(doc, dict):
            continue
        kind = str(doc.get("@odata.type", "")).lstrip("#").split(".")[0]
        if kind in MODELS and len(out.setdefault(kind, [])) < 6:
            out[kind].append(doc)
        if kind == "AttributeRegistry" and len(out.setdefault(kind, [])) < 2:
            out[kind].append(doc)
    return out


def test_every_model_has_real_seeds() -> None:
    found = seeds()
    missing = sorted(k for k in ("ServiceRoot", "ComputerSystem", "Processor", "Memory", "Drive", "Bios",
                                 "SoftwareInventory", "UpdateService", "Power", "Thermal", "AttributeRegistry")
                     if not found.get(k))
    assert not missing, f"no captured resource of type {missing} in {TREES}"


def _parse(kind: str, data: Any) -> Any:
    if kind == "AttributeRegistry":
        return r.AttributeRegistry.from_json(data) if isinstance(data, dict) else r.AttributeRegistry.parse(data)
    return MODELS[kind].parse(data)


def _touch(obj: Any) -> None:
    """Read every field and property of a parsed model (and of nested models)."""
    if isinstance(obj, Model):
        for name in type(obj).model_fields:
            _touch(getattr(obj, name))
        for cls in type(obj).__mro__:  # the project's own properties, not pydantic's
            if cls.__module__.startswith("provision."):
                for name, attr in vars(cls).items():
                    if isinstance(attr, property):
                        getattr(obj, name)
        if isinstance(obj, r.UpdateService):
            obj.oem_action("#SmcUpdateService.Install")
    elif isinstance(obj, list | tuple):
        for item in obj:
            _touch(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            _touch(item)


def _check(kind: str, data: Any) -> None:
    try:
        model = _parse(kind, data)
    except RedfishError as exc:
        assert str(exc).strip() and "\n" not in str(exc), repr(exc)
        return
    _touch(model)


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(allow_nan=False),
                         st.text(max_size=12), st.sampled_from(["/redfish/v1/Systems/1", "Completed", "Exception",
                                                                "Absent", "OK", "Enabled", "", "InfiniBand"]))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.sampled_from(["@odata.id", "Message", "target", "Members",
                                                              "SettingsObject", "Oem", "State", "x"]) | st.text(max_size=6),
                                             inner, max_size=3), max_leaves=10)
_DELETE = object()


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:4]):
            out += _paths(v, (*prefix, i))
    return out


def _mutate(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    if value is _DELETE:
        del doc[path[-1]]
    else:
        doc[path[-1]] = value


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, Any]:
    kind = draw(st.sampled_from(sorted(seeds())))
    doc = copy.deepcopy(draw(st.sampled_from(seeds()[kind])))
    paths = _paths(doc)
    for _ in range(draw(st.integers(1, 5))):
        path = draw(st.sampled_from(paths))
        value = draw(json_values | st.just(_DELETE))
        with contextlib.suppress(KeyError, IndexError, TypeError):  # an earlier mutation replaced the parent
            _mutate(doc, path, value)
    return kind, doc


@settings(max_examples=300, deadline=None)
@given(case=mutated())
def test_mutated_captures_parse_or_raise_redfish_error(case: tuple[str, Any]) -> None:
    _check(*case)


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from([*sorted(MODELS), "AttributeRegistry"]), data=json_values)
def test_random_json_parses_or_raises_redfish_error(kind: str, data: Any) -> None:
    _check(kind, data)


@pytest.mark.parametrize("name", sorted(NESTED))
@settings(max_examples=40, deadline=None)
@given(data=json_values)
def test_nested_blocks_parse_or_raise_redfish_error(name: str, data: Any) -> None:
    with contextlib.suppress(RedfishError):
        _touch(NESTED[name].parse(data))


def test_seeds_parse_unchanged() -> None:
    """The real captures themselves parse (the fuzzing starts from valid resources), as what they say: the
    capture is left as it was, the model keeps its identity and status, and it reads the same again from its
    own dump (parse is a fixed point: nothing is dropped or reinterpreted on the way through)."""
    for kind, docs in seeds().items():
        for doc in docs:
            before = copy.deepcopy(doc)
            model = _parse(kind, doc)
            _touch(model)
            assert doc == before, f"parsing a {kind} changed the capture it was given"
            assert model.id == str(doc.get("Id", "")), kind
            if kind == "AttributeRegistry":
                listed = {a["AttributeName"] for a in doc["RegistryEntries"]["Attributes"] if a.get("AttributeName")}
                assert listed and set(model.attributes) == listed
                continue
            assert (model.uri, model.odata_type) == (doc["@odata.id"].rstrip("/"), doc["@odata.type"]), kind
            assert model.name == doc.get("Name"), kind
            status = doc.get("Status") or {}
            assert (model.status.state, model.status.health) == (status.get("State"), status.get("Health")) \
                if model.status else not status, kind
            assert MODELS[kind].parse(model.model_dump(by_alias=True)) == model, f"{kind} {model.uri}"
