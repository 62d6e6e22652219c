"""LAB ONLY: drive an install on a VM lab node through its BMC, and read what the installer reported.

    report = install(node, iso_url, timeout_s)      insert the CD, one-time CD boot, power on, wait for Off
    seconds = first_boot(node, key, report.host_key, known_hosts, timeout_s)   power on, SSH with that key

The installer's console lines (provision/lab/vm/installer.py) are parsed by `parse_console`: each step
with the guest's uptime when it began, the host key between its markers, and an error line naming the
step that failed. Used by the vm-tier install test and bench/vm_install_bench.py.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from provision.errors import LabError
from provision.lab.twins.ssh import client_argv, write_known_hosts
from provision.lab.vm import installer
from provision.lab.vm.node import VmNode

SYSTEM = "/redfish/v1/Systems/1"
CD = "/redfish/v1/Managers/1/VirtualMedia/CD1"
_STEP = re.compile(rf"{re.escape(installer.STEP)} (\w+) ([\d.]+)")
_ERROR = re.compile(rf"{re.escape(installer.ERROR)} (\S+): (.*)")
_KEY = re.compile(rf"{re.escape(installer.HOSTKEY_BEGIN)}\s+(ssh-ed25519 [A-Za-z0-9+/=]+)")
_DONE = re.compile(rf"{re.escape(installer.DONE)} ([\d.]+)")


class InstallReport(BaseModel):
    """What the installer printed: its steps (name -> guest uptime in s at its start), end, host key."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    steps: dict[str, float]
    done_at: float
    host_key: str
    wall_s: float = 0.0

    def phases(self) -> dict[str, float]:
        """Seconds spent in each step (the last one ends at `done_at`)."""
        names = list(self.steps)
        ends = [self.steps[n] for n in names[1:]] + [self.done_at]
        return {n: round(end - self.steps[n], 1) for n, end in zip(names, ends, strict=True)}


def parse_console(text: str, where: str) -> InstallReport:
    """The installer's report from its console text; LabError naming the failed step, or what is missing."""
    text = text.replace("\r", "")
    failed = _ERROR.search(text)
    if failed:
        raise LabError(f"{where}: the installer failed at step {failed.group(1)}: {failed.group(2).strip()}")
    done = _DONE.search(text)
    key = _KEY.search(text)
    if done is None or key is None:
        steps = _STEP.findall(text)
        last = steps[-1][0] if steps else "none (the installer did not start: is the CD bootable?)"
        raise LabError(f"{where}: the installer did not finish (last step: {last})")
    return InstallReport(steps={n: float(t) for n, t in _STEP.findall(text)}, done_at=float(done.group(1)),
                         host_key=key.group(1))  # fmt: skip


def redfish(node: VmNode, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    auth = base64.b64encode(f"{node.username}:{node.password.get_secret_value()}".encode()).decode()
    req = urllib.request.Request(
        f"{node.redfish_url}{path}", method=method, data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Basic {auth}", "Content-Type": "application/json"},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            raw = resp.read()
    except urllib.error.HTTPError as exc:
        raise LabError(f"{node.name}: {method} {path}: HTTP {exc.code} {exc.read()[:200]!r}") from None
    return json.loads(raw) if raw else {}


def power_state(node: VmNode) -> str:
    return str(redfish(node, "GET", SYSTEM).get("PowerState"))


def install(node: VmNode, iso_url: str, timeout_s: float = 2400) -> InstallReport:
    """Insert the installer CD, boot it once, power on; wait until the installer powers the node off."""
    before = len(node.console_logs())
    started = time.monotonic()
    redfish(node, "POST", f"{CD}/Actions/VirtualMedia.InsertMedia", {"Image": iso_url, "Inserted": True})
    redfish(node, "PATCH", SYSTEM, {"Boot": {"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": "Cd"}})
    redfish(node, "POST", f"{SYSTEM}/Actions/ComputerSystem.Reset", {"ResetType": "On"})
    console = node.host.work_dir / f"console-{before + 1:04d}.log"
    while power_state(node) != "Off":
        if time.monotonic() - started > timeout_s:
            text = console.read_text(errors="replace") if console.exists() else ""
            steps = _STEP.findall(text)
            raise LabError(f"{node.name}: the install did not end within {timeout_s:.0f} s "
                           f"(last step: {steps[-1][0] if steps else 'none'})")  # fmt: skip
        time.sleep(1)
    wall = time.monotonic() - started
    text = console.read_text(errors="replace") if console.exists() else ""
    return parse_console(text, node.name).model_copy(update={"wall_s": round(wall, 1)})


def first_boot(node: VmNode, key: Path, host_key: str, known_hosts: Path, timeout_s: float = 900) -> float:
    """Eject, power on (from the drives), until SSH answers with `host_key`; returns the seconds it took."""
    redfish(node, "POST", f"{CD}/Actions/VirtualMedia.EjectMedia", {})
    started = time.monotonic()
    redfish(node, "POST", f"{SYSTEM}/Actions/ComputerSystem.Reset", {"ResetType": "On"})
    write_known_hosts(known_hosts, {f"[127.0.0.1]:{node.host.ssh_port}": host_key})
    argv = [*client_argv(key, known_hosts, "127.0.0.1", node.host.ssh_port), "true"]
    while time.monotonic() - started < timeout_s:
        try:
            if subprocess.run(argv, capture_output=True, timeout=30, check=False).returncode == 0:
                return round(time.monotonic() - started, 1)
        except subprocess.TimeoutExpired:
            pass
        time.sleep(2)
    raise LabError(f"{node.name}: no SSH with the installed host key within {timeout_s:.0f} s of powering on")
