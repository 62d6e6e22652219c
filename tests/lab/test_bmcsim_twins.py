"""With node twins: `lab up` writes SSH access to the inventory, the BMC's power drives the twin, and
twin fault kinds pass through `lab fault` to the twins module."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redfish
import yaml

from provision.lab import manager

pytestmark = [pytest.mark.lab, pytest.mark.twins]


def _ssh(hv: dict[str, Any]) -> int:
    cmd = ["ssh", "-i", hv["ansible_ssh_private_key_file"], "-p", str(hv["ansible_port"]),
           "-o", f"UserKnownHostsFile={hv['provision_ssh_known_hosts']}", "-o", "StrictHostKeyChecking=yes",
           "-o", "BatchMode=yes", "-o", "ConnectTimeout=3", f"{hv['ansible_user']}@{hv['ansible_host']}", "true"]
    return subprocess.run(cmd, capture_output=True, timeout=30, check=False).returncode


def _gpu_count(hv: dict[str, Any]) -> int:
    cmd = ["ssh", "-i", hv["ansible_ssh_private_key_file"], "-p", str(hv["ansible_port"]),
           "-o", f"UserKnownHostsFile={hv['provision_ssh_known_hosts']}", "-o", "StrictHostKeyChecking=yes",
           "-o", "BatchMode=yes", f"{hv['ansible_user']}@{hv['ansible_host']}", "nvidia-smi -L"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False).stdout
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def _until(pred: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(1)
    return False


def test_bmc_power_drives_the_twin(tmp_path: Path) -> None:
    if os.geteuid() != 0 or shutil.which("systemd-nspawn") is None:
        pytest.skip("node twins need root and systemd-nspawn")
    lab = tmp_path / "lab"
    manager.up(manager.UpOptions(lab_dir=lab, nodes=1, speed=60))
    try:
        hv = yaml.safe_load((lab / "inventory" / "host_vars" / "node01.yml").read_text())
        assert "StrictHostKeyChecking=yes" in hv["ansible_ssh_common_args"]
        assert _ssh(hv) == 0
        client = redfish.redfish_client(base_url=hv["provision_bmc_address"], username=hv["provision_bmc_username"],
                                        password=hv["provision_bmc_password"], cafile=hv["provision_bmc_ca_file"])
        client.login(auth="session")
        reset = "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"
        assert client.post(reset, body={"ResetType": "ForceOff"}).status == 200
        assert _until(lambda: _ssh(hv) != 0, 60), "the twin stopped when the BMC powered the host off"
        assert client.post(reset, body={"ResetType": "On"}).status == 200
        assert _until(lambda: _ssh(hv) == 0, 120), "the twin booted when the BMC powered the host on"
        client.logout()
        gpus = _gpu_count(hv)
        assert manager.fault(lab, "node01", "gpu_missing", clear=False, value=None)["twin_fault"] == "gpu_missing"
        assert _gpu_count(hv) == gpus - 1, "a twin fault kind reaches the twin"
        manager.fault(lab, "node01", "gpu_missing", clear=True, value=None)
        assert _gpu_count(hv) == gpus
        log = (lab / "bmcsim.log").read_text()
        assert '"event": "twin.power", "on": false' in log and '"event": "twin.power", "on": true' in log
    finally:
        manager.down(lab)
    assert not (lab / "lab.json").exists()
