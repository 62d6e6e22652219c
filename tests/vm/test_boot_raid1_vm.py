"""The boot_raid1 role against a real md RAID1: a Debian cloud kernel under qemu (TCG), two blank virtio
disks, the real mdadm installed by the role from an apt repository, a real /proc/mdstat.

One VM for the tier (tests/vm/conftest.py; boot ~30-60 s); the cases run in order on it: (a) blank disks, then an array
created by the test, (b) repair off: a clean failure that changes nothing. A failed and removed member
added back by the role is tested on the mirror a VM node booted from (tests/vm/test_os_install_vm.py). Run with `PROVISION_TEST_VM=1 scripts/test.sh` or `pytest -m vm tests/vm`.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from provision.ansible.models import PlayResult, RunOptions, Strategy
from provision.ansible.runner import PlayFailed, run_playbook
from provision.lab.vm import VmInfo, ssh
from provision.lab.vm.inventory import write_vm_inventory

# Plain emulation is slow: a role run that rebuilds the initramfs takes minutes on a busy 2-core host.
pytestmark = [pytest.mark.lab, pytest.mark.vm, pytest.mark.timeout(1800)]

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "ml_prod_v4"
MD = "/dev/md0"
MDADM_VERSION = "4.2-5"  # the ML-PROD-V4 spec's software.mdadm.apt_version


@pytest.fixture(scope="module")
def inventory(vm: VmInfo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # No EFI system partition in the VM: boot_raid1_efi_partitions stays empty, so the EFI part is skipped.
    extra = {"boot_raid1_members": vm.disk_ids}
    return write_vm_inventory(tmp_path_factory.mktemp("vminv") / "inv", vm, PROFILE, ROOT / "inventory/group_vars", extra)


def play(inventory: Path, env: dict[str, str] | None = None, strategy: Strategy = "mitogen",
         **extravars: object) -> PlayResult:
    """playbooks/storage.yml, boot mirror play only, through the project's ansible-runner wrapper (mitogen: one
    Python in the guest for the play; under plain emulation each module's own start costs seconds)."""
    options = RunOptions(playbook="storage.yml", inventory=inventory, tags=("raid",), extravars=extravars,
                         timeout_s=1200, strategy=strategy)  # fmt: skip
    return run_playbook(options, env=env)


def sh(vm: VmInfo, command: str) -> str:
    return ssh(vm, command, check=True).stdout


def md_status(vm: VmInfo) -> str:
    """The [UU]-style member map of md0 from the kernel's /proc/mdstat ('' when md0 is absent)."""
    found = re.search(r"(?m)^md0 : .*\n.*\[([U_]+)\]", sh(vm, "cat /proc/mdstat"))
    return found.group(1) if found else ""


def members(vm: VmInfo) -> list[str]:
    return [sh(vm, f"readlink -f {path}").strip() for path in vm.disk_ids]


def fail_and_remove(vm: VmInfo, device: str) -> None:
    sh(vm, f"mdadm {MD} --fail {device} && mdadm {MD} --remove {device}")


def test_blank_disks_fail_cleanly_then_a_created_array_is_configured_and_idempotent(
    vm: VmInfo, inventory: Path
) -> None:
    assert "raid1" in sh(vm, "cat /proc/mdstat")  # the real kernel's md driver, no array yet
    assert md_status(vm) == ""

    with pytest.raises(PlayFailed) as blank:
        play(inventory)
    assert f"boot array {MD} is not an active raid1 in /proc/mdstat (absent)" in str(blank.value)
    # The pinned mdadm was installed from the repository, pinned and held before the probe failed.
    assert sh(vm, "dpkg-query -W -f '${Version} ${Status}' mdadm") == f"{MDADM_VERSION} hold ok installed"
    assert "ARRAY" not in sh(vm, "cat /etc/mdadm/mdadm.conf 2>/dev/null || true")

    a, b = members(vm)
    sh(vm, f"mdadm --create {MD} --run --level=1 --raid-devices=2 --metadata=1.2 {a} {b} && mdadm --wait {MD} || true")
    assert md_status(vm) == "UU"
    initrd = sh(vm, "ls /boot/initrd.img-*").strip()
    before = sh(vm, f"stat -c %Y {initrd}")

    first = play(inventory)
    changed = {c.task for c in first.changes}
    assert "Write mdadm.conf with the arrays and the alert address" in changed
    assert "Rebuild the initramfs" in changed
    conf = sh(vm, "cat /etc/mdadm/mdadm.conf")
    uuid = re.search(r"UUID=(\S+)", sh(vm, f"mdadm --detail --scan {MD}"))
    assert uuid and f"UUID={uuid.group(1)}" in conf and "MAILADDR root" in conf
    assert sh(vm, "systemctl is-active mdmonitor").strip() == "active"
    assert sh(vm, f"stat -c %Y {initrd}") != before
    assert "etc/mdadm/mdadm.conf" in sh(vm, f"lsinitramfs {initrd}")
    assert md_status(vm) == "UU"

    second = play(inventory)
    assert second.changed_total == 0, [c.task for c in second.changes]


def test_degraded_array_with_repair_off_fails_naming_it_and_changes_nothing(vm: VmInfo, inventory: Path) -> None:
    _, b = members(vm)
    assert md_status(vm) == "UU"
    fail_and_remove(vm, b)
    conf_before = sh(vm, "sha256sum /etc/mdadm/mdadm.conf /boot/initrd.img-*")
    try:
        with pytest.raises(PlayFailed) as off:
            play(inventory, boot_raid1_repair=False)
        assert f"boot array {MD} is degraded" in str(off.value)
        assert "repair is off (boot_raid1_repair=false)" in str(off.value)
        assert md_status(vm) in ("U_", "_U")
        assert b not in sh(vm, f"mdadm --detail {MD}")
        assert sh(vm, "sha256sum /etc/mdadm/mdadm.conf /boot/initrd.img-*") == conf_before
    finally:
        sh(vm, f"mdadm {MD} --add {b} && mdadm --wait {MD} || true")


def test_a_vm_whose_host_key_is_not_the_known_one_is_not_reached(
    vm: VmInfo, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Host-key checking is really on through the runner (ansible-runner would turn it off by default)."""
    work = tmp_path_factory.mktemp("vmkey")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / "other")], check=True)
    kind, blob = (work / "other.pub").read_text().split()[:2]
    wrong = work / "known_hosts"
    wrong.write_text(f"[{vm.address}]:{vm.port} {kind} {blob}\n")
    stranger = vm.model_copy(update={"known_hosts": wrong})
    inv = write_vm_inventory(work / "inv", stranger, PROFILE, ROOT / "inventory/group_vars", {})
    with pytest.raises(PlayFailed) as refused:  # a fresh connection: no ControlPersist master to reuse
        play(inv, env={"ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / "cp")}, strategy="linear")
    assert refused.value.result.failures and all(f.unreachable for f in refused.value.result.failures)
    assert refused.value.result.changes == []
