"""HPE iLO 5 plugin against the whole capture (tests/fixtures/redfish/full/hpe): detection, running-firmware
matching, BIOS keys from the real attribute registry, update method."""

from __future__ import annotations

import pytest
from full_captures import firmware_entries, full_tree, get, registry
from rf_fakebmc import FakeBmc, Served
from rf_support import connect

from provision.redfish.ops import sel
from provision.redfish.ops.session import node_facts
from provision.redfish.resources import Bios, ComputerSystem, ServiceRoot, UpdateService
from provision.redfish.vendors import by_name, detect

CUR = "/redfish/v1/systems/1/bios"
REG = "/redfish/v1/registrystore/registries/en/biosattributeregistrya42.v1_2_60"


def test_detected_from_root() -> None:
    plugin = detect(ServiceRoot.parse(get("hpe", "/redfish/v1")), ComputerSystem.parse(get("hpe", "/redfish/v1/Systems/1")))
    assert plugin.name == "hpe"


@pytest.mark.parametrize(("component", "ids"), [
    ("bmc", ["1"]),  # iLO 5
    ("bios", ["2"]),  # System ROM; 8 is the Redundant System ROM (SystemRomBackup)
    ("ib_nic", ["16", "18"]),  # the two ConnectX-6; BlueField-2 (19) is a DPU
    ("gpu", []),
    ("nvswitch", []),
])
def test_firmware_matching(component: str, ids: list[str]) -> None:
    got = by_name("hpe").match_firmware(component, firmware_entries("hpe"))
    assert sorted(e.id for e in got) == sorted(ids)


def test_redundant_rom_never_running_even_when_named() -> None:
    got = by_name("hpe").match_firmware("bios", firmware_entries("hpe"), {"hpe": r"System ROM"})
    assert [e.id for e in got] == ["2"]


@pytest.mark.parametrize(("key", "value", "attr", "vendor_value"), [
    ("sriov", "enabled", "Sriov", "Enabled"),
    ("hyperthreading", "enabled", "ProcSMT", "Enabled"),
    ("hyperthreading", "disabled", "ProcSMT", "Disabled"),
    ("iommu", "enabled", "ProcAmdIoVt", "Enabled"),
    ("turbo", "enabled", "ProcAMDBoost", "Enabled"),
    ("boot_mode", "uefi", "BootMode", "Uefi"),
    ("power_profile", "performance", "WorkloadProfile", "GeneralThroughputCompute"),
    ("numa", "enabled", "NumaGroupSizeOpt", "Clustered"),
    ("sub_numa_clustering", "disabled", "NumaMemoryDomainsPerSocket", "OneMemoryDomainPerSocket"),
])
def test_bios_mapping_real_registry(key: str, value: str, attr: str, vendor_value: str) -> None:
    reg = registry("hpe", REG)
    assert not reg.inferred and len(reg.attributes) > 200
    t = by_name("hpe").resolve_bios(key, value, get("hpe", CUR)["Attributes"], reg)
    assert t is not None and (t.attribute, t.value) == (attr, vendor_value)
    assert vendor_value in reg.attributes[attr].allowed  # a value the registry accepts


@pytest.mark.parametrize("key", ["above_4g_decoding", "resizable_bar"])
def test_keys_this_rom_does_not_have_are_unmapped(key: str) -> None:
    assert by_name("hpe").resolve_bios(key, "enabled", get("hpe", CUR)["Attributes"], registry("hpe", REG)) is None


def test_pending_uri_is_the_settings_object() -> None:
    assert by_name("hpe").pending_uri(Bios.parse(get("hpe", CUR))) == "/redfish/v1/systems/1/bios/settings"


def test_update_is_simple_update_without_targets() -> None:
    service = UpdateService.parse(get("hpe", "/redfish/v1/UpdateService"))
    plugin = by_name("hpe")
    assert service.http_push_uri == "/cgi-bin/uploadFile" and plugin.multipart_uri(service) is None
    assert service.simple_update_target == "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"
    assert plugin.update_targets("bios", plugin.match_firmware("bios", firmware_entries("hpe"))) == []


def test_performance_profile_keeps_sriov_and_iommu_settable() -> None:
    """Regression: HighPerformanceCompute(HPC) forces Sriov and ProcAmdIoVt Disabled in this registry's
    Dependencies, contradicting the spec's sriov/iommu: the profile chosen for "performance" must not."""
    from provision.redfish.ops.bios_registry import locked_by

    reg = registry("hpe", REG)
    t = by_name("hpe").resolve_bios("power_profile", "performance", get("hpe", CUR)["Attributes"], reg)
    assert t is not None
    values = {**get("hpe", CUR)["Attributes"], t.attribute: t.value}
    assert locked_by(reg, "Sriov", values) is None and locked_by(reg, "ProcAmdIoVt", values) is None
    assert locked_by(reg, "Sriov", {**values, "WorkloadProfile": "HighPerformanceCompute(HPC)"}) is not None


def test_profile_forces_the_numa_grouping_the_spec_wants() -> None:
    """NumaGroupSizeOpt is locked under GeneralThroughputCompute, but to Clustered, the value numa: enabled maps to:
    forced_value says so (ops/bios can then treat it as satisfied rather than refused)."""
    from provision.redfish.ops.bios_registry import forced_value, locked_by

    reg = registry("hpe", REG)
    cur = get("hpe", CUR)["Attributes"]
    values = {**cur, "WorkloadProfile": "GeneralThroughputCompute"}
    numa = by_name("hpe").resolve_bios("numa", "enabled", cur, reg)
    assert numa is not None and locked_by(reg, "NumaGroupSizeOpt", values) is not None
    assert forced_value(reg, "NumaGroupSizeOpt", values) == (True, numa.value)
    assert forced_value(reg, "ProcSMT", values) == (False, None)


def _plan(settings: dict[str, str], vendor_attrs: dict[str, str] | None = None) -> object:
    from provision.redfish.ops import bios as bios_ops
    from provision.spec.firmware import Bios as BiosSpec

    state = bios_ops.BiosState(current=Bios.parse(get("hpe", CUR)), pending={},
                               pending_uri="/redfish/v1/systems/1/bios/settings", registry=registry("hpe", REG))
    spec = BiosSpec(settings=settings, vendor_attributes={"hpe": vendor_attrs} if vendor_attrs else {})
    return bios_ops.plan(spec, state, by_name("hpe"))


@pytest.mark.parametrize(("settings", "vendor_attrs", "changes", "forced", "invalid"), [
    # the capture: WorkloadProfile GeneralPowerEfficientCompute (which sets and locks NumaGroupSizeOpt Flat)
    ({"numa": "enabled"}, None, [], [], ["NumaGroupSizeOpt"]),  # locked to Flat by the current profile
    ({"numa": "enabled", "power_profile": "performance"}, None, ["WorkloadProfile"], ["NumaGroupSizeOpt"], []),
    ({"numa": "disabled"}, None, [], [], []),  # Flat already, and the current profile keeps it Flat
    # Flat is current, but GeneralThroughputCompute sets Clustered: a refusal, not "already so"
    ({"numa": "disabled", "power_profile": "performance"}, None, ["WorkloadProfile"], [], ["NumaGroupSizeOpt"]),
])
def test_a_value_the_workload_profile_forces_is_no_write_and_no_refusal(
        settings: dict[str, str], vendor_attrs: dict[str, str] | None, changes: list[str], forced: list[str],
        invalid: list[str]) -> None:
    plan = _plan(settings, vendor_attrs)
    assert sorted(c.attribute for c in plan.changes) == changes  # type: ignore[attr-defined]
    assert [f.split(" -> ")[1].split("=")[0] for f in plan.forced] == forced  # type: ignore[attr-defined]
    assert [i.split(" -> ")[1].split("=")[0] for i in plan.invalid] == invalid  # type: ignore[attr-defined]
    assert "NumaGroupSizeOpt" not in plan.writes  # type: ignore[attr-defined]


def test_sel_is_the_iml_on_ilo() -> None:
    """HPE iLO's system event log is the IML, not the Security Log listed before it (whole HPE capture)."""
    with Served(FakeBmc(tree=full_tree("hpe"))) as srv:
        node = node_facts(connect(srv))
        assert node.vendor.name == "hpe"
        assert sel.find_sel(node) == "/redfish/v1/Systems/1/LogServices/IML"
        rows = sel.read(node)
    iml = get("hpe", "/redfish/v1/Systems/1/LogServices/IML/Entries")
    assert [r.id for r in rows] == [str(m["@odata.id"]).rstrip("/").rsplit("/", 1)[1] for m in iml["Members"]]


@pytest.mark.parametrize(("service", "says"), [
    ({"Id": "IML", "Name": "Integrated Management Log"}, True),
    ({"Id": "SL", "Name": "Security Log"}, None),
    ({"Id": "IEL", "Name": "iLO Event Log"}, None),
    ({"Id": "Event", "Name": "Event"}, None),
])
def test_hpe_names_its_sel_equivalent(service: dict[str, str], says: bool | None) -> None:
    assert by_name("hpe").is_sel(service) is says
    assert by_name("generic").is_sel(service) is None
