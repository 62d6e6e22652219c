"""A profile that describes a captured real server AS IT IS converges against that server as captured.

The profile `sys_821ge_tnhr_captured` (inventory/group_vars/all/profile_sys_821ge_tnhr_captured.yml) is the
Supermicro SYS-821GE-TNHR (HGX H100 8-GPU) of the whole capture tests/fixtures/redfish/full/supermicro. The
simulator serves that tree as captured (`lab up --bmc-only --bmc-tree ... --as-captured`); the BMC stages read
it and find nothing to change: no drift, firmware at baseline, no BIOS change, a bring-up that does nothing.

The profile's figures are first checked against the capture files themselves, so that a profile edited away
from the capture fails here rather than passing against a simulator that serves the edit. Run under the lab lock.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from provision.spec import load_fleet

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
TREE = REPO / "tests" / "fixtures" / "redfish" / "full" / "supermicro"
V1 = TREE / "redfish" / "v1"
PROFILE = "sys_821ge_tnhr_captured"
CLI = [sys.executable, "-c", "from provision.cli import run; run()"]


def _captured(uri: str) -> dict[str, Any]:
    return dict(json.loads((V1 / uri / "index.json").read_text()))


def _spec() -> Any:
    return load_fleet(REPO / "inventory" / "hosts.yml").profiles[PROFILE]


def test_the_profile_is_the_capture() -> None:
    spec = _spec()
    cpus = [_captured(f"Systems/1/Processors/{i}") for i in (1, 2)]
    assert {c["Model"] for c in cpus} == {spec.cpu.model} and len(cpus) == spec.cpu.sockets
    assert {c["TotalCores"] for c in cpus} == {spec.cpu.cores_per_socket}
    dimms = [_captured(f"Systems/1/Memory/{i}") for i in range(1, 33)]
    assert len(dimms) == spec.memory.dimm_count
    assert {d["CapacityMiB"] for d in dimms} == {spec.memory.dimm_size_gb * 1024}
    assert min(d["OperatingSpeedMhz"] for d in dimms) == spec.memory.min_speed_mts  # 4400: two DIMMs a channel
    psus = _captured("Chassis/1/Power")["PowerSupplies"]
    assert len(psus) == spec.power.psu_count
    assert {p["PowerCapacityWatts"] for p in psus} - {None} == {spec.power.psu_watts}
    gpus = [_captured(f"Chassis/1/PCIeDevices/GPU{i}") for i in range(1, 9)]
    assert len(gpus) == spec.gpu.count and all(g["Model"] in spec.gpu.model for g in gpus)
    drives = [_captured(f"Chassis/NVMeSSD.0.Group.0.StorageBackplane/Drives/Disk.Bay.{i}") for i in range(8)]
    assert len(drives) == spec.storage.boot.count + spec.storage.scratch.count
    assert {round(d["CapacityBytes"] / 1e12, 2) for d in drives} == {spec.storage.boot.size_tb,
                                                                    spec.storage.scratch.size_tb}
    fw = {c.component: c.version for c in spec.firmware}
    inv = "UpdateService/FirmwareInventory"
    assert _captured(f"{inv}/BMC")["Version"] == fw["bmc"]
    assert _captured(f"{inv}/BIOS")["Version"].endswith(f"Ver {fw['bios']}")
    assert {_captured(f"{inv}/HGX_FW_GPU_SXM_{i}")["Version"] for i in range(1, 9)} == {fw["gpu"]}
    assert {_captured(f"{inv}/HGX_FW_NVSwitch_{i}")["Version"] for i in range(4)} == {fw["nvswitch"]}
    attrs = _captured("Systems/1/Bios")["Attributes"]
    assert attrs["SR_IOVSupport_0047"] == "Enabled" and spec.bios.settings["sriov"] == "enabled"
    assert attrs["Re_SizeBARSupport_0042"] == "Disabled" and spec.bios.settings["resizable_bar"] == "disabled"
    assert attrs["PowerPerformanceTuning_3CE0"] == spec.bios.settings["power_profile"]
    assert attrs["SNC_F300"] == spec.bios.settings["sub_numa_clustering"]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, lab_factory: Any) -> Iterator[Any]:
    with lab_factory(tmp_path_factory.mktemp("captured-profile"), nodes=1, bmc_tree=TREE, as_captured=True,
                     profile=PROFILE) as handle:
        yield handle


def cli(inv: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*CLI, *args, "-i", str(inv), "--json"], capture_output=True, text=True,
                          timeout=timeout, check=False, cwd=REPO)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    return proc


def test_the_lab_host_is_on_the_captured_profile(lab: Any) -> None:
    hosts = yaml.safe_load(lab.state.inventory.read_text())["all"]["children"]
    assert list(hosts) == [PROFILE] and list(hosts[PROFILE]["hosts"]) == ["node01"]


def test_bmc_inventory_reports_no_drift(lab: Any) -> None:
    proc = cli(lab.state.inventory, "bmc", "inventory", "node01")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    items = data["drift"]
    assert {"cpu.model", "memory.dimm_count", "gpu.count", "storage.boot.count", "power.psu_watts"} <= {
        i["key"] for i in items}, "the figures were compared"
    assert [i for i in items if i["verdict"] != "ok"] == []
    assert data["drifted"] == 0 and data["unreadable"] == []


def test_firmware_status_is_at_baseline(lab: Any) -> None:
    proc = cli(lab.state.inventory, "firmware", "status", "node01")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    comps = {c["component"]: c for c in json.loads(proc.stdout)["components"]}
    for name, count in {"bmc": 1, "bios": 1, "gpu": 8, "nvswitch": 4}.items():  # flashed through the BMC
        assert comps[name]["verdict"] == "ok" and len(comps[name]["entries"]) == count, comps[name]
        assert {e["verdict"] for e in comps[name]["entries"]} == {"ok"}


def test_bios_diff_has_nothing_to_change(lab: Any) -> None:
    proc = cli(lab.state.inventory, "bios", "diff", "node01")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    plan = json.loads(proc.stdout)["plan"]
    assert plan["changes"] == [] and plan["unmapped"] == [] and plan["invalid"] == []


@pytest.mark.parametrize("stage", ["preflight", "firmware", "bios", "reset"])
def test_bringup_bmc_stage_has_nothing_to_do(lab: Any, stage: str, tmp_path: Path) -> None:
    proc = cli(lab.state.inventory, "bringup", "node01", "--only", stage, "--journal", str(tmp_path / "j.db"),
               "--log-dir", str(tmp_path / "logs"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["ok"] is True and result["plan_only"] is False
    [node] = result["nodes"]
    assert node["node"] == "node01" and node["ok"] is True and node["changed"] is False, node
    [ran] = node["stages"]
    assert ran["stage"] == stage and ran["outcome"] == "converged" and ran["actions"] == [], ran
