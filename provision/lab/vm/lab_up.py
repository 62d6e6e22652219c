"""LAB ONLY: the VM side of `provision lab up --vm` (the lab manager, provision/lab/manager.py, runs the
simulator, the state file and the inventory as for any lab).

Each node's host is a qemu VM its simulated BMC drives (provision/lab/bmcsim/vmhost.py; blank NVMe boot
pair and scratch drive, UEFI, off). The lab builds each node's unattended installer CD
(provision/lab/vm/installer.py, SEED=1: the host key comes from the os stage's seed medium) and serves it
from a background ImageServer process (provision/lab/vm/media.py). Everything lives in `<lab>/vm/`:

    vm/ssh/                   the lab's client key (0600), enrolled by the installer
    vm/known_hosts            empty: the os stage records the key it makes for the node
    vm/<node>/host/           the VM's drives, console logs, qemu.pid
    vm/<node>/install.iso     the node's installer CD
    vm/media.json             the image server's pid and URLs

One VM node at most: under plain emulation (TCG) one VM keeps two cores busy while it installs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from provision.errors import InputError, LabError
from provision.lab.bmcsim.config import VmHostConfig
from provision.lab.simproc import tail, write_private
from provision.lab.twins import procs
from provision.lab.twins.mounts import remove_tree
from provision.lab.twins.ssh import KEY_NAME, lab_key
from provision.lab.vm import installer, media
from provision.lab.vm.node import VmNodeOptions, check_tools, host_config, kill_qemu_of

VM_DIR = "vm"
MAX_NODES = 1
MEDIA_READY = "media.json"
MEDIA_OUT = "media.out"


class VmLabNode(BaseModel):
    """What the lab's state and inventory say of one VM node (no secrets)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ssh_port: int
    key_file: Path
    known_hosts: Path
    installer_url: str
    host_dir: Path


def check(nodes: int) -> None:
    """Before anything starts: InputError for too many VM nodes, LabError for a missing tool."""
    if nodes > MAX_NODES:
        raise InputError(f"--vm --nodes {nodes}: at most {MAX_NODES} VM node (one VM under plain emulation "
                         "keeps two cores busy)")
    check_tools(installer=True)


def vm_dir(lab: Path) -> Path:
    return lab / VM_DIR


def hosts(lab: Path, names: list[str]) -> dict[str, VmHostConfig]:
    """Each node's VM host (blank drives in <lab>/vm/<node>/host/)."""
    return {name: host_config(vm_dir(lab) / name / "host", VmNodeOptions(name=name, index=i))
            for i, name in enumerate(names, start=1)}  # fmt: skip


def build_installers(lab: Path, vm_hosts: dict[str, VmHostConfig]) -> dict[str, Path]:
    """Each node's installer CD: its hostname, its boot pair's serials, the lab key; the host key from the
    os stage's seed medium."""
    key = lab_key(vm_dir(lab))
    public = key.with_suffix(".pub").read_text().strip()
    isos = {}
    for name, host in vm_hosts.items():
        conf = installer.InstallConf(hostname=name, boot_serials=tuple(d.serial for d in host.boot_drives),
                                     authorized_key=public, seed=True)  # fmt: skip
        (vm_dir(lab) / name).mkdir(parents=True, exist_ok=True)
        isos[name] = installer.installer_iso(conf, vm_dir(lab) / name / "install.iso")
    return isos


def start_media(lab: Path, isos: dict[str, Path], timeout: float = 30.0) -> tuple[int, dict[str, str]]:
    """The background image server for the CDs: its pid and each node's installer URL."""
    ready = vm_dir(lab) / MEDIA_READY
    ready.unlink(missing_ok=True)
    with open(vm_dir(lab) / MEDIA_OUT, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", media.MARKER, str(ready), *(str(p) for p in isos.values())],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            close_fds=True,
        )  # fmt: skip
    deadline = time.monotonic() + timeout
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            procs.stop(proc.pid, media.MARKER, grace=5)
            raise LabError(f"the lab's image server did not start: {tail(vm_dir(lab) / MEDIA_OUT)}")
        time.sleep(0.05)
    urls = json.loads(ready.read_text())["urls"]
    return proc.pid, {name: urls[iso.name] for name, iso in isos.items()}


def node_info(lab: Path, host: VmHostConfig, url: str) -> VmLabNode:
    known = vm_dir(lab) / "known_hosts"
    if not known.exists():
        write_private(known, "")  # no entry for the node: the os stage records the key it makes
    key = vm_dir(lab) / "ssh" / KEY_NAME  # lab_key's, made by build_installers
    return VmLabNode(ssh_port=host.ssh_port, key_file=key, known_hosts=known, installer_url=url,
                     host_dir=host.work_dir)  # fmt: skip


def host_vars(vm: VmLabNode) -> dict[str, Any]:
    """The node's SSH endpoint: the VM's forwarded port on loopback, root with the lab key, host-key
    checking against the lab's known_hosts (empty until the os stage records the key it made)."""
    return {
        "ansible_host": "127.0.0.1", "ansible_port": vm.ssh_port, "ansible_user": "root",
        "ansible_python_interpreter": "/usr/bin/python3",
        "ansible_ssh_private_key_file": str(vm.key_file),
        "ansible_ssh_common_args": f"-o UserKnownHostsFile={vm.known_hosts} -o StrictHostKeyChecking=yes",
        "provision_ssh_known_hosts": str(vm.known_hosts),
    }  # fmt: skip


def pin_installer(group_vars: Path, profile: str, url: str) -> Path:
    """Set `software.os_installer.url` of the profile in the lab's copy of the specs (the os stage reads
    it when no --os-image is given); returns the file changed."""
    var = f"provision_profile_{profile}"
    for path in sorted(group_vars.rglob("*.y*ml")):
        data = yaml.safe_load(path.read_text())
        if isinstance(data, dict) and isinstance(data.get(var), dict):
            software = data[var].setdefault("software", {})
            software["os_installer"] = {"url": url}
            path.write_text("---\n# Copied by `provision lab up --vm`: software.os_installer is the lab's "
                            "installer CD.\n" + yaml.safe_dump(data, sort_keys=False))
            return path
    raise LabError(f"{group_vars}: no {var} to pin the lab's installer in")


def teardown(lab: Path) -> None:
    """Stop the image server and any qemu left behind, then remove <lab>/vm (key, drives, CDs)."""
    base = vm_dir(lab)
    if not base.exists():
        return
    try:
        pid = int(json.loads((base / MEDIA_READY).read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        pid = 0
    if pid and not procs.stop(pid, media.MARKER, grace=5) and procs.alive(pid, media.MARKER):
        raise LabError(f"the lab's image server (pid {pid}) does not stop")
    for pid_file in sorted(base.glob("*/host/qemu.pid")):
        kill_qemu_of(pid_file.parent)
    remove_tree(base)
