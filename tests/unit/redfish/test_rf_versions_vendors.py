"""Version parsing/comparison, firmware matching and BIOS key mapping per vendor, as tables."""

from __future__ import annotations

import json

import pytest
from rf_support import FIXTURES, tree

from provision.redfish.resources import AttributeRegistry, ComputerSystem, ServiceRoot, SoftwareInventory
from provision.redfish.vendors import by_name, detect
from provision.redfish.vendors.versions import compare, parse_version


@pytest.mark.parametrize(("raw", "want"), [
    ("BIOS Date: 08/04/2023 Ver 1.4", "1.4"),
    ("P79 v1.45", "1.45"),
    ("6.00.30.00", "6.00.30.00"),
    ("11.01.01", "11.01.01"),
    ("96.00.61.00.01", "96.00.61.00.01"),
    ("28.37.10.14", "28.37.10.14"),
    ("Version 2.1", "2.1"),
    ("1.8.2", "1.8.2"),
])
def test_parse_version(raw: str, want: str) -> None:
    assert parse_version(raw) == want


@pytest.mark.parametrize(("a", "b", "want"), [
    ("1.4", "2.1", -1),
    ("2.1", "2.1", 0),
    ("2.1", "2.1.0", 0),
    ("11.02.05", "11.01.01", 1),
    ("1.10.0", "1.9.9", 1),
    ("96.00.9F.00.04", "96.00.61.00.01", 1),
    ("96.10.35.00.01", "96.10.6D.00.01", -1),
    ("28.39.1002", "28.37.10.14", 1),
])
def test_compare(a: str, b: str, want: int) -> None:
    assert compare(a, b) == want


def _entries(name: str) -> list[SoftwareInventory]:
    t = tree(name)
    return [SoftwareInventory.parse(v) for k, v in t.items()
            if k.startswith("/redfish/v1/UpdateService/FirmwareInventory/") and k.count("/") == 5]


@pytest.mark.parametrize(("vendor", "component", "ids"), [
    ("supermicro", "bmc", ["BMC"]),
    ("supermicro", "bios", ["BIOS"]),
    ("supermicro", "gpu", [f"HGX_FW_GPU_SXM_{i}" for i in range(1, 9)]),
    ("supermicro", "nvswitch", [f"HGX_FW_NVSwitch_{i}" for i in range(4)]),
    ("generic", "bios", ["BIOS"]),
    ("generic", "bmc", ["BMC"]),
])
def test_firmware_matching(vendor: str, component: str, ids: list[str]) -> None:
    tree_name = "supermicro" if vendor == "supermicro" else "public-rackmount1"
    got = sorted(e.id for e in by_name(vendor).match_firmware(component, _entries(tree_name)))
    assert got == sorted(ids)


def test_dell_firmware_matching_skips_previous_copies() -> None:
    entries = _entries("dell")
    bios = by_name("dell").match_firmware("bios", entries)
    assert bios and all(e.id.startswith("Installed-") for e in bios)


def test_match_override_from_spec() -> None:
    got = by_name("supermicro").match_firmware("bmc", _entries("supermicro"), {"supermicro": r"^Golden_BMC$"})
    assert [e.id for e in got] == []  # excluded as an inactive copy even when named
    got = by_name("supermicro").match_firmware("ib_nic", _entries("supermicro"), {"supermicro": r"^NIC1$"})
    assert [e.id for e in got] == ["NIC1"]


@pytest.mark.parametrize(("name", "vendor"), [
    ("supermicro", "supermicro"), ("dell", "dell"), ("public-rackmount1", "generic"),
])
def test_detect(name: str, vendor: str) -> None:
    t = tree(name)
    sys_uri = t["/redfish/v1/Systems"]["Members"][0]["@odata.id"]
    assert detect(ServiceRoot.parse(t["/redfish/v1"]), ComputerSystem.parse(t[sys_uri])).name == vendor


SM_BIOS = "/redfish/v1/Systems/1/Bios"
DELL_BIOS = "/redfish/v1/Systems/System.Embedded.1/Bios"


@pytest.mark.parametrize(("key", "value", "attr", "vendor_value"), [
    ("sriov", "enabled", "SR_IOVSupport_0047", "Enabled"),
    ("hyperthreading", "enabled", "Hyper_Threading_ALL__F27F", "Enable"),
    ("hyperthreading", "disabled", "Hyper_Threading_ALL__F27F", "Disable"),
    ("resizable_bar", "enabled", "Re_SizeBARSupport_0042", "Enabled"),
    ("iommu", "enabled", "IntelVTforDirectedI_O_VT_d__1E32", "Enable"),
    ("turbo", "disabled", "TurboMode_3D06", "Disable"),
    ("numa", "enabled", "NUMA_003B", "Enabled"),
    ("above_4g_decoding", "enabled", "Above4GDecoding_0041", "Enabled"),
])
def test_supermicro_bios_mapping_inferred_registry(key: str, value: str, attr: str, vendor_value: str) -> None:
    current = tree("supermicro")[SM_BIOS]["Attributes"]
    t = by_name("supermicro").resolve_bios(key, value, current, AttributeRegistry.infer(current))
    assert t is not None and (t.attribute, t.value) == (attr, vendor_value)


@pytest.mark.parametrize(("key", "value", "attr", "vendor_value"), [
    ("sriov", "enabled", "SriovGlobalEnable", "Enabled"),
    ("hyperthreading", "enabled", "LogicalProc", "Enabled"),
    ("numa", "enabled", "NodeInterleave", "Disabled"),  # inverted sense
    ("numa", "disabled", "NodeInterleave", "Enabled"),
    ("sub_numa_clustering", "disabled", "SubNumaCluster", "Disabled"),
    ("boot_mode", "uefi", "BootMode", "Uefi"),
    ("power_profile", "performance", "SysProfile", "PerfOptimized"),
    ("above_4g_decoding", "enabled", "MmioAbove4Gb", "Enabled"),
    ("turbo", "enabled", "ProcTurboMode", "Enabled"),
])
def test_dell_bios_mapping_real_registry(key: str, value: str, attr: str, vendor_value: str) -> None:
    t = tree("dell")
    current = t[DELL_BIOS]["Attributes"]
    registry = AttributeRegistry.from_json(t[f"{DELL_BIOS}/BiosRegistry"])
    assert not registry.inferred and len(registry.attributes) > 100
    got = by_name("dell").resolve_bios(key, value, current, registry)
    assert got is not None and (got.attribute, got.value) == (attr, vendor_value)


def test_unmapped_key_is_none() -> None:
    current = tree("supermicro")[SM_BIOS]["Attributes"]
    assert by_name("supermicro").resolve_bios("boot_mode", "uefi", current, AttributeRegistry.infer(current)) is None


def test_sushy_registry_sample_parses() -> None:
    data = json.loads((FIXTURES / "sushy" / "bios_attribute_registry.json").read_text())
    reg = AttributeRegistry.from_json(data)
    assert reg.attributes and all(a.attribute_name for a in reg.attributes.values())
