"""NVIDIA HGX / OpenBMC plugin (GH200 capture), the HGX entries a Supermicro host BMC aggregates, AMI's
HostBMC_0/HostBIOS_0, and which plugin each BMC's root gets."""

from __future__ import annotations

import pytest
from full_captures import firmware_entries, get

from provision.redfish.resources import ComputerSystem, ServiceRoot, SoftwareInventory, UpdateService
from provision.redfish.vendors import by_name, detect


@pytest.mark.parametrize(("capture", "system", "vendor"), [
    ("nvidia_gh200", "/redfish/v1/Systems/System_0", "nvidia_hgx"),
    ("supermicro", "/redfish/v1/Systems/1", "supermicro"),  # an HGX H100 host: its own BMC's plugin
    ("hpe", "/redfish/v1/Systems/1", "hpe"),
    ("lenovo", "/redfish/v1/Systems/1", "lenovo"),
])
def test_detect_each_capture(capture: str, system: str, vendor: str) -> None:
    root = ServiceRoot.parse(get(capture, "/redfish/v1"))
    assert detect(root, ComputerSystem.parse(get(capture, system))).name == vendor


def test_dgx_host_behind_ami_is_not_taken_by_nvidia() -> None:
    root = ServiceRoot.parse({"@odata.id": "/redfish/v1", "Vendor": "AMI", "Oem": {"Ami": {}}})
    host = ComputerSystem.parse({"@odata.id": "/redfish/v1/Systems/DGX", "Manufacturer": "NVIDIA"})
    assert detect(root, host).name == "ami"


@pytest.mark.parametrize(("component", "ids"), [
    ("bmc", ["FW_BMC_0"]),
    ("bios", ["UEFI"]),
    ("gpu", ["HGX_FW_GPU_0", "HGX_FW_GPU_1"]),  # not HGX_FW_ERoT_GPU_*, not HGX_InfoROM_GPU_*
    ("hgx_bmc", ["HGX_FW_BMC_0"]),
    ("erot", ["FW_ERoT_BMC_0", "HGX_FW_ERoT_BMC_0", "HGX_FW_ERoT_CPU_0", "HGX_FW_ERoT_CPU_1",
              "HGX_FW_ERoT_FPGA_0", "HGX_FW_ERoT_GPU_0", "HGX_FW_ERoT_GPU_1"]),
    ("nvswitch", []),
])
def test_gh200_firmware_matching(component: str, ids: list[str]) -> None:
    got = by_name("nvidia_hgx").match_firmware(component, firmware_entries("nvidia_gh200"))
    assert sorted(e.id for e in got) == sorted(ids)


def test_hgx_baseboard_bmc_alone_is_the_bmc() -> None:
    entries = [e for e in firmware_entries("nvidia_gh200") if not e.id.startswith("FW_")]
    assert [e.id for e in by_name("nvidia_hgx").match_firmware("bmc", entries)] == ["HGX_FW_BMC_0"]


@pytest.mark.parametrize(("vendor", "capture", "component", "ids"), [
    ("generic", "nvidia_gh200", "gpu", ["HGX_FW_GPU_0", "HGX_FW_GPU_1"]),
    ("generic", "supermicro", "nvswitch", [f"HGX_FW_NVSwitch_{i}" for i in range(4)]),
    ("ami", "supermicro", "gpu", [f"HGX_FW_GPU_SXM_{i}" for i in range(1, 9)]),
    ("supermicro", "supermicro", "gpu", [f"HGX_FW_GPU_SXM_{i}" for i in range(1, 9)]),
    ("supermicro", "supermicro", "hgx_bmc", ["HGX_FW_BMC_0"]),
])
def test_hgx_entries_elsewhere(vendor: str, capture: str, component: str, ids: list[str]) -> None:
    """Regression: `\\bgpu` never matched `HGX_FW_GPU_...` (`_` is a word character)."""
    got = by_name(vendor).match_firmware(component, firmware_entries(capture))
    assert sorted(e.id for e in got) == sorted(ids)


def test_generic_gpu_on_hgx_only_ids_takes_the_hgx_entries() -> None:
    entries = [e for e in firmware_entries("supermicro") if e.id.startswith("HGX_")]
    got = sorted(e.id for e in by_name("generic").match_firmware("gpu", entries))
    assert got == sorted(f"HGX_FW_GPU_SXM_{i}" for i in range(1, 9))


def _entry(id_: str, name: str = "Software Inventory", state: str = "Enabled") -> SoftwareInventory:
    return SoftwareInventory.parse({"@odata.id": f"/redfish/v1/UpdateService/FirmwareInventory/{id_}", "Id": id_,
                                    "Name": name, "Version": "1.0", "Status": {"State": state}})


@pytest.mark.parametrize("vendor", ["ami", "generic"])
def test_dgx_host_bmc_names(vendor: str) -> None:
    """Regression: `\\bbmc\\b`/`\\bbios\\b` never matched HostBMC_0/HostBIOS_0."""
    entries = [_entry("HostBMC_0"), _entry("HostBIOS_0"), _entry("HGX_FW_GPU_SXM_1"), _entry("HGX_FW_ERoT_GPU_SXM_1"),
               _entry("HGX_FW_BMC_0"), _entry("HostBIOS_1", "Backup", "StandbySpare")]
    plugin = by_name(vendor)
    assert [e.id for e in plugin.match_firmware("bios", entries)] == ["HostBIOS_0"]
    assert "HostBMC_0" in [e.id for e in plugin.match_firmware("bmc", entries)]
    assert [e.id for e in plugin.match_firmware("gpu", entries)] == ["HGX_FW_GPU_SXM_1"]


def test_update_method_is_multipart_with_entry_targets() -> None:
    service = UpdateService.parse(get("nvidia_gh200", "/redfish/v1/UpdateService"))
    plugin = by_name("nvidia_hgx")
    assert plugin.multipart_uri(service) == "/redfish/v1/UpdateService/update-multipart"
    gpus = plugin.match_firmware("gpu", firmware_entries("nvidia_gh200"))
    assert plugin.update_targets("gpu", gpus) == [f"/redfish/v1/UpdateService/FirmwareInventory/HGX_FW_GPU_{i}"
                                                   for i in range(2)]


@pytest.mark.parametrize(("vendor", "capture", "methods"), [
    ("nvidia_hgx", "nvidia_gh200", ("multipart", "http_push", "oem:#NvidiaUpdateService.CommitImage",
                                    "oem:#NvidiaUpdateService.PublicKeyExchange",
                                    "oem:#NvidiaUpdateService.RevokeAllRemoteServerPublicKeys")),
    ("supermicro", "supermicro", ("multipart", "simple", "oem:#SmcUpdateService.Install")),
    ("lenovo", "lenovo", ("multipart", "simple", "http_push")),
    ("hpe", "hpe", ("simple", "http_push")),
])
def test_update_methods_each_bmc_offers(vendor: str, capture: str, methods: tuple[str, ...]) -> None:
    service = UpdateService.parse(get(capture, "/redfish/v1/UpdateService"))
    assert by_name(vendor).update_methods(service) == methods


def test_task_monitoring() -> None:
    assert by_name("nvidia_hgx").task_monitor == "task" and by_name("hpe").task_monitor == "hpe-update-service"


def test_gh200_bios_pending_and_unmapped_keys() -> None:
    from provision.redfish.resources import AttributeRegistry, Bios

    bios = Bios.parse(get("nvidia_gh200", "/redfish/v1/Systems/System_0/Bios"))
    plugin = by_name("nvidia_hgx")
    assert plugin.pending_uri(bios) == "/redfish/v1/Systems/System_0/Bios/Settings"
    reg = AttributeRegistry.from_json(get("nvidia_gh200", "/redfish/v1/Registries/BiosAttributeRegistry/"
                                                          "BiosAttributeRegistry"))
    assert reg.attributes and plugin.resolve_bios("hyperthreading", "enabled", bios.attributes, reg) is None
