"""Which LogService is the SEL, decided from LogEntryType/Id/Name and entries, on the real captures."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from rf_fakebmc import FakeBmc, Served, load_capture
from rf_support import FIXTURES, connect

from provision.redfish.ops import sel
from provision.redfish.ops.session import node_facts

SYS0 = "/redfish/v1/Systems/System_0/LogServices"
BMC0 = "/redfish/v1/Managers/BMC_0/LogServices"


@cache
def _capture(rel: str) -> tuple[dict[str, Any], dict[str, tuple[int, str, bytes]]]:
    return load_capture(FIXTURES / rel)


def capture(rel: str) -> dict[str, Any]:
    return json.loads(json.dumps(_capture(rel)[0]))


def served(rel: str, tree: dict[str, Any] | None = None) -> Served:
    return Served(FakeBmc(tree=tree if tree is not None else capture(rel), raw=dict(_capture(rel)[1])))


@pytest.mark.parametrize(("rel", "uri"), [
    ("full/nvidia_gh200", f"{SYS0}/SEL"),  # Id SEL, "IPMI SEL Service", among EventLog, PostCodes, Dump ...
    ("full/supermicro", "/redfish/v1/Systems/1/LogServices/Log1"),  # LogEntryType SEL (the Manager's is OEM)
    ("full/lenovo", "/redfish/v1/Systems/1/LogServices/SEL"),
    ("dell", "/redfish/v1/Managers/iDRAC.Embedded.1/LogServices/Sel"),  # not the empty FaultList (also SEL)
])
def test_the_sel_of_each_capture(rel: str, uri: str) -> None:
    with served(rel) as srv:
        assert sel.find_sel(node_facts(connect(srv))) == uri


def _with_manager_sel(system_entries: int) -> dict[str, Any]:
    """The GH200 capture with a SEL under Managers/BMC_0 holding 3 entries and the System's SEL holding
    `system_entries` (a DGX/HGX BMC keeps the host SEL there)."""
    t = capture("full/nvidia_gh200")
    svc = f"{BMC0}/SEL"
    t[BMC0]["Members"].append({"@odata.id": svc})
    t[svc] = {"@odata.id": svc, "Id": "SEL", "Name": "System Event Log", "LogEntryType": "SEL",
              "Entries": {"@odata.id": f"{svc}/Entries"}}
    entries = [{"@odata.id": f"{svc}/Entries/{i}", "Id": str(i), "Message": f"bmc event {i}", "EntryType": "SEL"}
               for i in range(3)]
    t[f"{svc}/Entries"] = {"@odata.id": f"{svc}/Entries", "Members": entries, "Members@odata.count": 3}
    for e in entries:
        t[e["@odata.id"]] = e
    own = t[f"{SYS0}/SEL/Entries"]
    own["Members"] = own["Members"][:system_entries]
    own["Members@odata.count"] = system_entries
    return t


def test_an_empty_system_sel_loses_to_the_managers_sel_with_entries() -> None:
    with Served(FakeBmc(tree=_with_manager_sel(0))) as srv:
        node = node_facts(connect(srv))
        assert sel.find_sel(node) == f"{BMC0}/SEL"
        assert [e.message for e in sel.read(node)] == ["bmc event 0", "bmc event 1", "bmc event 2"]


def test_with_entries_on_both_the_explicit_sel_type_wins() -> None:
    with Served(FakeBmc(tree=_with_manager_sel(5))) as srv:
        assert sel.find_sel(node_facts(connect(srv))) == f"{BMC0}/SEL"  # LogEntryType SEL; the System's says none


V = sel.LogServiceView


@pytest.mark.parametrize(("services", "pick"), [
    ([V(uri="a", owner="system", says_sel=True, entries=0), V(uri="b", owner="manager", says_sel=True, entries=4)],
     "b"),
    ([V(uri="a", owner="system", says_sel=True, entries=2), V(uri="b", owner="manager", says_sel=True, entries=4)],
     "a"),
    ([V(uri="a", owner="manager", says_sel=True, entries=2),
      V(uri="b", owner="manager", says_sel=True, entry_type="SEL", entries=2)], "b"),
    ([V(uri="a", owner="system", entries=0), V(uri="b", owner="system", entries=9),
      V(uri="c", owner="manager", entries=9)], "b"),  # none says SEL: a System's log with entries
    ([V(uri="c", owner="manager", entries=9)], None),
    ([], None),
])
def test_choose(services: list[sel.LogServiceView], pick: str | None) -> None:
    chosen = sel.choose(services)
    assert (chosen.uri if chosen else None) == pick


@pytest.mark.parametrize(("svc", "says"), [
    ({"Id": "SEL"}, True), ({"Id": "Sel"}, True), ({"Name": "SEL Log Service"}, True),
    ({"Id": "Log1", "LogEntryType": "SEL"}, True), ({"Id": "SelfTest", "Name": "Self test log"}, False),
    ({"Id": "EventLog", "Name": "Event Log Service"}, False), ({"Id": "IML", "LogEntryType": "OEM"}, False),
])
def test_what_says_sel(svc: dict[str, Any], says: bool) -> None:
    assert sel.view(svc, "system").says_sel is says
