"""Lenovo XCC plugin against the whole capture (tests/fixtures/redfish/full/lenovo, SR670 V2)."""

from __future__ import annotations

import pytest
from full_captures import firmware_entries, get, registry

from provision.redfish.resources import Bios, ComputerSystem, ServiceRoot, UpdateService
from provision.redfish.vendors import by_name, detect

CUR = "/redfish/v1/Systems/1/Bios"
REG = "/redfish/v1/schemas/registries/BiosAttributeRegistry.1.0.0.json"


def test_detected() -> None:
    root = ServiceRoot.parse(get("lenovo", "/redfish/v1"))
    assert detect(root, ComputerSystem.parse(get("lenovo", "/redfish/v1/Systems/1"))).name == "lenovo"
    assert detect(root, None).name == "lenovo"  # the root's Vendor alone


@pytest.mark.parametrize(("component", "ids"), [
    ("bmc", ["BMC-Primary"]),  # not BMC-Backup (StandbySpare) nor BMC-Primary-Pending (Disabled)
    ("bios", ["UEFI"]),  # not UEFI-Pending, nor Slot_25.2 "Marvell UEFI NVMe Driver & BIOS"
    ("gpu", [f"GPU{i}" for i in range(1, 9)]),  # not Slot_30/31.Bundle, the PCIe switch boards
    ("ib_nic", ["Slot_15.Bundle"]),  # the Mellanox (15B3) card's updateable bundle
    ("nvswitch", []),
])
def test_firmware_matching(component: str, ids: list[str]) -> None:
    got = by_name("lenovo").match_firmware(component, firmware_entries("lenovo"))
    assert sorted(e.id for e in got) == sorted(ids)


@pytest.mark.parametrize(("component", "wrong"), [
    ("bios", "Slot_25.2"), ("bmc", "BMC-Primary-Pending"), ("bios", "UEFI-Pending"), ("gpu", "Slot_30.Bundle"),
])
def test_generic_rules_never_take_these_either(component: str, wrong: str) -> None:
    """Regression: before, the generic rules matched a RAID driver's BIOS, pending slots and the switch board."""
    got = {e.id for e in by_name("generic").match_firmware(component, firmware_entries("lenovo"))}
    assert got and wrong not in got


def test_pending_slot_excluded_even_when_the_spec_names_it() -> None:
    got = by_name("lenovo").match_firmware("bmc", firmware_entries("lenovo"), {"lenovo": r"^BMC-"})
    assert [e.id for e in got] == ["BMC-Primary"]


@pytest.mark.parametrize(("key", "value", "attr", "vendor_value"), [
    ("sriov", "enabled", "DevicesandIOPorts_SRIOV", "Enabled"),
    ("hyperthreading", "enabled", "Processors_HyperThreading", "Enabled"),
    ("hyperthreading", "disabled", "Processors_HyperThreading", "Disabled"),
    ("iommu", "enabled", "DevicesandIOPorts_IntelVTforDirectedIOVTd", "Enabled"),
    ("turbo", "enabled", "Processors_TurboMode", "Enabled"),
    ("sub_numa_clustering", "disabled", "Processors_SNC", "Disabled"),
    ("numa", "enabled", "Memory_SocketInterleave", "NUMA"),
    ("numa", "disabled", "Memory_SocketInterleave", "Non_NUMA"),
    ("power_profile", "performance", "OperatingModes_ChooseOperatingMode", "MaximumPerformance"),
    ("boot_mode", "uefi", "BootModes_SystemBootMode", "UEFIMode"),
])
def test_bios_mapping_real_registry(key: str, value: str, attr: str, vendor_value: str) -> None:
    reg = registry("lenovo", REG)
    assert not reg.inferred and len(reg.attributes) > 100
    t = by_name("lenovo").resolve_bios(key, value, get("lenovo", CUR)["Attributes"], reg)
    assert t is not None and (t.attribute, t.value) == (attr, vendor_value)
    assert vendor_value in reg.attributes[attr].allowed


def test_pending_uri() -> None:
    assert by_name("lenovo").pending_uri(Bios.parse(get("lenovo", CUR))) == "/redfish/v1/Systems/1/Bios/Pending"
    no_settings = {k: v for k, v in get("lenovo", CUR).items() if k != "@Redfish.Settings"}
    assert by_name("lenovo").pending_uri(Bios.parse(no_settings)) == "/redfish/v1/Systems/1/Bios/Pending"


def test_update_method_multipart_without_targets() -> None:
    service = UpdateService.parse(get("lenovo", "/redfish/v1/UpdateService"))
    plugin = by_name("lenovo")
    assert plugin.multipart_uri(service) == "/mfwupdate"
    assert plugin.update_targets("bmc", plugin.match_firmware("bmc", firmware_entries("lenovo"))) == []
