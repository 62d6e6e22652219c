"""The installer CD's pure parts: kernel module load order, the node's install.conf, the install script."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from provision.errors import LabError
from provision.lab.vm import debs, deploy, installer

DEP = """kernel/drivers/scsi/scsi_common.ko:
kernel/drivers/scsi/scsi_mod.ko: kernel/drivers/scsi/scsi_common.ko
kernel/drivers/cdrom/cdrom.ko:
kernel/drivers/scsi/sr_mod.ko: kernel/drivers/cdrom/cdrom.ko kernel/drivers/scsi/scsi_mod.ko kernel/drivers/scsi/scsi_common.ko
kernel/drivers/scsi/virtio_scsi.ko: kernel/drivers/scsi/scsi_mod.ko kernel/drivers/scsi/scsi_common.ko
kernel/fs/nls/nls_iso8859-1.ko:
kernel/drivers/md/md-mod.ko:
kernel/drivers/md/raid1.ko: kernel/drivers/md/md-mod.ko
"""


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        (("raid1",), ["md/md-mod.ko", "md/raid1.ko"]),
        (("sr_mod",), ["scsi/scsi_common.ko", "scsi/scsi_mod.ko", "cdrom/cdrom.ko", "scsi/sr_mod.ko"]),
        (("virtio_scsi", "sr_mod"),  # shared dependencies load once
         ["scsi/scsi_common.ko", "scsi/scsi_mod.ko", "scsi/virtio_scsi.ko", "cdrom/cdrom.ko", "scsi/sr_mod.ko"]),
        (("nls_iso8859-1", "md_mod"), ["nls/nls_iso8859-1.ko", "md/md-mod.ko"]),  # '-' and '_' are one
    ],
)  # fmt: skip
def test_module_order_loads_each_dependency_first_and_once(wanted: tuple[str, ...], expected: list[str]) -> None:
    got = installer.module_order(DEP, wanted)
    assert [p.split("/", 2)[-1] for p in got] == expected


def test_a_module_the_kernel_lacks_is_a_lab_error_naming_it() -> None:
    with pytest.raises(LabError, match="ahci"):
        installer.module_order(DEP, ("raid1", "ahci"))


KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOr provision-lab"


def test_install_conf_is_shell_assignments_of_the_node() -> None:
    conf = installer.InstallConf(hostname="node01", boot_serials=("N01-BOOT0", "N01-BOOT1"), authorized_key=KEY)
    assert conf.text() == f"HOSTNAME='node01'\nBOOT_SERIALS='N01-BOOT0 N01-BOOT1'\nAUTHORIZED_KEY='{KEY}'\nSEED='0'\n"
    seeded = conf.model_copy(update={"seed": True}).text()
    assert seeded.endswith("SEED='1'\n")  # the host key comes from the os stage's seed medium


@pytest.mark.parametrize(
    "bad",
    [
        {"hostname": "Node 1"},
        {"authorized_key": "ssh-ed25519 AAAA'; reboot; '"},
        {"authorized_key": "not a key"},
        {"boot_serials": ()},
    ],
)
def test_install_conf_refuses_what_would_break_the_script(bad: dict[str, object]) -> None:
    fields: dict[str, object] = {"hostname": "node01", "boot_serials": ("A", "B"), "authorized_key": KEY, **bad}
    with pytest.raises(ValidationError):
        installer.InstallConf.model_validate(fields)


def test_a_serial_with_shell_characters_is_refused() -> None:
    conf = installer.InstallConf(hostname="node01", boot_serials=("A", "B'; rm -rf /"), authorized_key=KEY)
    with pytest.raises(LabError, match="serial"):
        conf.text()


def test_install_script_parses_and_checks_the_drives_before_writing_anything() -> None:
    script = installer.INSTALL_SH
    if shutil.which("sh"):
        assert subprocess.run(["sh", "-n"], input=script, text=True, check=False).returncode == 0
    drives, partition = script.index("step drives"), script.index("step partition")
    assert drives < partition < script.index("sfdisk")
    assert script.index("need exactly two boot drives") < partition
    assert script.index("no seed medium") < partition  # SEED=1 without its medium: refused before writing
    assert script.index("cp /seed/provision/ssh_host_ed25519_key ") < script.index(installer.HOSTKEY_BEGIN)
    assert "--metadata=1.2" in script and "--assume-clean" in script
    assert script.count("grub-install --target=x86_64-efi") == 2  # both ESPs
    assert script.index(installer.HOSTKEY_BEGIN) < script.index(installer.DONE) < script.rindex("poweroff -f")


CONSOLE = f"""BdsDxe: loading Boot0003 "UEFI QEMU QEMU CD-ROM" from ...\r
{installer.STEP} modules 4.10\r
{installer.STEP} media 4.50\r
{installer.STEP} partition 9.00\r
{installer.HOSTKEY_BEGIN}\r
ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk root@node01\r
{installer.HOSTKEY_END}\r
{installer.DONE} 30.25\r
"""


def test_the_console_report_gives_steps_phases_and_the_host_key() -> None:
    report = deploy.parse_console(CONSOLE, "node01")
    assert report.host_key == "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHk"
    assert report.phases() == {"modules": 0.4, "media": 4.5, "partition": 21.2}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (CONSOLE.replace(f"{installer.STEP} partition 9.00",
                         f"{installer.STEP} partition 9.00\n{installer.ERROR} drives: boot drive X not found"),
         "failed at step drives: boot drive X not found"),
        (CONSOLE.split(installer.HOSTKEY_BEGIN)[0], "did not finish (last step: partition)"),
        ("BdsDxe: failed to load Boot0001 ...", "did not finish (last step: none (the installer did not start"),
    ],
)  # fmt: skip
def test_a_failed_or_unfinished_install_is_one_line_naming_the_step(text: str, message: str) -> None:
    with pytest.raises(LabError, match=re.escape(message)) as caught:
        deploy.parse_console(text, "node01")
    assert "\n" not in str(caught.value) and str(caught.value).startswith("node01: ")


STATUS = """Package: mdadmx
Status: install ok installed
Version: 9.9-1

Package: mdadm
Status: install ok installed
Priority: optional
Version: 4.2-5

Package: linux-image-6.1.0-53-cloud-amd64
Status: install ok installed
Version: 6.1.187-1
"""


def test_installed_version_reads_the_named_package_of_a_dpkg_status(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text(STATUS)
    assert debs.installed_version(status, "mdadm") == "4.2-5"  # not mdadmx's, though it comes first
    assert debs.installed_version(status, "linux-image-6.1.0-53-cloud-amd64") == "6.1.187-1"
    with pytest.raises(LabError, match="nvme-cli is not installed"):
        debs.installed_version(status, "nvme-cli")

