"""DMTF's Tacklebox clients (redfish-utilities) against a lab node: BIOS, power reset, firmware update.

The Supermicro capture's pending-settings resource (Bios/SD) carries no `Attributes` until something
is pending, as the real BMC answered; Tacklebox reads it only with `-workaround`, so that flag is
passed (it changes reading only, the PATCH goes to Bios/SD either way).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from provision.lab.bmcsim.images import make_image

pytestmark = pytest.mark.lab
NODE = "node01"


def _tool(name: str) -> str:
    path = shutil.which(name, path=str(Path(sys.executable).parent))
    if path is None:
        pytest.skip(f"{name} not installed (pip install -e .[test])")
    return path


def _run(lab: Any, tool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    hv = lab.host_vars(NODE)
    return subprocess.run(
        [_tool(tool), "-u", hv["provision_bmc_username"], "-p", hv["provision_bmc_password"],
         "-r", hv["provision_lab_bmc_http_address"], *args],
        capture_output=True, text=True, timeout=180, check=False, cwd=cwd,
    )


def _bios_row(out: str, attr: str) -> list[str]:
    for line in out.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if cells and cells[0] == attr:
            return cells
    raise AssertionError(f"{attr} not listed:\n{out[-2000:]}")


def test_bios_settings_and_power_reset(bmc_lab: Any, tmp_path: Path) -> None:
    attr = "ConsistentDeviceNameSupport_004A"
    shown = _run(bmc_lab, "rf_bios_settings.py", "-workaround", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    current = _bios_row(shown.stdout, attr)[1]
    want = "Disabled" if current == "Enabled" else "Enabled"
    bad = _run(bmc_lab, "rf_bios_settings.py", "-workaround", "-a", "Bogus_0000", "1", cwd=tmp_path)
    assert "PropertyUnknown" in bad.stdout + bad.stderr
    done = _run(bmc_lab, "rf_bios_settings.py", "-workaround", "-a", attr, want, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _bios_row(_run(bmc_lab, "rf_bios_settings.py", "-workaround", cwd=tmp_path).stdout, attr)[1:3] == [
        current, want]
    info = _run(bmc_lab, "rf_power_reset.py", "--info", cwd=tmp_path)
    assert "Supported reset types:" in info.stdout and "ForceRestart" in info.stdout
    reset = _run(bmc_lab, "rf_power_reset.py", "-t", "ForceRestart", cwd=tmp_path)
    assert reset.returncode == 0, reset.stdout + reset.stderr
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        row = _bios_row(_run(bmc_lab, "rf_bios_settings.py", "-workaround", cwd=tmp_path).stdout, attr)
        if row[1] == want:
            break
        time.sleep(0.5)
    assert row[1] == want, "applied at the reset"


def test_update_pushes_an_image_and_waits_for_the_task(bmc_lab: Any, tmp_path: Path) -> None:
    image = make_image(tmp_path / "gpu.bin", "GPU5", "96.00.AA.00.01")
    done = _run(bmc_lab, "rf_update.py", "-i", str(image), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Task is Done" in done.stdout
    client = bmc_lab.client(NODE)
    assert client.get("/redfish/v1/UpdateService/FirmwareInventory/GPU5").dict["Version"] == "96.00.AA.00.01"
    assert client.get("/redfish/v1/UpdateService/FirmwareInventory/GPU6").dict["Version"] != "96.00.AA.00.01"
    client.logout()
