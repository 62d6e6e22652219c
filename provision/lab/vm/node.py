"""LAB ONLY: one lab node whose host is a qemu VM driven by its own simulated BMC (no twin, no OS).

The BMC simulator runs as its own process with one node; the node's host backend is a `VmHost`
(provision/lab/bmcsim/vmhost.py): Redfish power actions start and stop the VM, InsertMedia fetches an
image from 127.0.0.1 and makes it the VM's CD, the Boot override sets the next start's boot order.
The VM's drives start blank: what runs on it is what gets installed through its virtual media.

    with vm_node(work, VmNodeOptions()) as node:   # BMC up (the host off), always torn down
        node.redfish_url, node.username, node.password, node.host.ssh_port, node.console_logs()

Teardown stops the simulator (which stops qemu), kills a qemu that outlived it, removes `work`.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from provision.errors import LabError
from provision.lab.bmcsim.config import BmcConfig, Parts, Ready, SimConfig, VmDrive, VmHostConfig
from provision.lab.twins import procs
from provision.lab.twins.mounts import remove_tree

QEMU = "qemu-system-x86_64"
OVMF_CODE = Path("/usr/share/OVMF/OVMF_CODE_4M.fd")


class VmNodeOptions(BaseModel):
    """One VM lab node: its name, drives (serials and sizes), memory and the simulator's speed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(default="node01", pattern=r"^[a-z][a-z0-9-]{0,30}$")
    index: int = Field(default=1, ge=1, le=250)
    boot_drive_mib: int = Field(default=4096, ge=64)
    boot_drives: int = Field(default=2, ge=1, le=4)
    scratch_drive_mib: int = Field(default=256, ge=16)
    scratch_drives: int = Field(default=1, ge=0, le=4)
    memory_mib: int = Field(default=1024, ge=256, le=8192)
    speed: float = Field(default=10.0, gt=0, description="simulated seconds per real second (power steps)")
    parts: Parts = Field(default_factory=Parts, description="what the BMC presents (provision.lab.parts.spec_parts "
                                                            "of the node's class); the default: ML-PROD-V4's")


class VmNode(BaseModel):
    """A running VM lab node (its BMC answers; its host is whatever power state the BMC shows)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    redfish_url: str
    username: str
    password: SecretStr
    host: VmHostConfig
    sim_pid: int
    log_file: Path

    def console_logs(self) -> list[Path]:
        """The VM's serial console, one file per power-on, oldest first."""
        return sorted(self.host.work_dir.glob("console-*.log"))

    def qemu_pid(self) -> int | None:
        """The running qemu's pid, or None when the host is off."""
        try:
            pid = int((self.host.work_dir / "qemu.pid").read_text())
        except (OSError, ValueError):
            return None
        return pid if procs.alive(pid, QEMU) else None


def drive_serials(name: str, boot: int, scratch: int) -> tuple[list[str], list[str]]:
    """Serials of the node's boot pair and scratch drives (what /dev/disk/by-id/nvme-* shows)."""
    tag = name.upper().replace("-", "")[:10]
    return [f"{tag}-BOOT{i}" for i in range(boot)], [f"{tag}-SCR{i}" for i in range(scratch)]


@contextlib.contextmanager
def vm_node(work: Path, options: VmNodeOptions | None = None) -> Iterator[VmNode]:
    """Start the node's BMC (host off, blank drives); yield it; always tear everything down."""
    options = options or VmNodeOptions()
    for path, what in ((QEMU, "qemu-system-x86_64"), (str(OVMF_CODE), "UEFI firmware")):
        if not (Path(path).is_file() if path.startswith("/") else _on_path(path)):
            raise LabError(f"{what} not found ({path}): PROVISION_TEST_VM=1 scripts/bootstrap.sh installs it")
    work.mkdir(parents=True, exist_ok=False)
    proc: subprocess.Popen[bytes] | None = None
    host: VmHostConfig | None = None
    try:
        cfg, host = _config(work, options)
        proc = _spawn(work, cfg)
        ready = _wait_ready(work, proc, cfg)
        port = ready.nodes[0].http_port
        node = cfg.nodes[0]
        yield VmNode(
            name=options.name, redfish_url=f"http://127.0.0.1:{port}", username=node.username,
            password=node.password, host=host, sim_pid=proc.pid, log_file=cfg.log_file,
        )  # fmt: skip
    finally:
        if proc is not None:
            _stop(proc)
        if host is not None:
            _kill_stray_qemu(host)
        remove_tree(work)


def _on_path(name: str) -> bool:
    return any((Path(d) / name).is_file() for d in os.environ.get("PATH", "").split(os.pathsep) if d)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _config(work: Path, options: VmNodeOptions) -> tuple[SimConfig, VmHostConfig]:
    boot, scratch = drive_serials(options.name, options.boot_drives, options.scratch_drives)
    host = VmHostConfig(
        work_dir=work / "host", ssh_port=_free_port(), memory_mib=options.memory_mib,
        boot_drives=tuple(VmDrive(serial=s, size_mib=options.boot_drive_mib) for s in boot),
        scratch_drives=tuple(VmDrive(serial=s, size_mib=options.scratch_drive_mib) for s in scratch),
        firmware_code=OVMF_CODE,
    )  # fmt: skip
    node = BmcConfig(name=options.name, index=options.index, password=SecretStr(secrets.token_urlsafe(18)),
                     https=False, vm=host)  # fmt: skip
    cfg = SimConfig(
        lab_dir=work, nodes=[node], speed=options.speed, control_token=SecretStr(secrets.token_urlsafe(24)),
        ready_file=work / "ready.json", log_file=work / "bmcsim.log", parts=options.parts,
    )  # fmt: skip
    fd = os.open(work / "bmcsim.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(cfg.to_file_json())
    return cfg, host


def _spawn(work: Path, cfg: SimConfig) -> subprocess.Popen[bytes]:
    with open(work / "bmcsim.out", "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "provision.lab.bmcsim", str(work / "bmcsim.json")],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=work, start_new_session=True,
        )  # fmt: skip


def _wait_ready(work: Path, proc: subprocess.Popen[bytes], cfg: SimConfig) -> Ready:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if cfg.ready_file.exists():
            return Ready.model_validate_json(cfg.ready_file.read_text())
        if proc.poll() is not None:
            out = (work / "bmcsim.out").read_text(errors="replace").strip().splitlines()
            raise LabError(f"the VM node's BMC simulator exited {proc.returncode}: {(out or ['no output'])[-1]}")
        time.sleep(0.05)
    raise LabError(f"the VM node's BMC simulator did not start within 60 s; see {work / 'bmcsim.out'}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM: the simulator stops its VM host, then exits; SIGKILL after 30 s."""
    procs.signal_quietly(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        procs.signal_quietly(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _kill_stray_qemu(host: VmHostConfig) -> None:
    """A qemu left behind by a simulator that was killed (its pid file says which)."""
    try:
        pid = int((host.work_dir / "qemu.pid").read_text())
    except (OSError, ValueError):
        return
    if procs.alive(pid, QEMU):
        procs.signal_quietly(pid, signal.SIGKILL)
        for _ in range(100):
            if not procs.alive(pid, QEMU):
                return
            time.sleep(0.05)
        raise LabError(f"qemu (pid {pid}) of the VM node did not stop")
