"""A lab node whose host is a qemu VM (UEFI, NVMe drives) driven by its simulated BMC over Redfish.

The BMC simulator runs as its own process; its Reset starts qemu, ForceOff stops it, InsertMedia fetches
an image from a loopback HTTP server and makes it the VM's CD, and a Cd Once override puts the CD first
in the firmware's boot order for one start only. The firmware's own console lines (OVMF's BdsDxe) are the
evidence of the order. The drives are blank and the image is not bootable: the firmware tries each
device in turn and says so. About a minute under plain emulation.
"""

from __future__ import annotations

import base64
import json
import os
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from provision.lab.vm.node import VmNode, VmNodeOptions, drive_serials, vm_node
from provision.redfish.image_server import ImageServer

pytestmark = [pytest.mark.lab, pytest.mark.vm, pytest.mark.timeout(900)]

SYS = "/redfish/v1/Systems/1"
CD = "/redfish/v1/Managers/1/VirtualMedia/CD1"
BDS = re.compile(r'BdsDxe: (?:failed to load|loading) Boot\w+ "([^"]+)"')


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmNode]:
    if os.geteuid() != 0:
        pytest.skip("the vm tier runs as root")
    work = tmp_path_factory.mktemp("vmnode") / "lab"
    with vm_node(work, VmNodeOptions(boot_drive_mib=64, scratch_drive_mib=16)) as n:
        yield n
    assert not work.exists(), "teardown left the node's work directory"


@pytest.fixture(scope="module")
def image_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("www")
    (root / "blank.iso").write_bytes(bytes(2 * 1024 * 1024))  # a CD with nothing bootable on it

    with ImageServer() as srv:  # the project's own image server, on 127.0.0.1, where the BMC fetches from
        yield srv.url_for(root / "blank.iso")


def redfish(node: VmNode, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    auth = base64.b64encode(f"{node.username}:{node.password.get_secret_value()}".encode()).decode()
    req = urllib.request.Request(f"{node.redfish_url}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Basic {auth}", "Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(req, timeout=30) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else {}


def until(what: str, pred: Any, timeout: float = 240) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.5)
    raise AssertionError(f"not reached within {timeout:.0f} s: {what}")


def boot_attempts(console: Path, count: int) -> list[str]:
    """The first `count` boot options the firmware tried on this power-on, in order."""

    def seen() -> list[str] | None:
        text = console.read_text(errors="replace") if console.exists() else ""
        found = BDS.findall(text)
        return found[:count] if len(found) >= count else None

    return list(until(f"{count} boot attempts in {console.name}", seen))


def test_reset_starts_the_vm_off_stops_it_and_cd_once_boots_the_cd_first_once(node: VmNode, image_url: str) -> None:
    boot0, _ = drive_serials(node.name, 2, 1)
    assert redfish(node, "GET", SYS)["PowerState"] == "Off" and node.qemu_pid() is None

    redfish(node, "POST", f"{CD}/Actions/VirtualMedia.InsertMedia", {"Image": image_url, "Inserted": True})
    redfish(node, "PATCH", SYS, {"Boot": {"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": "Cd"}})
    redfish(node, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "On"})
    pid = until("qemu running", node.qemu_pid)
    until("PowerState On", lambda: redfish(node, "GET", SYS)["PowerState"] == "On")
    first = boot_attempts(node.host.work_dir / "console-0001.log", 2)
    assert "CD-ROM" in first[0] and "NVMe" in first[1] and boot0[0] in first[1], first
    assert redfish(node, "GET", SYS)["Boot"]["BootSourceOverrideEnabled"] == "Disabled"  # Once is spent

    redfish(node, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceOff"})
    until("qemu stopped", lambda: node.qemu_pid() is None)
    assert not Path(f"/proc/{pid}/cmdline").exists() or b"qemu" not in Path(f"/proc/{pid}/cmdline").read_bytes()
    until("PowerState Off", lambda: redfish(node, "GET", SYS)["PowerState"] == "Off")

    redfish(node, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "On"})  # no override now
    until("qemu running again", node.qemu_pid)
    second = boot_attempts(node.host.work_dir / "console-0002.log", 1)
    assert "NVMe" in second[0] and boot0[0] in second[0], second  # the disks first: the CD is not first now
    redfish(node, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceOff"})
    until("qemu stopped again", lambda: node.qemu_pid() is None)
