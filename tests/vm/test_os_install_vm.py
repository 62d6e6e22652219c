"""Install the OS through the BMC's virtual media on a VM lab node, then boot it from its md RAID1 root.

The lab builds its installer CD (provision/lab/vm/installer.py) and serves it on 127.0.0.1; over Redfish
the test inserts it, sets a one-time CD boot and powers the node on. The installer partitions both NVMe
boot drives, makes the mirror, writes the OS, installs GRUB on both ESPs, prints the new host key on the
serial console and powers off (the BMC shows Off). Powered on again (the override spent), the node boots
from its drives: SSH answers with exactly the host key the console reported, `/` is /dev/md0, both
members are in sync, both ESPs carry the bootloader.

Opt-in (PROVISION_TEST_VM_INSTALL=1): one install under plain emulation takes several minutes, more than
the default vm tier's CI budget leaves (README, "Tests").
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from provision.errors import LabError
from provision.lab.twins.ssh import client_argv, lab_key
from provision.lab.vm import deploy, installer
from provision.lab.vm.node import VmNode, VmNodeOptions, drive_serials, vm_node
from provision.redfish.image_server import ImageServer

pytestmark = [
    pytest.mark.lab, pytest.mark.vm, pytest.mark.timeout(3600),
    pytest.mark.skipif(os.environ.get("PROVISION_TEST_VM_INSTALL") != "1",
                       reason="the OS install test is opt-in: PROVISION_TEST_VM_INSTALL=1"),
]  # fmt: skip

def tail(path: Path, n: int = 15) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return " | ".join(ln.strip() for ln in text.splitlines()[-n:] if ln.strip())


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VmNode, Path]]:
    if os.geteuid() != 0:
        pytest.skip("the vm tier runs as root")
    base = tmp_path_factory.mktemp("osinstall")
    key = lab_key(base)
    with vm_node(base / "lab", VmNodeOptions(boot_drive_mib=2048, scratch_drive_mib=64)) as node:
        yield node, key


@pytest.fixture(scope="module")
def served_iso(lab: tuple[VmNode, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    node, key = lab
    boot, _ = drive_serials(node.name, 2, 1)
    root = tmp_path_factory.mktemp("www")
    conf = installer.InstallConf(hostname=node.name, boot_serials=tuple(boot),
                                 authorized_key=key.with_suffix(".pub").read_text().strip())  # fmt: skip
    started = time.monotonic()
    installer.installer_iso(conf, root / "install.iso")
    print(f"\ninstaller CD built in {time.monotonic() - started:.1f} s ({(root / 'install.iso').stat().st_size >> 20} MiB)")

    with ImageServer() as srv:  # the project's own image server, on 127.0.0.1, where the BMC fetches from
        yield srv.url_for(root / "install.iso")


def test_install_from_virtual_media_then_boot_from_the_md_mirror(lab: tuple[VmNode, Path], served_iso: str) -> None:
    node, key = lab
    try:
        report = deploy.install(node, served_iso, timeout_s=2400)
    except LabError as exc:
        raise AssertionError(f"{exc}; console: {tail(node.host.work_dir / 'console-0001.log')}") from None
    print(f"install: {report.wall_s:.0f} s wall; phases (guest s): {report.phases()}")
    assert deploy.redfish(node, "GET", deploy.SYSTEM)["Boot"]["BootSourceOverrideEnabled"] == "Disabled"
    try:
        seconds = deploy.first_boot(node, key, report.host_key, key.parent / "known_hosts", timeout_s=900)
    except LabError as exc:
        raise AssertionError(f"{exc}; console: {tail(node.host.work_dir / 'console-0002.log')}") from None
    print(f"first boot from the drives to SSH: {seconds:.0f} s")
    argv = client_argv(key, key.parent / "known_hosts", "127.0.0.1", node.host.ssh_port)

    def sh(command: str) -> str:
        done = subprocess.run([*argv, command], capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, f"{command}: {done.stderr.strip()}"
        return done.stdout

    assert sh("findmnt -n -o SOURCE /").strip() == "/dev/md0"
    mdstat = sh("cat /proc/mdstat")
    assert re.search(r"md0 : active raid1 nvme\dn1p2\[\d\] nvme\dn1p2\[\d\]", mdstat), mdstat
    assert "[UU]" in mdstat, mdstat
    assert "metadata=1.2" in sh("cat /etc/mdadm/mdadm.conf")
    esps = sh("lsblk -nro NAME,PARTTYPE | awk '$2 == \"c12a7328-f81f-11d2-ba4b-00a0c93ec93b\" {print $1}'").split()
    assert len(esps) == 2, esps
    assert sh("findmnt -n -o SOURCE /boot/efi").strip() in {f"/dev/{esp}" for esp in esps}  # fstab's ESP
    for esp in esps:  # the bootloader on both: either drive boots alone
        sh(f"d=$(findmnt -n -o TARGET /dev/{esp} || true); if [ -z \"$d\" ]; then d=/mnt/{esp}; mkdir -p $d;"
           f" mount -o ro /dev/{esp} $d; fi; test -s $d/EFI/BOOT/BOOTX64.EFI")  # fmt: skip
