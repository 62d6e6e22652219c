"""`provision lab up --nodes 1 --vm`: a lab whose node's host is a qemu VM driven by its simulated BMC, its
installer CD served in the background and named in the inventory; `provision lab down` leaves nothing.

Through the CLI, as an operator runs it: `lab status` says the node is up and off; the written inventory
loads, its BMC answers over Redfish (HTTPS, the lab CA) with the inventory's credentials, and the os stage's
installer URL (the profile copy's software.os_installer) answers. The host is then powered on (qemu runs,
the firmware finds nothing to boot on the blank drives) and `lab down` must stop the simulator, its qemu and
the image server, close their ports and remove the secrets and the VM's files; also when the simulator was
killed first (SIGKILL: its qemu outlives it). No OS install: that is
tests/vm/test_os_install_vm.py (minutes under plain emulation). About 1-2 minutes, most of it the CD.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from provision.lab.twins import procs
from provision.lab.vm import media
from provision.spec import load_fleet

ROOT = Path(__file__).resolve().parents[2]
PROVISION = str(Path(sys.executable).parent / "provision")
pytestmark = [pytest.mark.lab, pytest.mark.vm, pytest.mark.timeout(900)]


def cli(*args: str, timeout: float = 600) -> dict[str, Any]:
    done = subprocess.run([PROVISION, "lab", *args, "--json"], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout, check=False, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, f"lab {args[0]} exited {done.returncode}: {done.stderr.strip()[-800:]}"
    return dict(json.loads(done.stdout))


def redfish(address: str, hv: dict[str, Any], method: str, path: str, body: dict[str, Any] | None = None
            ) -> tuple[int, dict[str, Any]]:
    auth = base64.b64encode(f"{hv['provision_bmc_username']}:{hv['provision_bmc_password']}".encode()).decode()
    req = urllib.request.Request(f"{address}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Basic {auth}", "Content-Type": "application/json"})  # fmt: skip
    ctx = ssl.create_default_context(cafile=hv["provision_bmc_ca_file"])
    with urllib.request.urlopen(req, timeout=30, context=ctx) as resp:
        raw = resp.read()
        return resp.status, (json.loads(raw) if raw else {})


def qemu_pids(lab: Path) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if cmd.startswith("qemu-system") and str(lab) in cmd:
                found.append(int(proc.name))
    return found


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def listeners_of(lab: Path, port: int) -> list[str]:
    """The command lines of the processes listening on `port` that belong to this lab (name its directory). A
    port freed by lab down may be taken at once by another test run on the same machine: that is not a leak."""
    done = subprocess.run(["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True, check=True)
    found = []
    for pid in sorted(set(re.findall(r"pid=(\d+)", done.stdout))):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(lab) in cmd or ("provision.lab" in cmd and str(lab.parent) in cmd):
            found.append(cmd)
    return found


@pytest.mark.parametrize("simulator_killed", [False, True], ids=["down", "down-after-the-simulator-was-killed"])
def test_lab_up_vm_then_down_leaves_nothing(tmp_path: Path, simulator_killed: bool) -> None:
    if os.geteuid() != 0:
        pytest.skip("the vm tier runs as root")
    lab = tmp_path / "lab"
    started = time.monotonic()
    try:
        up = cli("up", "--nodes", "1", "--vm", "--lab-dir", str(lab))
        print(f"\nlab up --vm took {time.monotonic() - started:.1f} s")
        assert up["state"] == "up" and up["vm"] is True and up["twins"] is False
        status = cli("status", "--lab-dir", str(lab))
        (node,) = status["nodes"]
        assert node["name"] == "node01" and node["power"] == "Off", node
        ssh_port = int(node["vm"]["ssh"].rsplit(":", 1)[1])

        hosts = Path(status["inventory"])
        host = load_fleet(hosts).hosts["node01"]
        hv = yaml.safe_load((hosts.parent / "host_vars" / "node01.yml").read_text())
        assert (hv["ansible_host"], hv["ansible_port"]) == ("127.0.0.1", ssh_port)
        known = Path(hv["provision_ssh_known_hosts"])
        assert known.is_file() and known.read_text() == ""  # the os stage records the key it makes
        assert Path(hv["ansible_ssh_private_key_file"]).is_file()
        address = hv["provision_bmc_address"]
        assert address.startswith("https://127.0.0.1:")
        code, systems = redfish(address, hv, "GET", "/redfish/v1/Systems")
        system = systems["Members"][0]["@odata.id"]
        assert code == 200 and redfish(address, hv, "GET", system)[1]["PowerState"] == "Off"

        url = host.spec.software.os_installer.url if host.spec.software.os_installer else ""
        assert url == node["vm"]["installer"] and url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=10) as resp:
            assert resp.status == 200 and int(resp.headers["Content-Length"]) > 100 << 20  # the whole CD
        media_pid = int(json.loads((lab / "vm" / "media.json").read_text())["pid"])

        redfish(address, hv, "POST", f"{system}/Actions/ComputerSystem.Reset", {"ResetType": "On"})
        deadline = time.monotonic() + 60
        while not qemu_pids(lab) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert qemu_pids(lab), "powering the host on started no qemu"
        while not listening(ssh_port) and time.monotonic() < deadline:  # a loaded host: qemu starts its
            time.sleep(0.2)                                             # forwards some time after its process
        assert listening(ssh_port)  # qemu forwards the node's SSH port
        if simulator_killed:  # its qemu outlives it: lab down must stop that one too
            os.kill(status["pid"], signal.SIGKILL)
            while procs.alive(status["pid"], "provision.lab.bmcsim"):
                time.sleep(0.05)
            assert qemu_pids(lab), "the qemu died with its simulator: nothing left for lab down to stop"
    finally:
        down = cli("down", "--lab-dir", str(lab))
    assert down["stopped"] is True
    print(f"up, checks, power-on and down: {time.monotonic() - started:.1f} s")

    assert not procs.alive(status["pid"], "provision.lab.bmcsim"), "the simulator outlived lab down"
    assert not procs.alive(media_pid, media.MARKER), "the image server outlived lab down"
    assert qemu_pids(lab) == [], "a qemu outlived lab down"
    assert listeners_of(lab, ssh_port) == [] and listeners_of(lab, int(url.split(":")[2].split("/")[0])) == []
    left = sorted(str(p.relative_to(lab)) for p in lab.rglob("*"))
    assert set(left) <= {"bmcsim.log", "bmcsim.out"}, left  # logs only: no key, config, inventory, drives
    password = hv["provision_bmc_password"]
    for name in left:
        assert password not in (lab / name).read_text(errors="replace"), f"{name} holds the BMC password"
