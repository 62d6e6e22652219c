"""`provision bringup node01 --only os` installs the OS through the BMC's virtual media on a VM lab node with
blank drives, is killed while the installer runs, resumes, and the node boots from its md RAID1 root.

The lab builds its installer CD (provision/lab/vm/installer.py, SEED=1: the host key comes from the os
stage's seed medium) and serves it with the project's ImageServer; the inventory names the node's BMC and
SSH endpoint and a known_hosts file with no entry for it. The os stage makes the node's host key, records
it there, inserts the installer (CD1) and the seed (USB1), boots the CD once and powers the node on; the
first run is killed (PROVISION_FAILPOINT=os-installing:before, a real SIGKILL) once that power-on is
journaled. The second run re-observes, goes on waiting for the installer to power off, ejects, boots the
disks and waits for SSH with exactly the key it made: one install, never two. Then `/` is /dev/md0, both
members in sync, both ESPs carry the bootloader, and a third run changes nothing.

Opt-in (PROVISION_TEST_VM_INSTALL=1): one install under plain emulation takes several minutes, more than
the default vm tier's CI budget leaves (README, "Tests").
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from provision.lab.twins.ssh import client_argv, lab_key
from provision.lab.vm import installer
from provision.lab.vm.node import VmNode, VmNodeOptions, drive_serials, vm_node
from provision.redfish.image_server import ImageServer
from provision.remote import hostkeys

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.lab, pytest.mark.vm, pytest.mark.timeout(3600),
    pytest.mark.skipif(os.environ.get("PROVISION_TEST_VM_INSTALL") != "1",
                       reason="the OS install test is opt-in: PROVISION_TEST_VM_INSTALL=1"),
]  # fmt: skip


def tail(path: Path, n: int = 15) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return " | ".join(ln.strip() for ln in text.splitlines()[-n:] if ln.strip())


class Lab:
    def __init__(self, node: VmNode, key: Path, base: Path, url: str) -> None:
        self.node, self.key, self.base, self.url = node, key, base, url
        self.known_hosts = base / "known_hosts"
        self.inventory = self._inventory()

    def _inventory(self) -> Path:
        inv = self.base / "inventory"
        shutil.copytree(ROOT / "inventory" / "group_vars", inv / "group_vars")
        (self.base / "firmware").symlink_to(ROOT / "firmware")  # the profiles' images, beside the inventory
        (inv / "host_vars").mkdir()
        hosts = {"all": {"children": {"ml_prod_v4": {"hosts": {self.node.name: None}}}}}
        (inv / "hosts.yml").write_text("---\n" + yaml.safe_dump(hosts), encoding="utf-8")
        host_vars = inv / "host_vars" / f"{self.node.name}.yml"
        host_vars.touch(mode=0o600)
        host_vars.write_text("---\n" + yaml.safe_dump({
            "provision_bmc_address": self.node.redfish_url, "provision_bmc_insecure_http": True,
            "provision_bmc_username": self.node.username,
            "provision_bmc_password": self.node.password.get_secret_value(),
            "ansible_host": "127.0.0.1", "ansible_port": self.node.host.ssh_port, "ansible_user": "root",
            "ansible_ssh_private_key_file": str(self.key), "provision_ssh_known_hosts": str(self.known_hosts),
        }), encoding="utf-8")
        return inv / "hosts.yml"

    def bringup(self, failpoint: str | None = None) -> tuple[int, dict[str, Any], float]:
        env = {k: v for k, v in os.environ.items() if k != "PROVISION_FAILPOINT"}
        if failpoint:
            env["PROVISION_FAILPOINT"] = failpoint
        argv = [str(Path(sys.executable).parent / "provision"), "bringup", self.node.name, "--only", "os", "--os-image", self.url,
                "-i", str(self.inventory), "--journal", str(self.base / "journal.db"),
                "--log-dir", str(self.base / "logs"), "--poll-seconds", "2", "--json"]  # fmt: skip
        started = time.monotonic()
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=3000,
                              check=False, env=env, cwd=ROOT)
        took = round(time.monotonic() - started, 1)
        out = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
        if done.returncode not in (0, -9) or (done.returncode == 0 and not out.get("ok")):
            raise AssertionError(f"bringup exited {done.returncode}: {done.stderr.strip()[-800:]} {out}; "
                                 f"console: {tail(self.console(-1))}")
        return done.returncode, out, took

    def console(self, i: int) -> Path:
        logs = self.node.console_logs()
        return logs[i] if logs else self.node.host.work_dir / "none.log"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if os.geteuid() != 0:
        pytest.skip("the vm tier runs as root")
    base = tmp_path_factory.mktemp("osinstall")
    key = lab_key(base)
    with vm_node(base / "lab", VmNodeOptions(boot_drive_mib=2048, scratch_drive_mib=64)) as node:
        boot, _ = drive_serials(node.name, 2, 1)
        conf = installer.InstallConf(hostname=node.name, boot_serials=tuple(boot), seed=True,
                                     authorized_key=key.with_suffix(".pub").read_text().strip())  # fmt: skip
        started = time.monotonic()
        iso = installer.installer_iso(conf, base / "install.iso")
        print(f"\ninstaller CD built in {time.monotonic() - started:.1f} s ({iso.stat().st_size >> 20} MiB)")
        with ImageServer() as srv:
            yield Lab(node, key, base, srv.url_for(iso))


def stage_of(out: dict[str, Any]) -> dict[str, Any]:
    return out["nodes"][0]["stages"][0]


def test_install_through_the_os_stage_killed_during_the_install_then_resumed(lab: Lab) -> None:
    rc, _, first = lab.bringup(failpoint="os-installing:before")
    assert rc == -9, "the failpoint did not kill the run"
    assert hostkeys.expected_key(lab.known_hosts, f"[127.0.0.1]:{lab.node.host.ssh_port}")  # recorded first
    rc, out, second = lab.bringup()
    stage = stage_of(out)
    print(f"killed {first:.0f} s after the start (installer powered on); the resumed run took {second:.0f} s: "
          f"{stage['actions']}")
    assert rc == 0 and stage["outcome"] == "applied", out
    assert [a.split()[0] for a in stage["actions"]] == ["os-installing", "os-eject", "os-boot-disk", "os-first-boot"]
    assert len(lab.node.console_logs()) == 2, "the installer ran twice (or the disks were never booted)"
    text = lab.console(0).read_text(errors="replace")
    assert installer.DONE in text and installer.ERROR not in text
    found = re.search(rf"{installer.HOSTKEY_BEGIN}\s+(ssh-ed25519 [A-Za-z0-9+/=]+)", text.replace("\r", ""))
    recorded = hostkeys.expected_key(lab.known_hosts, f"[127.0.0.1]:{lab.node.host.ssh_port}")
    assert found and found.group(1) == recorded, "the installed host key is not the one the stage made"
    assert not (Path(tempfile.gettempdir()) / f"provision-os-seed-{os.getuid()}" / lab.node.name).exists()


def test_the_node_runs_from_its_md_mirror_with_the_bootloader_on_both_esps(lab: Lab) -> None:
    argv = client_argv(lab.key, lab.known_hosts, "127.0.0.1", lab.node.host.ssh_port)

    def sh(command: str) -> str:
        done = subprocess.run([*argv, command], capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{command}: {done.stderr.strip()}"
        return done.stdout

    assert sh("findmnt -n -o SOURCE /").strip() == "/dev/md0"
    mdstat = sh("cat /proc/mdstat")
    assert re.search(r"md0 : active raid1 nvme\dn1p2\[\d\] nvme\dn1p2\[\d\]", mdstat), mdstat
    assert "[UU]" in mdstat, mdstat
    assert "metadata=1.2" in sh("cat /etc/mdadm/mdadm.conf")
    assert sh("stat -c %a /etc/ssh/ssh_host_ed25519_key").strip() == "600"
    esps = sh("lsblk -nro NAME,PARTTYPE | awk '$2 == \"c12a7328-f81f-11d2-ba4b-00a0c93ec93b\" {print $1}'").split()
    assert len(esps) == 2, esps
    assert sh("findmnt -n -o SOURCE /boot/efi").strip() in {f"/dev/{esp}" for esp in esps}  # fstab's ESP
    for esp in esps:  # the bootloader on both: either drive boots alone
        sh(f"d=$(findmnt -n -o TARGET /dev/{esp} || true); if [ -z \"$d\" ]; then d=/mnt/{esp}; mkdir -p $d;"
           f" mount -o ro /dev/{esp} $d; fi; test -s $d/EFI/BOOT/BOOTX64.EFI")  # fmt: skip
    assert "seed" not in sh("lsblk -nro NAME,LABEL").lower() and "CIDATA" not in sh("lsblk -nro LABEL")


def test_a_second_run_changes_nothing(lab: Lab) -> None:
    logs = len(lab.node.console_logs())
    rc, out, took = lab.bringup()
    stage = stage_of(out)
    print(f"second run: {stage['outcome']} in {took:.0f} s ({stage['note']})")
    assert rc == 0 and stage["outcome"] == "converged" and stage["actions"] == [], out
    assert len(lab.node.console_logs()) == logs  # not powered on again
