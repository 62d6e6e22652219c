"""One collection the BMC does not give (a paging loop, a 5xx, malformed JSON) is named unreadable and the rest of
the inventory kept; the figures read from it are unknown, naming its URI (issue 38, item 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rf_fakebmc import FakeBmc, Served
from rf_small_tree import (
    R,
    adapters,
    coll,
    drift_items,
    drive,
    link,
    node,
    observe_tree,
    spec,
    storage,
)
from rf_support import point_at, tree

from provision.cli import main as cli_main
from provision.spec.model import NodeSpec

__all__ = ["spec"]  # the module-scoped fixture, used by name

# ---- one collection unreadable ---------------------------------------------------------------------
def _memory(t: dict[str, Any], loop: bool) -> None:
    """Memory in two pages; the second links back to the first when `loop`."""
    m = f"{R}/Systems/1/Memory"
    t[f"{R}/Systems/1"]["Memory"] = link(m)
    t[m] = coll(m, [f"{m}/0"], **{"Members@odata.nextLink": f"{m}/page2"})
    t[f"{m}/0"] = {"@odata.id": f"{m}/0", "Id": "0", "CapacityMiB": 65536, "Status": {"State": "Enabled"}}
    t[f"{m}/page2"] = coll(f"{m}/page2", [], **({"Members@odata.nextLink": m} if loop else {}))


def test_a_paging_loop_marks_that_collection_unreadable_and_keeps_the_rest(spec: NodeSpec) -> None:
    t = node()
    _memory(t, loop=True)
    adapters(t, ["Ethernet", "Ethernet"])
    inv = observe_tree(t, FakeBmc(tree=t, expand=False))
    assert [u.uri for u in inv.unreadable] == [f"{R}/Systems/1/Memory"]
    assert "paging loop" in inv.unreadable[0].reason
    assert len(inv.cpus) == 2 and inv.ports.ethernet == 2 and inv.memory == []
    items = drift_items(spec, inv)
    assert items["memory.dimm_count"].verdict == "unknown" and f"{R}/Systems/1/Memory" in items[
        "memory.dimm_count"].observed
    assert items["cpu.sockets"].verdict == "ok" and items["network.ethernet.count"].verdict == "ok"


def test_paging_that_ends_is_read_whole() -> None:
    t = node()
    _memory(t, loop=False)
    inv = observe_tree(t, FakeBmc(tree=t, expand=False))
    assert inv.unreadable == [] and len(inv.memory) == 1


def test_a_5xx_collection_is_unreadable_and_the_rest_kept() -> None:
    t = node()
    adapters(t, ["Ethernet"])
    storage(t, [drive(f"{R}/Systems/1/Storage/1/Drives/0")])
    bmc = FakeBmc(tree=t)
    bmc.fail(f"{R}/Chassis/1/NetworkAdapters", 500, times=3)  # every retry
    inv = observe_tree(t, bmc)
    assert [u.uri for u in inv.unreadable] == [f"{R}/Chassis/1/NetworkAdapters"]
    assert "500" in inv.unreadable[0].reason
    assert len(inv.drives) == 1 and len(inv.cpus) == 2 and inv.adapters == []


def test_malformed_json_in_one_collection_is_unreadable_and_the_rest_kept(spec: NodeSpec) -> None:
    t = node()
    adapters(t, ["Ethernet", "Ethernet"])
    storage(t, [drive(f"{R}/Systems/1/Storage/1/Drives/0")])
    bmc = FakeBmc(tree=t)
    bmc.raw[f"{R}/Systems/1/Storage"] = (200, "application/json", b'{"Members": [{"@odata.id": ')
    inv = observe_tree(t, bmc)
    assert [u.uri for u in inv.unreadable] == [f"{R}/Systems/1/Storage"]
    assert inv.ports.ethernet == 2 and len(inv.cpus) == 2
    items = drift_items(spec, inv)
    assert {items[k].verdict for k in ("storage.nvme_drives", "storage.boot.count")} == {"unknown"}
    assert items["network.ethernet.count"].verdict == "ok"




def test_bmc_inventory_with_a_paging_loop_prints_the_rest_and_exits_1_naming_it(
        inventory_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI: JSON of everything else, the looping collection named in it and in the one error line, exit 1
    (it used to be exit 1 with no JSON at all)."""
    t = tree("supermicro")
    mem = f"{R}/Systems/1/Memory"
    t[mem] = {**t[mem], "Members@odata.nextLink": mem}
    with Served(FakeBmc(tree=t, expand=False)) as srv:
        point_at(inventory_copy, srv.address)
        code = cli_main(["bmc", "inventory", "node01", "-i", str(inventory_copy), "--json"])
    out = capsys.readouterr()
    report = json.loads(out.out)
    assert code == 1
    assert [u["uri"] for u in report["unreadable"]] == [mem] and "paging loop" in report["unreadable"][0]["reason"]
    assert len(report["inventory"]["gpus"]) == 8 and len(report["inventory"]["cpus"]) == 2
    assert f"{mem} (Members@odata.nextLink" in out.err
    assert {i["verdict"] for i in report["drift"] if i["key"].startswith("memory.")} == {"unknown"}
