"""Seed trees: loading the three built-in captures, copy-on-write views, filling the complete server."""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import InputError
from provision.lab.bmcsim.config import TREES_DIR, Parts
from provision.lab.bmcsim.fill import next_id
from provision.lab.bmcsim.seed import build
from provision.lab.bmcsim.tree import ROOT, Resources, SeedTree, load_dir, norm

TREES = ["supermicro", "dell", "public-rackmount1"]


@pytest.mark.parametrize("name", TREES)
def test_each_builtin_tree_loads_with_its_service_root(name: str) -> None:
    res = load_dir(TREES_DIR / name)
    assert norm(res[ROOT]["@odata.id"]) == ROOT
    assert any(uri.startswith(f"{ROOT}/Systems/") for uri in res)


def test_loose_registry_file_becomes_a_resource() -> None:
    res = load_dir(TREES_DIR / "public-rackmount1")
    assert res[f"{ROOT}/Registries/Base.1.5.0"]["RegistryPrefix"] == "Base"


def test_a_directory_without_a_service_root_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a Redfish mockup"):
        load_dir(tmp_path)


@pytest.mark.parametrize(("raw", "want"), [("/redfish/v1/", "/redfish/v1"), ("/a/b?$expand=*", "/a/b"),
                                           ("/a#/x", "/a"), ("/", "/")])
def test_norm(raw: str, want: str) -> None:
    assert norm(raw) == want


def test_views_are_copy_on_write_and_isolated() -> None:
    seed = SeedTree("t", {"/r": {"@odata.id": "/r", "PowerState": "On"}})
    a, b = Resources(seed), Resources(seed)
    etag_before = a.etag("/r")
    a.mutable("/r")["PowerState"] = "Off"
    assert a.get("/r")["PowerState"] == "Off"
    assert b.get("/r")["PowerState"] == "On"
    assert seed.get("/r")["PowerState"] == "On"
    assert a.etag("/r") != etag_before == b.etag("/r")
    a.delete("/r")
    assert a.get("/r") is None and b.get("/r") is not None


def test_adding_members_leaves_the_seed_and_other_bmcs_alone_then_a_full_write_copies_deep() -> None:
    entry = {"@odata.id": "/log/1", "Message": "captured"}
    seed = SeedTree("t", {"/log": {"@odata.id": "/log", "Members": [entry], "Members@odata.count": 1,
                                   "Oem": {"Note": "seed"}}})
    a, b = Resources(seed), Resources(seed)
    a.add_member("/log", "/log/2")
    assert [m["@odata.id"] for m in a.get("/log")["Members"]] == ["/log/1", "/log/2"]
    assert a.get("/log")["Members@odata.count"] == 2
    assert len(b.get("/log")["Members"]) == len(seed.get("/log")["Members"]) == 1
    a.mutable("/log")["Oem"]["Note"] = "mine"  # a nested write after the shallow member copy
    a.mutable("/log")["Members"][0]["Message"] = "changed"
    assert seed.get("/log")["Oem"]["Note"] == "seed" and entry["Message"] == "captured"
    assert a.get("/log")["Members"][1] == {"@odata.id": "/log/2"}
    a.remove_member("/log", "/log/1")
    assert a.get("/log")["Members@odata.count"] == 1 and b.get("/log")["Members@odata.count"] == 1


def test_an_expansion_is_shared_by_untouched_bmcs_and_rebuilt_for_one_that_changed_a_member() -> None:
    import json

    from provision.lab.bmcsim import expand

    seed = SeedTree("t", {"/fi": {"@odata.id": "/fi", "Members": [{"@odata.id": "/fi/bmc"}]},
                          "/fi/bmc": {"@odata.id": "/fi/bmc", "Version": "1.0"}})
    a, b = Resources(seed), Resources(seed)
    first = expand.encoded(a, "/fi", ".", 1)
    assert json.loads(first)["Members"][0]["Version"] == "1.0"
    assert expand.encoded(b, "/fi", ".", 1) is first  # the seed's, not built again
    b.mutable("/fi/bmc")["Version"] = "2.0"
    assert json.loads(expand.encoded(b, "/fi", ".", 1))["Members"][0]["Version"] == "2.0"
    assert expand.encoded(a, "/fi", ".", 1) is first
    b.add_member("/fi", "/fi/new")  # a changed collection is this BMC's own too
    b.put("/fi/new", {"@odata.id": "/fi/new", "Version": "9"})
    assert [m["Version"] for m in json.loads(expand.encoded(b, "/fi", ".", 1))["Members"]] == ["2.0", "9"]


@pytest.mark.parametrize(("ids", "template", "want"), [
    (["1", "2"], "2", "3"),
    (["Disk.Bay.0", "Disk.Bay.3"], "Disk.Bay.3", "Disk.Bay.4"),
    (["GPU1", "GPU2"], "GPU2", "GPU3"),
    (["CPU.Socket.1"], "CPU.Socket.1", "CPU.Socket.2"),
    (["Bay"], "Bay", "Bay-2"),
])
def test_next_id(ids: list[str], template: str, want: str) -> None:
    assert next_id(ids, template) == want


def _count(tree: SeedTree, prefix: str) -> int:
    return sum(1 for uri in tree.uris() if uri.rsplit("/", 1)[0] == prefix)


def test_supermicro_complete_server_has_the_spec_parts() -> None:
    parts = Parts()
    seed = build(TREES_DIR / "supermicro", as_captured=False, parts=parts)
    tree = seed.tree
    dimms = [m["@odata.id"] for m in tree.get(f"{ROOT}/Systems/1/Memory")["Members"]]
    assert len(dimms) == 32 and all(tree.get(d)["CapacityMiB"] == 65536 for d in dimms)
    assert tree.get(f"{ROOT}/Systems/1")["MemorySummary"]["TotalSystemMemoryGiB"] == 2048
    cpus = [m["@odata.id"] for m in tree.get(f"{ROOT}/Systems/1/Processors")["Members"]]
    assert [tree.get(c)["Model"] for c in cpus] == [parts.cpu_model] * 2
    gpus = [u for u in tree.uris() if u.startswith(f"{ROOT}/Chassis/1/PCIeDevices/GPU") and u.count("/") == 6]
    assert len(gpus) == 8
    drives = [u for u in tree.uris() if str(tree.get(u).get("@odata.type", "")).startswith("#Drive.")]
    assert len(drives) >= parts.boot_drives + parts.scratch_drives
    assert f"{ROOT}/Chassis/NVMeSSD.0.Group.0.StorageBackplane/Drives/Disk.Bay.7" in tree
    assert f"{ROOT}/Managers/1/VirtualMedia/CD1" in tree
    assert seed.invented, "the filled URIs are reported"


def test_cloned_dimms_get_a_memory_location_each_as_the_spec_lays_them_out() -> None:
    """The lab capture holds 2 of its 32 DIMMs (P1-DIMMA1 at Socket 0 Channel 0 Slot 0, P1-DIMME2 at Socket 0
    Channel 4 Slot 1); the 30 clones used to repeat A1's MemoryLocation. Now the BMC-side population check
    (the one verify runs) finds 2 sockets x 8 channels x 2 DIMMs, and each clone a place of its own."""
    from provision.conformance.checks.memory_layout import layout, redfish_places
    from provision.redfish.resources import Memory

    tree = build(TREES_DIR / "supermicro", as_captured=False, parts=Parts()).tree
    dimms = [Memory.parse(tree.get(m["@odata.id"])) for m in tree.get(f"{ROOT}/Systems/1/Memory")["Members"]]
    places = {(d.memory_location.socket, d.memory_location.channel, d.memory_location.slot)
              for d in dimms if d.memory_location}
    assert len(dimms) == 32 and len(places) == 32
    assert layout(redfish_places(dimms), 2, 8, 2).problems == ()
    captured = {d.device_locator: d.memory_location for d in dimms if d.device_locator in ("P1-DIMMA1", "P1-DIMME2")}
    assert captured["P1-DIMME2"] is not None and (captured["P1-DIMME2"].channel, captured["P1-DIMME2"].slot) == (4, 1)
    # a clone on a captured DIMM's channel takes that DIMM's memory controller
    e1 = next(d for d in dimms if d.memory_location and (d.memory_location.socket, d.memory_location.channel,
                                                          d.memory_location.slot) == (0, 4, 0))
    assert e1.memory_location is not None and e1.memory_location.memory_controller == 2


def test_as_captured_serves_the_capture_only() -> None:
    seed = build(TREES_DIR / "supermicro", as_captured=True, parts=Parts())
    assert f"{ROOT}/Systems/1/Memory/17" not in seed.tree
    assert f"{ROOT}/Systems/1/Memory/10" in seed.tree
    assert f"{ROOT}/Managers/1/VirtualMedia" not in seed.tree
    # the services the simulator implements are still there
    assert f"{ROOT}/SessionService/Sessions" in seed.tree


def test_spec_counts_drive_the_fill() -> None:
    seed = build(TREES_DIR / "supermicro", as_captured=False, parts=Parts(dimms=40, gpus=8))
    assert len(seed.tree.get(f"{ROOT}/Systems/1/Memory")["Members"]) == 40


@pytest.mark.parametrize("name", TREES)
def test_every_tree_locates_bios_settings_and_a_sel(name: str) -> None:
    seed = build(TREES_DIR / name, as_captured=True, parts=Parts())
    assert seed.bios, "a BIOS resource was found"
    lay = next(iter(seed.bios.values()))
    assert lay.settings is not None and lay.settings.endswith(("/Bios/SD", "/Bios/Settings"))
    assert seed.sel_service in seed.tree
