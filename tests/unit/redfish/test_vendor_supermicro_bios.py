"""Supermicro X13 (SYS-821GE-TNHR, whole capture): the Bios resource holds ValueDisplayNames ("Enabled")
while the BiosAttributeRegistry lists ValueName "0"/"1". The plugin spells each enumeration as the BIOS
does, so spec values plan and validate instead of every change being refused; a value given in the other
registry form is understood; a value in neither is still refused. The simulator judges writes the same way."""

from __future__ import annotations

from pathlib import Path

import pytest
from full_captures import FULL, get, registry

from provision.lab.bmcsim.bios import check
from provision.lab.bmcsim.config import Parts
from provision.lab.bmcsim.seed import build
from provision.redfish.ops import bios as bios_ops
from provision.redfish.resources import Bios, ComputerSystem
from provision.redfish.vendors import by_name
from provision.spec.firmware import Bios as BiosSpec

SYS = "/redfish/v1/Systems/1"
REG = "/registries/BiosAttributeRegistry.1.0.0.json"


def _state() -> bios_ops.BiosState:
    return bios_ops.BiosState(current=Bios.parse(get("supermicro", f"{SYS}/Bios")), pending={},
                              pending_uri=f"{SYS}/Bios/SD", registry=registry("supermicro", REG),
                              system=ComputerSystem.parse(get("supermicro", SYS)))


@pytest.mark.parametrize(("attribute", "allowed"), [
    ("Hyper_Threading_ALL__F27F", ("Enable", "Disable")),  # ValueName 0 is Enable here: never guessed
    ("SR_IOVSupport_0047", ("Disabled", "Enabled")),
    ("BitsPerSecond_008D", ("9600", "19200", "38400", "57600", "115200")),
    ("SNC_F300", ("Auto", "Disable", "Enable SNC2 (2-clusters)", "Enable SNC4 (4-clusters)")),
])
def test_the_registry_is_spelt_as_the_bios_shows_it(attribute: str, allowed: tuple[str, ...]) -> None:
    raw = registry("supermicro", REG)
    assert raw.attributes[attribute].allowed != allowed  # the capture's registry lists "0"/"1"...
    spelt = by_name("supermicro").bios_registry(raw, _state().current.attributes)
    assert spelt.attributes[attribute].allowed == allowed


@pytest.mark.parametrize(("settings", "vendor", "changes"), [
    ({"hyperthreading": "disabled"}, {}, [("Hyper_Threading_ALL__F27F", "Enable", "Disable")]),
    ({"resizable_bar": "enabled"}, {}, [("Re_SizeBARSupport_0042", "Disabled", "Enabled")]),
    ({"sriov": "enabled", "above_4g_decoding": "enabled", "numa": "enabled"}, {}, []),  # already so
    ({}, {"AES_NI_3C75": "Disable"}, [("AES_NI_3C75", "Enable", "Disable")]),
    ({}, {"AES_NI_3C75": "0"}, [("AES_NI_3C75", "Enable", "Disable")]),  # the ValueName form, understood
    ({}, {"Hyper_Threading_ALL__F27F": "1"}, [("Hyper_Threading_ALL__F27F", "Enable", "Disable")]),
    ({}, {"BitsPerSecond_008D": "57600"}, [("BitsPerSecond_008D", "115200", "57600")]),
])
def test_bios_changes_plan_on_the_whole_capture(settings: dict[str, str], vendor: dict[str, str],
                                                changes: list[tuple[str, str, str]]) -> None:
    spec = BiosSpec(settings=settings, vendor_attributes={"supermicro": vendor} if vendor else {})
    plan = bios_ops.plan(spec, _state(), by_name("supermicro"))
    assert plan.invalid == [] and plan.unmapped == []
    assert [(c.attribute, c.current, c.target) for c in plan.changes] == changes


@pytest.mark.parametrize("value", ["Maybe", "2", "enabled"])
def test_a_value_in_neither_form_is_still_refused(value: str) -> None:
    spec = BiosSpec(settings={}, vendor_attributes={"supermicro": {"AES_NI_3C75": value}})
    plan = bios_ops.plan(spec, _state(), by_name("supermicro"))
    assert plan.changes == [] and len(plan.invalid) == 1 and "not one of ['Disable', 'Enable']" in plan.invalid[0]


def test_a_bios_in_valuename_form_is_left_as_the_registry_says() -> None:
    raw = registry("supermicro", REG)
    names = {a: (e.allowed[0] if e.allowed else None) for a, e in raw.attributes.items() if e.type == "Enumeration"}
    assert by_name("supermicro").bios_registry(raw, names) == raw
    assert by_name("generic").bios_registry(raw, _state().current.attributes) is raw  # DMTF: nothing to change


@pytest.fixture(scope="module")
def sim_registry():  # type: ignore[no-untyped-def]
    lay = build(Path(FULL / "supermicro"), as_captured=True, parts=Parts()).bios[SYS]
    assert not lay.inferred
    return lay.registry


@pytest.mark.parametrize(("attrs", "want"), [
    ({"Hyper_Threading_ALL__F27F": "Disable"}, []),
    ({"SR_IOVSupport_0047": "Enabled", "BitsPerSecond_008D": "57600"}, []),
    ({"Hyper_Threading_ALL__F27F": "1"}, ["PropertyValueNotInList"]),  # not the form this BIOS works in
    ({"Hyper_Threading_ALL__F27F": "Maybe"}, ["PropertyValueNotInList"]),
    ({"DataBits_008E": "8"}, []),  # an attribute whose BIOS value is the ValueName stays in that form
])
def test_the_simulator_judges_writes_in_the_form_the_bios_shows(sim_registry, attrs, want) -> None:  # type: ignore[no-untyped-def]
    assert [m["MessageId"].rsplit(".", 1)[1] for m in check(sim_registry, attrs)] == want
