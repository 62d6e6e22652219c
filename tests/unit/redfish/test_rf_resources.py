"""Typed resources fed with recorded JSON (sushy samples and real captures), field by field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rf_support import FIXTURES, tree

from provision.redfish import resources as r


def sample(name: str) -> Any:
    return json.loads((FIXTURES / "sushy" / name).read_text())


def test_processor_sample() -> None:
    p = r.Processor.parse(sample("processor.json"))
    assert (p.id, p.processor_type, p.total_cores, p.total_threads, p.max_speed_mhz) == ("CPU1", "CPU", 8, 16, 3700)
    assert p.uri == "/redfish/v1/Systems/437XR1138R2/Processors/CPU1" and p.present


def test_system_sample() -> None:
    s = r.ComputerSystem.parse(sample("system.json"))
    assert s.power_state == "On" and s.reset_target and "ForceOff" in s.reset_types
    assert s.total_memory_gib == 96 and s.boot.boot_source_override_target == "Pxe"


def test_drive_volume_storage_samples() -> None:
    d = r.Drive.parse(sample("drive.json"))
    assert d.capacity_bytes == 899527000000 and d.protocol == "SAS"
    v = r.Volume.parse(sample("volume.json"))
    assert v.capacity_bytes and v.volume_type
    s = r.Storage.parse(sample("storage.json"))
    assert len(s.drive_uris) == 4


def test_firmware_task_power_thermal_samples() -> None:
    fw = r.SoftwareInventory.parse(sample("softwareinventory.json"))
    assert fw.version == "1.45.455b66-rev4" and fw.updateable is True
    t = r.Task.parse(sample("task.json"))
    assert t.task_state == "Completed" and t.done and t.ok
    pw = r.Power.parse(sample("power.json"))
    assert pw.power_supplies and pw.power_supplies[0].power_capacity_watts == 1450
    th = r.Thermal.parse(sample("thermal.json"))
    assert th.temperatures[0].reading_celsius == 62 and th.fans


@pytest.mark.parametrize(("state", "status", "done", "ok"), [
    ("Completed", "OK", True, True),
    ("Completed", None, True, True),        # TaskStatus is optional; the state says it completed
    ("Completed", "Warning", True, True),   # Task schema: Completed is "successfully or with warnings"
    ("Completed", "Critical", True, False),  # ... and Critical is neither
    ("Exception", "Critical", True, False),
    ("Exception", "OK", True, False),
    ("Killed", "OK", True, False),
    ("Cancelled", "OK", True, False),
    ("Interrupted", "Warning", True, False),
    ("Running", "OK", False, False),
    ("Pending", "OK", False, False),
    (None, "OK", False, False),
])
def test_a_task_is_a_success_only_completed_without_a_critical_status(
        state: str | None, status: str | None, done: bool, ok: bool) -> None:
    doc = {"@odata.id": "/redfish/v1/TaskService/Tasks/1", "TaskState": state, "TaskStatus": status}
    task = r.Task.parse({k: v for k, v in doc.items() if v is not None})
    assert (task.done, task.ok) == (done, ok)


def test_port_and_adapter_samples() -> None:
    assert r.NetworkPort.parse(sample("network_port.json")).speed_gbps
    assert r.NetworkAdapter.parse(sample("network_adapter.json")).manufacturer
    assert r.PCIeDevice.parse(sample("pcie_device.json")).id


def test_supermicro_gpu_pcie_device() -> None:
    d = r.PCIeDevice.parse(tree("supermicro")["/redfish/v1/Chassis/1/PCIeDevices/GPU1"])
    assert (d.model, d.pcie_type, d.lanes, d.firmware_version) == ("H100 80GB HBM3", "Gen5", 16, "96.00.61.00.01")


def test_supermicro_bios_points_at_sd() -> None:
    b = r.Bios.parse(tree("supermicro")["/redfish/v1/Systems/1/Bios"])
    assert b.settings_uri == "/redfish/v1/Systems/1/Bios/SD" and len(b.attributes) == 379


def test_update_service_supermicro() -> None:
    us = r.UpdateService.parse(tree("supermicro")["/redfish/v1/UpdateService"])
    assert us.multipart_http_push_uri == "/redfish/v1/UpdateService/upload"
    assert us.oem_action("#SmcUpdateService.Install", ) == "/redfish/v1/UpdateService/Actions/Oem/SmcUpdateService.Install"
    assert us.simple_update_target


@pytest.mark.parametrize("bad", [None, [], "x"])
def test_parse_tolerates_non_objects(bad: Any) -> None:
    assert r.Processor.parse(bad).id == ""
