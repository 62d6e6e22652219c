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
import time
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from provision.errors import LabError
from provision.lab import simproc
from provision.lab.bmcsim.config import BmcConfig, Parts, SimConfig, VmDrive, VmHostConfig, VmProvisioningNic
from provision.lab.twins import procs
from provision.lab.twins.mounts import remove_tree
from provision.lab.vm.installer import HOST_TOOLS

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
    guest_ports: tuple[int, ...] = Field(default=(), description="the host's loopback ports the guest may reach "
                                                                 "(as 10.0.2.100:<port>), the only ones")
    parts: Parts = Field(default_factory=Parts, description="what the BMC presents (provision.lab.parts.spec_parts "
                                                            "of the node's class); the default: ML-PROD-V4's")
    provisioning: VmProvisioningNic | None = Field(
        default=None, description="a second NIC on a tap in the lab's network namespace (network boot); its BMC "
                                  "lists it in the system's EthernetInterfaces")


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
    check_tools()
    work.mkdir(parents=True, exist_ok=False)
    proc: subprocess.Popen[bytes] | None = None
    host: VmHostConfig | None = None
    try:
        cfg, host = _config(work, options)
        proc = simproc.spawn(work, cfg)
        ready = simproc.wait_ready(work, proc, cfg)
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
            kill_stray_qemu(host)
        remove_tree(work)


def check_tools(installer: bool = False) -> None:
    """LabError, one line naming every missing tool, when this machine cannot run a VM host (qemu, UEFI
    firmware) or, with `installer`, build its installer CD (xorriso, GRUB, mtools, dosfstools)."""
    missing = [] if _on_path(QEMU) else [QEMU]
    missing += [] if OVMF_CODE.is_file() else [f"UEFI firmware {OVMF_CODE} (ovmf)"]
    if installer:
        missing += [f"{tool} ({pkg})" for tool, pkg in HOST_TOOLS.items() if not _on_path(tool)]
    if missing:
        raise LabError(f"a VM lab node needs {', '.join(missing)}: PROVISION_TEST_VM=1 scripts/bootstrap.sh "
                       "installs them")


def _on_path(name: str) -> bool:
    return any((Path(d) / name).is_file() for d in os.environ.get("PATH", "").split(os.pathsep) if d)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def host_config(work_dir: Path, options: VmNodeOptions) -> VmHostConfig:
    """The node's VM host: blank boot pair and scratch drives in `work_dir`, UEFI, SSH on a free port."""
    boot, scratch = drive_serials(options.name, options.boot_drives, options.scratch_drives)
    return VmHostConfig(
        work_dir=work_dir, ssh_port=free_port(), memory_mib=options.memory_mib, guest_ports=options.guest_ports,
        boot_drives=tuple(VmDrive(serial=s, size_mib=options.boot_drive_mib) for s in boot),
        scratch_drives=tuple(VmDrive(serial=s, size_mib=options.scratch_drive_mib) for s in scratch),
        firmware_code=OVMF_CODE, provisioning=options.provisioning,
    )  # fmt: skip


def _config(work: Path, options: VmNodeOptions) -> tuple[SimConfig, VmHostConfig]:
    host = host_config(work / "host", options)
    node = BmcConfig(name=options.name, index=options.index, password=SecretStr(secrets.token_urlsafe(18)),
                     https=False, vm=host)  # fmt: skip
    cfg = SimConfig(
        lab_dir=work, nodes=[node], speed=options.speed, control_token=SecretStr(secrets.token_urlsafe(24)),
        ready_file=work / "ready.json", log_file=work / "bmcsim.log", parts=options.parts,
    )  # fmt: skip
    simproc.write_config(work, cfg)
    return cfg, host


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM: the simulator stops its VM host, then exits; SIGKILL after 30 s."""
    procs.signal_quietly(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        procs.signal_quietly(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def kill_stray_qemu(host: VmHostConfig) -> None:
    """A qemu left behind by a simulator that was killed (its pid file in the host's work_dir says which)."""
    kill_qemu_of(host.work_dir)


def kill_qemu_of(work_dir: Path) -> None:
    """SIGKILL the qemu whose pid `<work_dir>/qemu.pid` names, if it still runs; LabError if it stays."""
    try:
        pid = int((work_dir / "qemu.pid").read_text())
    except (OSError, ValueError):
        return
    if procs.alive(pid, QEMU):
        procs.signal_quietly(pid, signal.SIGKILL)
        for _ in range(100):
            if not procs.alive(pid, QEMU):
                return
            time.sleep(0.05)
        raise LabError(f"qemu (pid {pid}) of the VM node did not stop")
