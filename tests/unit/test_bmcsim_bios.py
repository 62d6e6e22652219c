"""BIOS attribute checks against the Dell registry (full) and the inferred Supermicro one."""

from __future__ import annotations

import pytest

from provision.lab.bmcsim.bios import check
from provision.lab.bmcsim.config import TREES_DIR, Parts
from provision.lab.bmcsim.seed import build


@pytest.fixture(scope="module")
def dell_registry():  # type: ignore[no-untyped-def]
    seed = build(TREES_DIR / "dell", as_captured=True, parts=Parts())
    lay = next(iter(seed.bios.values()))
    assert not lay.inferred
    return lay.registry


@pytest.mark.parametrize(("attrs", "want"), [
    ({"LogicalProc": "Disabled"}, []),
    ({"NoSuchAttribute": "x"}, ["PropertyUnknown"]),
    ({"SystemModelName": "x"}, ["PropertyNotWritable"]),
    ({"LogicalProc": 1}, ["PropertyValueTypeError"]),
    ({"LogicalProc": "Maybe"}, ["PropertyValueNotInList"]),
    ({"CpuMinSevAsid": 9999}, ["PropertyValueOutOfRange"]),
    ({"CpuMinSevAsid": 10}, []),
    ({"CpuMinSevAsid": True}, ["PropertyValueTypeError"]),
    ({"NoSuch": 1, "LogicalProc": "Maybe"}, ["PropertyUnknown", "PropertyValueNotInList"]),
])
def test_dell_registry_checks(dell_registry, attrs, want) -> None:  # type: ignore[no-untyped-def]
    got = [m["MessageId"].rsplit(".", 1)[1] for m in check(dell_registry, attrs)]
    assert got == want


def test_messages_name_the_attribute(dell_registry) -> None:  # type: ignore[no-untyped-def]
    (msg,) = check(dell_registry, {"LogicalProc": "Maybe"})
    assert msg["RelatedProperties"] == ["/Attributes/LogicalProc"]
    assert "Maybe" in msg["Message"] and msg["MessageId"].startswith("Base.")


def test_supermicro_registry_is_inferred_from_current_values() -> None:
    seed = build(TREES_DIR / "supermicro", as_captured=True, parts=Parts())
    lay = seed.bios["/redfish/v1/Systems/1"]
    assert lay.inferred and not lay.full_copy
    ids = [m["MessageId"].rsplit(".", 1)[1] for m in check(lay.registry, {"AES_NI_3C75": 5, "Bogus_0000": "x"})]
    assert ids == ["PropertyValueTypeError", "PropertyUnknown"]
    assert check(lay.registry, {"AES_NI_3C75": "Disable"}) == []
