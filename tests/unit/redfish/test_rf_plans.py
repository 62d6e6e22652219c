"""Pure plans as tables: firmware order/downgrade/skip, BIOS validation and dependencies, power resets."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from rf_support import tree

from provision.redfish.ops import bios as bios_ops
from provision.redfish.ops import firmware as fw
from provision.redfish.ops import power
from provision.redfish.ops.bios_registry import check_value, locked_by
from provision.redfish.resources import AttributeRegistry, Bios, SoftwareInventory, UpdateService
from provision.redfish.vendors import by_name
from provision.spec.firmware import Bios as BiosSpec
from provision.spec.firmware import FirmwareComponent

SHA = hashlib.sha256(b"x").hexdigest()


def comp(name: str, version: str, order: int = 50, **kw: object) -> FirmwareComponent:
    return FirmwareComponent.model_validate(
        {"component": name, "version": version, "image": f"{name}.bin", "sha256": SHA, "order": order,
         "applies_to": "any", **kw})


def sm_state() -> fw.FirmwareState:
    t = tree("supermicro")
    entries = [SoftwareInventory.parse(v) for k, v in t.items()
               if k.startswith("/redfish/v1/UpdateService/FirmwareInventory/") and k.count("/") == 5]
    return fw.FirmwareState(entries=entries, service=UpdateService.parse(t["/redfish/v1/UpdateService"]))


def test_order_bmc_bios_then_rest_multipart_on_supermicro(tmp_path: Path) -> None:
    base = (comp("gpu", "96.00.9F.00.04", 30), comp("bios", "2.1", 20), comp("bmc", "11.02.05", 10),
            comp("nvswitch", "96.10.6D.00.01", 30))
    plan = fw.plan(base, sm_state(), by_name("supermicro"), tmp_path)
    assert [s.component for s in plan.steps] == ["bmc", "bios", "gpu", "nvswitch"]
    assert {s.method for s in plan.steps} == {"multipart"} and plan.steps[0].uri == "/redfish/v1/UpdateService/upload"
    assert len(plan.steps[2].targets) == 8 and plan.host_reset


def test_baseline_order_overrides_default(tmp_path: Path) -> None:
    base = (comp("bios", "2.1", 5), comp("bmc", "11.02.05", 10))
    assert [s.component for s in fw.plan(base, sm_state(), by_name("supermicro"), tmp_path).steps] == ["bios", "bmc"]


@pytest.mark.parametrize(("version", "allow", "steps", "refused"), [
    ("1.4", False, [], []),            # equal (vendor format 'BIOS Date: ... Ver 1.4')
    ("2.1", False, ["bios"], []),      # upgrade
    ("1.2", False, [], ["bios"]),      # downgrade refused
    ("1.2", True, ["bios"], []),       # downgrade allowed
])
def test_versions_decide(tmp_path: Path, version: str, allow: bool, steps: list[str], refused: list[str]) -> None:
    plan = fw.plan((comp("bios", version),), sm_state(), by_name("supermicro"), tmp_path, allow_downgrade=allow)
    assert [s.component for s in plan.steps] == steps
    assert [r.split(":")[0] for r in plan.refused] == refused


@pytest.mark.parametrize(("component", "version", "steps"), [
    ("bios", "1.4.1", ["bios"]),  # running 1.4 is 1.4.0: older than 1.4.1, never "at baseline"
    ("bios", "1.4.0", []),
    ("gpu", "96.00.61.00.01.01", ["gpu"]),  # running 96.00.61.00.01 is ...01.00: older
    ("gpu", "96.00.61.00.01.00", []),
    ("gpu", "96.00.61.00", []),  # running 96.00.61.00.01 is newer: refused, not stepped
])
def test_missing_trailing_parts_are_zeros_not_dropped(tmp_path: Path, component: str, version: str,
                                                      steps: list[str]) -> None:
    plan = fw.plan((comp(component, version),), sm_state(), by_name("supermicro"), tmp_path)
    assert [s.component for s in plan.steps] == steps
    assert bool(plan.refused) is (version == "96.00.61.00")


def test_not_updateable_and_absent(tmp_path: Path) -> None:
    base = (comp("ib_nic", "28.39.1002"), comp("fpga_thing", "1.0"))
    plan = fw.plan(base, sm_state(), by_name("supermicro"), tmp_path)
    assert plan.steps == [] and plan.skipped and plan.absent == ["fpga_thing"]


GPU = "/redfish/v1/UpdateService/FirmwareInventory/HGX_FW_GPU_SXM_"
GPU_AT = "96.00.61.00.01"  # what the capture's eight GPUs run


def gpus_state(versions: dict[int, str], not_updateable: frozenset[int] = frozenset()) -> fw.FirmwareState:
    """The capture with GPU n running versions[n] (the capture's version otherwise), those in
    `not_updateable` marked Updateable=false."""
    state = sm_state()
    entries = []
    for e in state.entries:
        n = int(e.uri.rsplit("_", 1)[1]) if e.uri.startswith(GPU) else 0
        entries.append(e.model_copy(update={"version": versions.get(n, e.version),
                                            "updateable": False if n in not_updateable else e.updateable}))
    return state.model_copy(update={"entries": entries})


@pytest.mark.parametrize(("versions", "not_updateable", "targets"), [
    ({}, frozenset(), []),  # all eight at baseline: nothing to do
    ({3: "96.00.5A.00.01"}, frozenset(), [3]),  # one GPU behind: the component is not at baseline
    ({3: "96.00.5A.00.01", 5: "96.00.5A.00.01"}, frozenset({5}), [3]),  # the BMC's Updateable=false is not sent
])
def test_a_component_of_many_entries_is_at_baseline_only_when_every_entry_is(
        tmp_path: Path, versions: dict[int, str], not_updateable: frozenset[int], targets: list[int]) -> None:
    plan = fw.plan((comp("gpu", GPU_AT),), gpus_state(versions, not_updateable), by_name("supermicro"), tmp_path)
    assert [t for s in plan.steps for t in s.entries] == [f"HGX_FW_GPU_SXM_{n}" for n in targets]
    status = fw.status((comp("gpu", GPU_AT),), gpus_state(versions, not_updateable), by_name("supermicro"))
    assert status[0].verdict == ("older" if targets else "ok")


@pytest.mark.parametrize(("verdicts", "expected"), [
    ((), "absent"), (("ok",), "ok"), (("ok", "ok"), "ok"), (("ok", "older"), "older"), (("newer", "ok"), "newer"),
    (("ok", "unknown"), "unknown"), (("newer", "older"), "older"), (("unknown", "older"), "older"),
    (("unknown", "newer"), "newer"),
])
def test_a_components_verdict_is_its_worst_entrys(verdicts: tuple[str, ...], expected: str) -> None:
    rows = [fw.EntryStatus(id=str(i), uri=f"/x/{i}", raw_version="v", version="v", verdict=v)  # type: ignore[arg-type]
            for i, v in enumerate(verdicts)]
    assert fw.ComponentStatus(component="gpu", target="1", entries=rows).verdict == expected


def test_simple_update_where_no_push_uri(tmp_path: Path) -> None:
    state = sm_state()
    service = state.service.model_copy(update={"multipart_http_push_uri": None})
    plan = fw.plan((comp("bmc", "11.02.05"),), fw.FirmwareState(entries=state.entries, service=service),
                   by_name("supermicro"), tmp_path)
    assert plan.steps[0].method == "simple" and plan.steps[0].uri.endswith("UpdateService.SimpleUpdate")


def test_image_checksum_checked(tmp_path: Path) -> None:
    (tmp_path / "bios.bin").write_bytes(b"not x")
    step = fw.plan((comp("bios", "2.1"),), sm_state(), by_name("supermicro"), tmp_path).steps[0]
    with pytest.raises(Exception, match="sha256"):
        fw.check_image(step)
    (tmp_path / "bios.bin").write_bytes(b"x")
    assert fw.check_image(step) == b"x"


# ---- BIOS ----------------------------------------------------------------------------------------
def dell_state() -> bios_ops.BiosState:
    t = tree("dell")
    base = "/redfish/v1/Systems/System.Embedded.1/Bios"
    return bios_ops.BiosState(current=Bios.parse(t[base]), pending={}, pending_uri=f"{base}/Settings",
                              registry=AttributeRegistry.from_json(t[f"{base}/BiosRegistry"]))


@pytest.mark.parametrize(("settings", "vendor_attrs", "changes", "invalid"), [
    ({"sriov": "enabled", "hyperthreading": "enabled"}, {}, [], []),          # already so
    ({"sriov": "disabled"}, {}, ["SriovGlobalEnable"], []),
    ({"numa": "disabled"}, {}, ["NodeInterleave"], []),                        # inverted sense
    ({"sub_numa_clustering": "enabled"}, {}, [], ["SubNumaCluster"]),          # not in enum
    ({"turbo": "disabled"}, {}, [], ["ProcTurboMode"]),                        # read-only
    ({}, {"dell": {"NoSuchAttr": "x"}}, [], ["NoSuchAttr"]),                   # unknown attribute
    ({}, {"dell": {"ProcCores": 3}}, [], ["ProcCores"]),                       # wrong type
])
def test_bios_plan_dell_registry(settings: dict, vendor_attrs: dict, changes: list[str], invalid: list[str]) -> None:
    plan = bios_ops.plan(BiosSpec(settings=settings, vendor_attributes=vendor_attrs), dell_state(), by_name("dell"))
    assert [c.attribute for c in plan.changes] == changes
    assert [i.split("->")[1].split("=")[0].strip() for i in plan.invalid] == invalid
    assert plan.apply_time == "OnReset"


def test_already_pending_is_not_rewritten() -> None:
    state = dell_state().model_copy(update={"pending": {"SriovGlobalEnable": "Disabled"}})
    plan = bios_ops.plan(BiosSpec(settings={"sriov": "disabled"}), state, by_name("dell"))
    assert plan.changes[0].pending and plan.writes == {}


def test_registry_dependency_locks_attribute() -> None:
    reg = dell_state().registry
    ip_lock = locked_by(reg, "HttpDev1Ip", {"HttpDev1EnDis": "Disabled", "HttpDev1DhcpEnDis": "Enabled"})
    assert ip_lock and "HttpDev1EnDis" in ip_lock
    assert locked_by(reg, "HttpDev1Ip", {"HttpDev1EnDis": "Enabled", "HttpDev1DhcpEnDis": "Disabled"}) is None


@pytest.mark.parametrize(("kind", "value", "ok"), [
    ("Integer", 5, True), ("Integer", "5", False), ("Integer", 500, False), ("Boolean", True, True),
    ("Boolean", "true", False), ("String", "abc", True), ("String", "x" * 40, False),
])
def test_check_value_types_and_bounds(kind: str, value: object, ok: bool) -> None:
    reg = AttributeRegistry.model_validate({"Attributes": {"A": {
        "AttributeName": "A", "Type": kind, "LowerBound": 0, "UpperBound": 100, "MaxLength": 16}}})
    assert (check_value(reg, "A", value) is None) is ok  # type: ignore[arg-type]


# ---- power ---------------------------------------------------------------------------------------
ALL = ("On", "ForceOff", "GracefulShutdown", "ForceRestart", "PowerCycle")


@pytest.mark.parametrize(("target", "state", "allowed", "resets"), [
    ("on", "On", ALL, []),
    ("on", "Off", ALL, ["On"]),
    ("off", "Off", ALL, []),
    ("off", "On", ALL, ["ForceOff"]),
    ("graceful", "On", ALL, ["GracefulShutdown"]),
    ("cycle", "On", ALL, ["PowerCycle"]),
    ("cycle", "On", ("On", "ForceOff", "ForceRestart"), ["ForceRestart"]),
    ("cycle", "On", ("On", "ForceOff"), ["ForceOff", "On"]),
    ("cycle", "Off", ALL, ["On"]),
])
def test_power_plan(target: str, state: str, allowed: tuple[str, ...], resets: list[str]) -> None:
    assert [a.reset_type for a in power.plan(target, state, allowed)] == resets  # type: ignore[arg-type]
