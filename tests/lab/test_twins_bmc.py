"""A twin follows its simulated BMC: Redfish ForceOff / On / ForceRestart power the twin off, on, around.

Starts one full lab node (BMC simulator + twin) through the lab manager; always takes it down.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from provision.lab import manager, twins
from provision.lab.twins.ssh import client_argv

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.lab,
    pytest.mark.twins,
    pytest.mark.skipif(os.geteuid() != 0, reason="node twins need root"),
]


@pytest.fixture(scope="module")
def full_lab(tmp_path_factory: pytest.TempPathFactory, lab_handle):
    lab_dir = tmp_path_factory.mktemp("twins-bmc-lab")
    opts = manager.UpOptions(lab_dir=lab_dir, nodes=1, speed=60.0, source_inventory=ROOT / "inventory/hosts.yml")
    try:
        manager.up(opts)
        yield lab_handle(lab_dir)
    finally:
        manager.down(lab_dir)


def _eventually(check: Callable[[], bool], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.3)
    raise AssertionError(f"not within {timeout} s: {what}")


def _boot_id(lab_dir: Path) -> str:
    (info,) = twins.status(lab_dir)
    argv = [*client_argv(info.key_file, info.known_hosts, info.address), "cat /proc/sys/kernel/random/boot_id"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def _running(lab_dir: Path) -> bool:
    return all(i.running for i in twins.status(lab_dir))


def _reset(lab, kind: str) -> None:
    client = lab.client("node01")
    try:
        systems = client.get("/redfish/v1/Systems").dict["Members"]
        target = client.get(systems[0]["@odata.id"]).dict["Actions"]["#ComputerSystem.Reset"]["target"]
        reply = client.post(target, body={"ResetType": kind})
        assert reply.status in (200, 202, 204), reply.text
    finally:
        client.logout()


def test_bmc_power_off_and_on_drive_the_twin(full_lab):
    lab_dir = full_lab.state.lab_dir
    first = _boot_id(lab_dir)
    assert first, "the twin answers SSH after lab up"
    _reset(full_lab, "ForceOff")
    _eventually(lambda: not _running(lab_dir), "twin powered off after Redfish ForceOff")
    assert _boot_id(lab_dir) == ""
    _reset(full_lab, "On")
    _eventually(lambda: _boot_id(lab_dir) not in ("", first), "twin booted again after Redfish On")


def test_bmc_force_restart_reboots_the_twin(full_lab):
    lab_dir = full_lab.state.lab_dir
    before = _boot_id(lab_dir)
    assert before
    _reset(full_lab, "ForceRestart")
    _eventually(lambda: _boot_id(lab_dir) not in ("", before), "twin rebooted after Redfish ForceRestart")
    time.sleep(2)  # both power events of the cycle have been handled: the twin must stay on
    assert _running(lab_dir)
