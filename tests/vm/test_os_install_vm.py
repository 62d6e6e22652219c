"""Bare metal for real, on a VM lab node with blank drives: `provision bringup node01` installs the OS through the
BMC's virtual media, boots it from its md RAID1 root, configures it (site.yml) and verifies it, with `/` on md
and both mirror members checked for real; a failed member is caught by verify and repaired by boot_raid1.

One VM, one install, cases in order. The lab builds its installer CD (provision/lab/vm/installer.py, SEED=1:
the host key comes from the os stage's seed medium) and serves it with the project's ImageServer; the node's
packages (real Debian chrony, smartmontools, node exporter, the kernel and mdadm it was installed with) come
from the lab's repository on the host (provision/lab/vm/node_repo.py). The node's class (tests/vm/vm_node_lab.py)
is the VM as it is; what qemu cannot present is waived by the inventory, each with its reason.

1. `provision bringup node01` (`--strategy mitogen`: one Python in the guest for the play; plain emulation
   makes each module start cost seconds), killed (PROVISION_FAILPOINT=os-installing:before, a real SIGKILL)
   once the installer's power-on is journaled; the second run goes on waiting for the installer to power
   off, ejects, boots the disks, waits for SSH with exactly the key it made (one install, never two), then
   configures the node (site.yml) and verifies it.
2. `/` is /dev/md0, both members in sync, both ESPs carry the bootloader; the node's network reaches its
   repository and nothing else.
3. verify passes with raid.* judged on the node, every other check a pass or a declared waiver.
4. A member failed and removed: verify fails naming raid.sync/raid.members; `provision configure --tags raid`
   adds it back; verify passes again.
5. A second whole bring-up changes nothing.
6. Last (it resets the node): a known pattern written to the first and last MiB of the scratch drive (an emulated
   NVMe controller beyond the class's boot pair; verify's nvme.count is waived for it, its count asserted)
   is gone after `provision clean node01 --level erase --yes`: the journal holds that drive's evidence (the
   method the controller's id-ctrl selects, the read back zeroed) and no boot drive's; the node boots its
   kept mirror again and the drive reads back zeroed from the media.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from provision.clean import records
from provision.clean.model import MIB, CleanLevel, DriveCaps
from provision.clean.plan import choose_method
from provision.conformance.parsers.nvme import parse_nvme_id_ctrl
from provision.journal import Journal
from provision.lab.guestnet import HOST_FROM_GUEST
from provision.lab.parts import spec_parts
from provision.lab.twins import repo
from provision.lab.twins.ssh import client_argv, lab_key
from provision.lab.vm import installer
from provision.lab.vm.node import VmNode, VmNodeOptions, drive_serials, vm_node
from provision.lab.vm.node_repo import node_repo
from provision.redfish.image_server import ImageServer
from provision.remote import hostkeys
from provision.spec.model import NodeSpec
from tests.vm import vm_node_lab

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.lab, pytest.mark.vm, pytest.mark.timeout(3600)]
BOOT_DRIVE_MIB = 2048
SCRATCH_DRIVE_MIB = 64
SCRATCH_WAIVER = {"nvme.count": "the VM carries one scratch NVMe drive beyond the class's boot pair, the one the "
                                "clean case erases (a spec'd scratch set is a ZFS pool; the VM's OS has no ZFS): "
                                "the test asserts the count it finds, 3"}
MEMORY_MIB = 2048


def tail(path: Path, n: int = 15) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return " | ".join(ln.strip() for ln in text.splitlines()[-n:] if ln.strip())


class Lab:
    def __init__(self, node: VmNode, key: Path, base: Path, url: str, node_spec: dict[str, Any],
                 repo_url: str) -> None:
        self.node, self.key, self.base, self.url, self.repo_url = node, key, base, url, repo_url
        self.known_hosts = base / "known_hosts"
        self.boot_serials = drive_serials(node.name, 2, 0)[0]
        scratch = node.host.scratch_drives
        self.scratch_serial = scratch[0].serial if scratch else None  # the netinstall VM has none
        host_vars = {
            "provision_bmc_address": node.redfish_url, "provision_bmc_insecure_http": True,
            "provision_bmc_username": node.username, "provision_bmc_password": node.password.get_secret_value(),
            "ansible_host": "127.0.0.1", "ansible_port": node.host.ssh_port, "ansible_user": "root",
            "ansible_ssh_private_key_file": str(key), "provision_ssh_known_hosts": str(self.known_hosts),
        }  # fmt: skip
        (base / "firmware").symlink_to(ROOT / "firmware")  # the project profiles' images, beside the inventory
        self.inventory = vm_node_lab.write_inventory(
            base / "inventory", ROOT, node_spec, node.name, host_vars, repo_url, self.boot_serials,
            SCRATCH_WAIVER if scratch else None)

    def provision(self, *args: str, failpoint: str | None = None, ok: tuple[int, ...] = (0,),
                  timeout: int = 3000) -> tuple[int, str, float]:
        """Run the CLI on the node; AssertionError (with the VM's console) on an exit code not in `ok`."""
        env = {k: v for k, v in os.environ.items() if k != "PROVISION_FAILPOINT"}
        if failpoint:
            env["PROVISION_FAILPOINT"] = failpoint
        argv = [str(Path(sys.executable).parent / "provision"), *args, "-i", str(self.inventory)]
        started = time.monotonic()
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
                              check=False, env=env, cwd=ROOT)  # fmt: skip
        took = round(time.monotonic() - started, 1)
        if done.returncode not in ok:
            raise AssertionError(f"provision {args[0]} exited {done.returncode}: {done.stderr.strip()[-1500:]} "
                                 f"{done.stdout.strip()[-1500:]}; console: {tail(self.console(-1))}")
        return done.returncode, done.stdout, took

    def bringup(self, *more: str, failpoint: str | None = None) -> tuple[int, dict[str, Any], float]:
        """`provision bringup NODE --os-image URL --json` (`more`: e.g. --only os); -9 allowed with a failpoint."""
        rc, stdout, took = self.provision(
            "bringup", self.node.name, "--os-image", self.url, "--journal", str(self.base / "journal.db"),
            "--log-dir", str(self.base / "logs"), "--poll-seconds", "2", "--json", *more,
            failpoint=failpoint, ok=(0, -9) if failpoint else (0,))  # fmt: skip
        out = json.loads(stdout) if stdout.strip().startswith("{") else {}
        assert rc == -9 or out.get("ok"), out
        return rc, out, took

    def verify(self, ok: tuple[int, ...] = (0,)) -> tuple[int, dict[str, Any]]:
        """`provision verify NODE --json -`: the exit code and the node's report."""
        rc, stdout, _ = self.provision("verify", self.node.name, "--json", "-", ok=ok, timeout=600)
        return rc, json.loads(stdout)["nodes"][0]

    def sh(self, command: str) -> str:
        argv = client_argv(self.key, self.known_hosts, "127.0.0.1", self.node.host.ssh_port)
        done = subprocess.run([*argv, command], capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, f"{command}: {done.stderr.strip()}"
        return done.stdout

    def wait_ssh(self, timeout_s: float) -> float:
        """Seconds until the node answers SSH again (with its recorded host key); AssertionError after `timeout_s`."""
        argv = client_argv(self.key, self.known_hosts, "127.0.0.1", self.node.host.ssh_port)
        started = time.monotonic()
        while subprocess.run([*argv, "true"], capture_output=True, timeout=60, check=False).returncode != 0:
            if time.monotonic() - started > timeout_s:
                raise AssertionError(f"no SSH {timeout_s:.0f} s after the clean; console: {tail(self.console(-1))}")
            time.sleep(2)
        return time.monotonic() - started

    def console(self, i: int) -> Path:
        logs = self.node.console_logs()
        return logs[i] if logs else self.node.host.work_dir / "none.log"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if os.geteuid() != 0:
        pytest.skip("the vm tier runs as root")
    base = tmp_path_factory.mktemp("osinstall")
    key = lab_key(base)
    tree = installer.ensure_installer_tree()
    node_spec = vm_node_lab.spec(tree, BOOT_DRIVE_MIB, MEMORY_MIB)
    boot, _ = drive_serials("node01", 2, 0)
    conf = installer.InstallConf(hostname="node01", boot_serials=tuple(boot), seed=True,
                                 authorized_key=key.with_suffix(".pub").read_text().strip())  # fmt: skip
    started = time.monotonic()
    iso = installer.installer_iso(conf, base / "install.iso")
    packages = node_repo(tree)
    print(f"\ninstaller CD built in {time.monotonic() - started:.1f} s ({iso.stat().st_size >> 20} MiB), "
          f"node repository {packages.name}")
    server = repo.start(packages, ["127.0.0.1"], base)
    # The guest's network reaches the node repository only (restricted user-mode network).
    options = VmNodeOptions(name="node01", boot_drive_mib=BOOT_DRIVE_MIB, scratch_drives=1,
                            scratch_drive_mib=SCRATCH_DRIVE_MIB, memory_mib=MEMORY_MIB,
                            parts=spec_parts(NodeSpec.model_validate(node_spec)),  # what its BMC presents
                            guest_ports=(server.port,))  # fmt: skip
    try:
        with vm_node(base / "lab", options) as node, ImageServer() as srv:
            yield Lab(node, key, base, srv.url_for(iso), node_spec, repo.url(server, HOST_FROM_GUEST))
    finally:
        repo.stop(server)


def test_the_whole_bringup_killed_during_the_install_resumes_and_installs_configures_verifies(lab: Lab) -> None:
    rc, _, first = lab.bringup("--strategy", "mitogen", failpoint="os-installing:before")
    assert rc == -9, "the failpoint did not kill the run"
    assert hostkeys.expected_key(lab.known_hosts, f"[127.0.0.1]:{lab.node.host.ssh_port}")  # recorded first
    rc, out, second = lab.bringup("--strategy", "mitogen")
    stages = {s["stage"]: s for s in out["nodes"][0]["stages"]}
    print(f"killed {first:.0f} s after the start (installer powered on); the resumed bring-up took {second:.0f} s: "
          + ", ".join(f"{n} {s['outcome']} {s['seconds']:.1f}" for n, s in stages.items()))
    assert rc == 0 and stages["os"]["outcome"] == "applied", out
    assert [a.split()[0] for a in stages["os"]["actions"]] == [
        "os-installing", "os-eject", "os-boot-disk", "os-first-boot"]
    assert stages["configure"]["outcome"] == "applied" and stages["verify"]["outcome"] == "converged", stages
    assert len(lab.node.console_logs()) == 2, "the installer ran twice (or the disks were never booted)"
    text = lab.console(0).read_text(errors="replace")
    assert installer.DONE in text and installer.ERROR not in text
    found = re.search(rf"{installer.HOSTKEY_BEGIN}\s+(ssh-ed25519 [A-Za-z0-9+/=]+)", text.replace("\r", ""))
    recorded = hostkeys.expected_key(lab.known_hosts, f"[127.0.0.1]:{lab.node.host.ssh_port}")
    assert found and found.group(1) == recorded, "the installed host key is not the one the stage made"
    assert not (Path(tempfile.gettempdir()) / f"provision-os-seed-{os.getuid()}" / lab.node.name).exists()


def test_the_node_runs_from_its_md_mirror_with_the_bootloader_on_both_esps(lab: Lab) -> None:
    sh = lab.sh
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


def test_the_nodes_network_reaches_its_repository_and_nothing_else(lab: Lab) -> None:
    """restrict=on: a loopback port the lab did not forward (a listener here, the node's own SSH forward) is
    out of the guest's reach; the repository's forward answers."""
    def reaches(port: int) -> bool:
        probe = f"timeout 5 bash -c 'exec 3<>/dev/tcp/{HOST_FROM_GUEST}/{port}' && echo open || echo closed"
        return lab.sh(probe).strip() == "open"

    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(0)
        repo_port = urlparse(lab.repo_url).port
        assert repo_port is not None and reaches(repo_port)
        assert not reaches(listener.getsockname()[1])
        assert not reaches(lab.node.host.ssh_port)
        with pytest.raises(BlockingIOError):  # nothing came through to the listener
            listener.accept()


def results(report: dict[str, Any], prefix: str) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in report["results"] if r["id"].startswith(prefix)}


def test_verify_passes_with_root_on_md_and_both_members_judged_on_the_node(lab: Lab) -> None:
    _, report = lab.verify()
    raid = results(report, "raid.")
    assert {k: v["outcome"] for k, v in raid.items()} == dict.fromkeys(
        ["raid.array", "raid.sync", "raid.members", "raid.state", "raid.root"], "pass"), raid
    assert raid["raid.root"]["found"] == "/dev/md0"
    assert re.fullmatch(r"2 \(nvme[01]n1p2, nvme[01]n1p2\)", raid["raid.members"]["found"]), raid["raid.members"]
    assert all(r["outcome"] in ("pass", "waived") for r in report["results"]), [
        (r["id"], r["outcome"], r["found"]) for r in report["results"] if r["outcome"] not in ("pass", "waived")]
    assert {r["id"] for r in report["results"] if r["outcome"] == "waived"} >= {"memory.type", "services.smartmontools"}
    assert str(results(report, "nvme.count")["nvme.count"]["found"]) == "3"  # waived: the boot pair and the scratch drive
    assert lab.sh("dpkg-query -W -f '${Status}\\n' chrony mdadm").split("\n")[:2] == [
        "install ok installed", "hold ok installed"]  # chrony from the lab's repository; mdadm pinned and held
    assert "MAILADDR root" in lab.sh("cat /etc/mdadm/mdadm.conf")  # boot_raid1 wrote it over the installer's


def test_a_failed_member_is_caught_by_verify_and_added_back_by_boot_raid1(lab: Lab) -> None:
    member = lab.sh(f"readlink -f {vm_node_lab.by_id(lab.boot_serials[1], 2)}").strip()
    lab.sh(f"mdadm /dev/md0 --fail {member} && mdadm /dev/md0 --remove {member}")
    _, report = lab.verify(ok=(1,))
    failed = {k for k, v in results(report, "raid.").items() if v["outcome"] == "fail"}
    assert failed == {"raid.sync", "raid.members", "raid.state"}, failed
    assert results(report, "raid.")["raid.sync"]["found"] in ("U_", "_U")

    _, stdout, took = lab.provision("configure", lab.node.name, "--tags", "raid", "--strategy", "mitogen", "--json")
    changed = {c["task"] for c in json.loads(stdout)["changes"]}
    print(f"boot_raid1 repair in {took:.0f} s: {sorted(changed)}")
    assert "Add the missing member back into the boot array" in changed
    lab.sh("mdadm --wait /dev/md0 || true")  # exit 1 when the recovery already ended
    _rc, report = lab.verify()
    assert {v["outcome"] for v in results(report, "raid.").values()} == {"pass"}
    assert member.removeprefix("/dev/") in results(report, "raid.")["raid.members"]["found"]


def test_a_second_whole_bringup_changes_nothing(lab: Lab) -> None:
    logs = len(lab.node.console_logs())
    _rc, out, took = lab.bringup("--strategy", "mitogen")
    stages = out["nodes"][0]["stages"]
    print(f"second whole bring-up in {took:.0f} s: {[(s['stage'], s['outcome']) for s in stages]}")
    assert all(s["outcome"] == "converged" for s in stages), stages  # os too: SSH with the recorded key
    # Nothing that changes the node: configure may only record its evidence (check mode found nothing to do).
    assert all(a.startswith("record ") for s in stages for a in s["actions"]), stages
    assert len(lab.node.console_logs()) == logs  # the host was never powered off or reset


MARK = "provision-vm-clean"


def mib_counts(lab: Lab, device: str) -> list[tuple[int, int, int]]:
    """The first and last MiB of `device` read from the drive (O_DIRECT): bytes read, bytes not zero, MARK lines."""
    out = lab.sh(f"set -e; d=$(readlink -f {device}); n=$(( $(blockdev --getsize64 $d) / {MIB} - 1 )); "
                 f"for s in 0 $n; do dd if=$d bs=1M count=1 skip=$s iflag=direct status=none > /run/mib; "
                 f"wc -c < /run/mib; tr -d '\\000' < /run/mib | wc -c; grep -a -c {MARK} /run/mib || true; done")
    numbers = [int(n) for n in out.split()]
    assert len(numbers) == 6, out
    return [(numbers[0], numbers[1], numbers[2]), (numbers[3], numbers[4], numbers[5])]


def test_clean_erase_leaves_nothing_of_a_pattern_on_the_scratch_nvme_drive(lab: Lab) -> None:
    assert lab.scratch_serial, "this lab VM was made with a scratch drive"
    scratch = f"/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_{lab.scratch_serial}"
    device = lab.sh(f"readlink -f {scratch}").strip()
    ident = parse_nvme_id_ctrl(lab.sh(f"nvme id-ctrl {device.removesuffix('n1')} -o json"))
    want = choose_method(DriveCaps.of(ident.sanicap, ident.oacs, ident.fna), CleanLevel.ERASE)
    print(f"qemu's NVMe controller ({device}): sanicap {ident.sanicap}, oacs {ident.oacs}, fna {ident.fna}: "
          f"--level erase picks {want}")
    lab.sh(f"set -e; d={device}; n=$(( $(blockdev --getsize64 $d) / {MIB} - 1 )); yes {MARK} | head -c {MIB} "
           "> /run/pattern; for s in 0 $n; do dd if=/run/pattern of=$d bs=1M count=1 seek=$s oflag=direct "
           "conv=notrunc status=none; done")
    lines = MIB // (len(MARK) + 1)
    assert mib_counts(lab, scratch) == [(MIB, MIB, lines)] * 2  # the pattern is on the drive, both ends

    _, stdout, took = lab.provision("clean", lab.node.name, "--level", "erase", "--yes", "--journal",
                                    str(lab.base / "journal.db"), "--json", timeout=1200)
    stages = {s["stage"]: s for s in json.loads(stdout)["nodes"][0]["stages"]}
    print(f"clean --level erase in {took:.0f} s: "
          + ", ".join(f"{n} {s['outcome']} {s['seconds']:.1f}" for n, s in stages.items()))
    assert stages["disks"]["outcome"] == "applied", stages
    assert all(s["outcome"] in ("applied", "converged") for s in stages.values()) and "done" in stages, stages
    with Journal(lab.base / "journal.db") as jr:
        kept = records.last_evidence(jr, lab.node.name)
    assert [e.serial.strip() for e in kept] == [lab.scratch_serial], kept  # the boot mirror's drives kept
    (evidence,) = kept
    assert want is not None and evidence.method is want, (evidence.method, want)
    assert evidence.device == device and evidence.read_back.zeroed and not evidence.resumed, evidence
    assert evidence.ended_at >= evidence.started_at

    back = lab.wait_ssh(600)  # the clean reset the host (BIOS defaults): it boots its kept mirror
    print(f"SSH again {back:.0f} s after the clean")
    assert lab.sh("findmnt -n -o SOURCE /").strip() == "/dev/md0"
    assert mib_counts(lab, scratch) == [(MIB, 0, 0)] * 2  # nothing of the pattern: zeroed or deallocated reads
