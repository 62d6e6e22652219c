"""Neutral BIOS keys found through the registry's AttributeName/DisplayName (vendors/bios_names.py), after the
plugin tables: tables over real captured registries (Supermicro X13 AMI, Lenovo XCC, HPE A42, Dell R750, GH200,
BlueField DPU), a hand-written AMI Aptio excerpt (NumaEn, VTdSupport), an ambiguous case and no-match cases
(tests/fixtures/PROVENANCE.md, "BIOS attribute registries for the neutral BIOS keys")."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import ClassVar

import pytest

from provision.redfish.ops import bios as bios_ops
from provision.redfish.resources import AttributeRegistry, Bios, ComputerSystem
from provision.redfish.resources.bios import AttrValue
from provision.redfish.vendors import by_name
from provision.redfish.vendors.base import VendorPlugin
from provision.redfish.vendors.bios_names import REGISTRY_NAMES, AmbiguousBiosKey, display, find
from provision.spec.firmware import BIOS_NEUTRAL_KEYS
from provision.spec.firmware import Bios as BiosSpec

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "redfish"
REGISTRIES = {
    "supermicro": FIX / "full/supermicro/registries/BiosAttributeRegistry.1.0.0.json/index.json",
    "lenovo": FIX / "full/lenovo/redfish/v1/schemas/registries/BiosAttributeRegistry.1.0.0.json/index.json",
    "hpe": FIX / "full/hpe/redfish/v1/registrystore/registries/en/biosattributeregistrya42.v1_2_60/index.json",
    "gh200": FIX / "full/nvidia_gh200/redfish/v1/Registries/BiosAttributeRegistry/BiosAttributeRegistry/index.json",
    "dell": FIX / "dell/redfish/v1/Systems/System.Embedded.1/Bios/BiosRegistry/index.json",
    "dpu": FIX / "bios-registry/nvidia_dpu.BiosAttributeRegistry.json",
    "ami": FIX / "bios-registry/handwritten/ami-aptio-intel.json",
    "ambiguous": FIX / "bios-registry/assembled/sriov-two-switches.json",
}


@cache
def reg(name: str) -> AttributeRegistry:
    return AttributeRegistry.from_json(json.loads(REGISTRIES[name].read_bytes()))


class NoTables(VendorPlugin):
    """A plugin with no BIOS table of its own: every key goes to the registry's names."""

    name = "notables"
    bios_patterns: ClassVar[dict[str, tuple[str, ...]]] = {}


# registry, key -> the attribute found and by what (None: no attribute fits)
FOUND = [
    ("ami", "numa", ("NumaEn", "AttributeName", "NumaEn")),
    ("ami", "iommu", ("VTdSupport", "AttributeName", "VTdSupport")),  # not ProcessorVmxEnable (VT-x)
    ("ami", "hyperthreading", ("ProcessorHyperThreadingDisable", "DisplayName", "Hyper-Threading [ALL]")),
    ("ami", "turbo", ("TurboMode", "AttributeName", "TurboMode")),  # not EETurboDisable
    ("ami", "sriov", ("PCIeSRIOVSupport", "AttributeName", "PCIeSRIOVSupport")),
    ("ami", "sub_numa_clustering", ("SncEn", "AttributeName", "SncEn")),
    ("ami", "above_4g_decoding", None),  # MMIOHBase is where, not whether
    ("supermicro", "numa", ("NUMA_003B", "DisplayName", "NUMA")),
    ("supermicro", "iommu", ("IntelVTforDirectedI_O_VT_d__1E32", "DisplayName", "Intel VT for Directed I/O (VT-d)")),
    ("supermicro", "hyperthreading", ("Hyper_Threading_ALL__F27F", "DisplayName", "Hyper-Threading [ALL]")),
    ("supermicro", "above_4g_decoding", ("Above4GDecoding_0041", "DisplayName", "Above 4G Decoding")),
    ("supermicro", "resizable_bar", ("Re_SizeBARSupport_0042", "DisplayName", "Re-Size BAR Support")),
    ("lenovo", "iommu", ("DevicesandIOPorts_IntelVTforDirectedIOVTd", "DisplayName",
                         "Intel VT for Directed I/O (VT-d)")),  # captured as "Intel® VT ..."
    ("lenovo", "sriov", ("DevicesandIOPorts_SRIOV", "DisplayName", "SRIOV")),
    ("lenovo", "boot_mode", ("BootModes_SystemBootMode", "DisplayName", "System Boot Mode")),  # not Secure Boot Mode
    ("lenovo", "numa", None),  # its NUMA switch is "Socket Interleave": only the Lenovo plugin knows it
    ("lenovo", "above_4g_decoding", None),  # "Mirror Below 4GB" is not it
    ("hpe", "iommu", ("ProcAmdIoVt", "DisplayName", "AMD I/O Virtualization Technology")),
    ("hpe", "turbo", ("ProcAMDBoost", "DisplayName", "AMD Core Performance Boost")),
    ("hpe", "numa", None),  # NumaGroupSizeOpt is a grouping, not a switch
    ("dell", "hyperthreading", ("LogicalProc", "AttributeName", "LogicalProc")),
    ("dell", "iommu", None),  # "Virtualization Technology" (ProcVirtualization) is VT-x: only Dell's table maps it
    ("dpu", "iommu", ("EnableSMMU", "AttributeName", "EnableSMMU")),
    *[("gh200", key, None) for key in sorted(REGISTRY_NAMES)],  # 203 attributes, none of these settings
]


@pytest.mark.parametrize(("source", "key", "want"), FOUND, ids=[f"{s}-{k}" for s, k, _w in FOUND])
def test_the_registry_names_find_the_attribute(source: str, key: str, want: tuple[str, str, str] | None) -> None:
    got = find(key, reg(source), REGISTRY_NAMES)
    assert (None if got is None else (got.attribute, got.field, got.text)) == want


@pytest.mark.parametrize("vendor", ["supermicro", "lenovo"])
def test_on_real_registries_the_names_agree_with_the_vendor_tables(vendor: str) -> None:
    """Where a plugin's table and the registry's names both find a key, they find the same attribute."""
    registry, plugin, agreed = reg(vendor), by_name(vendor), 0
    for key in sorted(REGISTRY_NAMES):
        table = plugin.bios_attribute(key, sorted(registry.attributes))
        found = find(key, registry, REGISTRY_NAMES)
        if table is not None and found is not None:
            assert found.attribute == table, key
            agreed += 1
    assert agreed >= 5


def test_every_table_key_is_a_spec_key() -> None:
    assert set(REGISTRY_NAMES) <= BIOS_NEUTRAL_KEYS


def test_display_names_drop_trademarks_and_fold_spaces() -> None:
    assert display("Intel®  VT for Directed I/O (VT-d)") == "Intel VT for Directed I/O (VT-d)"
    assert display("Intel(R) Turbo Boost(TM) Technology") == "Intel Turbo Boost Technology"


def test_two_attributes_that_fit_are_an_error_naming_the_key_and_both() -> None:
    with pytest.raises(AmbiguousBiosKey) as err:
        find("sriov", reg("ambiguous"), REGISTRY_NAMES)
    line = str(err.value)
    assert "\n" not in line and line.startswith("BIOS key sriov: 2 attributes of registry AssembledSriovTwoSwitches")
    assert "SriovGlobalEnable (AttributeName 'SriovGlobalEnable')" in line
    assert "DevicesandIOPorts_SRIOV (DisplayName 'SRIOV')" in line
    assert err.value.candidates == ("DevicesandIOPorts_SRIOV", "SriovGlobalEnable")


# --- through the plugin and the plan --------------------------------------------------------------
def _state(source: str, current: dict[str, AttrValue]) -> bios_ops.BiosState:
    bios = Bios.parse({"@odata.id": "/redfish/v1/Systems/1/Bios", "Attributes": current})
    return bios_ops.BiosState(current=bios, pending={}, pending_uri="/redfish/v1/Systems/1/Bios/SD",
                              registry=reg(source))


def test_the_plugin_table_comes_first() -> None:
    t = by_name("lenovo").resolve_bios("numa", "enabled", {}, reg("lenovo"))
    assert t is not None and (t.attribute, t.value, t.via) == ("Memory_SocketInterleave", "NUMA", None)
    # the standard table names SriovGlobalEnable (Dell's): the registry's two SR-IOV switches are never weighed
    t = by_name("generic").resolve_bios("sriov", "enabled", {}, reg("ambiguous"))
    assert t is not None and (t.attribute, t.value, t.via) == ("SriovGlobalEnable", "Enabled", None)


@pytest.mark.parametrize(("value", "code"), [("enabled", "0"), ("disabled", "1")])
def test_a_coded_value_is_found_by_its_display_name(value: str, code: str) -> None:
    """AMI's Hyper-Threading [ALL] holds 0 = Enable, 1 = Disable: the value comes from ValueDisplayName."""
    t = by_name("ami").resolve_bios("hyperthreading", value, {}, reg("ami"))
    assert t is not None and (t.attribute, t.value) == ("ProcessorHyperThreadingDisable", code)
    assert t.via == "registry: DisplayName 'Hyper-Threading [ALL]'"


def test_a_boolean_attribute_takes_a_boolean() -> None:
    t = NoTables().resolve_bios("iommu", "enabled", {}, reg("dpu"))
    assert t is not None and (t.attribute, t.value) == ("EnableSMMU", True)


def test_the_plan_shows_what_each_key_was_found_by() -> None:
    spec = BiosSpec(settings={"numa": "disabled", "iommu": "enabled", "above_4g_decoding": "enabled"})
    plan = bios_ops.plan(spec, _state("ami", {"NumaEn": "Enabled", "VTdSupport": "Disabled"}), by_name("ami"))
    assert plan.found == ["iommu -> VTdSupport (registry: AttributeName 'VTdSupport')",
                          "numa -> NumaEn (registry: AttributeName 'NumaEn')"]
    assert [(c.key, c.attribute, c.target) for c in plan.changes] == [
        ("iommu", "VTdSupport", "Enabled"), ("numa", "NumaEn", "Disabled")]
    assert plan.unmapped == ["above_4g_decoding"] and plan.invalid == []


def test_an_ambiguous_key_is_refused_and_nothing_else_is_lost() -> None:
    spec = BiosSpec(settings={"sriov": "enabled", "hyperthreading": "enabled"})
    current: dict[str, AttrValue] = {"SriovGlobalEnable": "Disabled", "DevicesandIOPorts_SRIOV": "Disabled",
                                     "LogicalProc": "Disabled"}
    plan = bios_ops.plan(spec, _state("ambiguous", current), NoTables())
    assert len(plan.invalid) == 1 and plan.invalid[0].startswith("BIOS key sriov: 2 attributes")
    assert [c.attribute for c in plan.changes] == ["LogicalProc"], "the other key is still planned"
    assert "sriov" not in {c.key for c in plan.changes} and plan.differs


def test_naming_one_candidate_under_vendor_attributes_settles_it() -> None:
    spec = BiosSpec(settings={"sriov": "enabled"},
                    vendor_attributes={"notables": {"SriovGlobalEnable": "Enabled"}})
    plan = bios_ops.plan(spec, _state("ambiguous", {"SriovGlobalEnable": "Disabled"}), NoTables())
    assert plan.invalid == [] and plan.found == ["sriov -> SriovGlobalEnable (bios.vendor_attributes.notables)"]
    assert [(c.key, c.attribute) for c in plan.changes] == [("vendor:SriovGlobalEnable", "SriovGlobalEnable")]


# --- what an operator sees: bios diff's lines and JSON, verify's row -------------------------------
def test_bios_diff_prints_what_each_key_was_found_by(capsys: pytest.CaptureFixture[str]) -> None:
    from provision.cli import bios as bios_cli
    from provision.cli.output import Format

    spec = BiosSpec(settings={"numa": "enabled", "sriov": "enabled"})
    plan = bios_ops.plan(spec, _state("ami", {"NumaEn": "Enabled", "PCIeSRIOVSupport": "Enabled"}), by_name("ami"))
    bios_cli.render("node07", plan, Format.PLAIN)
    out = " ".join(capsys.readouterr().out.split())
    assert "found: numa -> NumaEn (registry: AttributeName 'NumaEn')" in out
    assert "found: sriov -> PCIeSRIOVSupport (registry: AttributeName 'PCIeSRIOVSupport')" in out
    assert json.loads(plan.model_dump_json())["found"] == plan.found


def test_verify_reports_an_ambiguous_key_as_an_error_naming_the_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from provision.conformance import bmc_source
    from provision.conformance.checks import bmc as bmc_checks
    from provision.conformance.model import Level, Outcome
    from tests.unit.conformance.helpers import area, run, spec

    state = _state("ambiguous", {"SriovGlobalEnable": "Disabled", "DevicesandIOPorts_SRIOV": "Disabled"})
    monkeypatch.setattr(bmc_source.bios_ops, "observe", lambda node: state)
    node_spec = spec()
    system = ComputerSystem.parse({"@odata.id": "/redfish/v1/Systems/1"})
    settings = bmc_source._bios(SimpleNamespace(vendor=NoTables(), system=system), node_spec)  # type: ignore[arg-type]
    sriov = next(s for s in settings if s.key == "sriov")
    assert sriov.attribute is None and sriov.error is not None and "SriovGlobalEnable" in sriov.error
    ctx = run(node_spec, {}, Level.QUICK)
    ctx.results.clear()
    bmc_checks._bios(ctx, SimpleNamespace(bios=(sriov,), vendor="notables"))  # type: ignore[arg-type]
    row = area(ctx, "bmc")["bmc.bios.sriov"]
    assert row.outcome is Outcome.ERROR and "DevicesandIOPorts_SRIOV" in row.detail, row


def test_without_a_published_registry_the_names_of_the_current_attributes_are_read() -> None:
    """A BMC that publishes no registry: the BIOS's own attribute names (no DisplayName to read), said so."""
    current: dict[str, AttrValue] = {"NumaEn": "Enabled", "VTdSupport": "Disabled", "Dummy": 1}
    t = NoTables().resolve_bios("numa", "disabled", current, AttributeRegistry.infer(current))
    assert t is not None and (t.attribute, t.value) == ("NumaEn", "Disabled")
    assert t.via == "current attributes: AttributeName 'NumaEn'"
