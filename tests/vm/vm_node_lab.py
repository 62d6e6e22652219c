"""LAB ONLY: the node class of a VM lab node installed by the lab's installer, and its inventory.

The spec describes the VM as it is (qemu q35 under plain emulation: 2 vCPUs of "QEMU Virtual CPU",
one 1 GiB DIMM, the two emulated NVMe boot drives as an md RAID1 root, one virtio NIC at 1 Gb/s, the
installer's Debian cloud kernel), so verify judges the VM against what it has, as it judges a real
node against its class. It lives here, in the tests, not in the project's inventory: no real site has
this class. What qemu cannot present is waived by the inventory (`provision_lab_waivers`), each with its
reason, and shows as WAIVED, never as a pass.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from provision.lab.vm import debs
from provision.lab.vm.installer import InstallerTree

PROFILE = "lab_qemu_vm"
WAIVERS = {
    "memory.type": "qemu's SMBIOS DIMM is of type 'RAM': no DDR generation",
    "memory.speed": "qemu's SMBIOS DIMM has no configured speed",
    "memory.population": "qemu's one SMBIOS DIMM ('DIMM 0') names no socket or channel",
    "memory.ecc": "qemu's SMBIOS says multi-bit ECC for memory that has none",
    "cpu.l3_cache": "qemu's SMBIOS has no cache records (type 7): no L3 size to read",
    "bmc.*": "the VM node's BMC is the simulator: its sensors, PSUs and SEL are not the VM's",
    "services.smartmontools": "Debian's smartmontools.service has ConditionVirtualization=no: never started in a VM",
}


def dpkg_version(tree: InstallerTree, package: str) -> str:
    """The version of `package` the installed node carries (the installer OS tree's dpkg status)."""
    return debs.installed_version(tree.directory / "os/var/lib/dpkg/status", package)


def spec(tree: InstallerTree, boot_drive_mib: int, memory_mib: int) -> dict[str, Any]:
    """The class spec of a VM lab node installed from `tree`."""
    kernel = f"linux-image-{tree.kernel_version}"
    mdadm = dpkg_version(tree, "mdadm")
    return {
        "profile": "LAB-QEMU-VM",
        "description": "LAB ONLY: a qemu q35 VM lab node, 2 NVMe boot drives as md RAID1, no GPU",
        "platforms": "any",  # the VM's BMC is the simulator's captured board; the profile names no platform
        "form_factor": "virtual machine",
        "cpu": {"vendor": "amd", "model": "QEMU Virtual CPU version 2.5+", "sockets": 1, "cores_per_socket": 2,
                "threads_per_core": 1, "base_clock_ghz": 2.0, "l3_cache_mb_per_socket": 16,
                "isa_flags": ["sse2", "cx16"], "pcie_generation": 3, "pcie_lanes": 16},
        "memory": {"total_gb": memory_mib // 1024, "dimm_count": 1, "dimm_size_gb": memory_mib // 1024,
                   "type": "DDR4", "ecc": False, "min_speed_mts": 2666, "channels_per_socket": 1,
                   "dimms_per_channel": 1},
        "storage": {
            "boot": {"count": 2, "size_tb": round(boot_drive_mib * 2**20 / 10**12, 5), "interface": "nvme",
                     "form": "emulated", "raid": {"level": "raid1", "device": "/dev/md0", "mountpoint": "/"}},
            "nvme_health": {"max_percentage_used": 90, "max_media_errors": 0, "endurance_tbw": 1},
        },
        "network": {"ethernet": {"count": 1, "speed_gbps": 1}},
        "power": {"psu_count": 1, "psu_watts": 500, "redundancy": "none", "efficiency": "n/a", "peak_draw_w": 100},
        "cooling": {"fan_redundancy": "none", "min_fans": 1, "warn_internal_ambient_c": 35, "max_inlet_c": 35,
                    "critical_component_c": 90},
        "bios": {"settings": {}, "vendor_attributes": {}},
        "firmware": [],
        "software": {
            "os_distribution": "debian", "os_release": "12",
            "kernel": {"release": tree.kernel_version, "package": kernel, "apt_version": dpkg_version(tree, kernel)},
            "mdadm": {"version": mdadm.split("-")[0], "apt_version": mdadm},
        },
        "acceptance": {},
    }  # fmt: skip


def by_id(serial: str, part: int) -> str:
    """The stable path of partition `part` of the emulated NVMe drive with `serial` (udev's by-id link)."""
    return f"/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_{serial}-part{part}"


def write_inventory(inv: Path, project: Path, node_spec: dict[str, Any], name: str, host_vars: dict[str, Any],
                    repo_url: str, boot_serials: list[str], more_waivers: dict[str, str] | None = None) -> Path:
    """<inv>/hosts.yml: the project's group_vars plus this class, its node, the lab's declaration (WAIVERS and
    `more_waivers`: what this VM has beyond the class, each with its reason)."""
    shutil.copytree(project / "inventory" / "group_vars", inv / "group_vars")
    group_all = inv / "group_vars" / "all"
    (group_all / f"profile_{PROFILE}.yml").write_text(
        "---\n" + yaml.safe_dump({f"provision_profile_{PROFILE}": node_spec}, sort_keys=False), encoding="utf-8")
    (inv / "group_vars" / f"{PROFILE}.yml").write_text(f"---\nprovision_profile: {PROFILE}\n", encoding="utf-8")
    (inv / "host_vars").mkdir(exist_ok=True)
    hosts = {"all": {"children": {PROFILE: {"hosts": {name: None}}}}}
    (inv / "hosts.yml").write_text("---\n" + yaml.safe_dump(hosts), encoding="utf-8")
    path = inv / "host_vars" / f"{name}.yml"
    path.touch(mode=0o600)
    path.write_text("---\n" + yaml.safe_dump({
        **host_vars,
        "ansible_ssh_common_args": f"-o UserKnownHostsFile={host_vars['provision_ssh_known_hosts']} "
                                   "-o StrictHostKeyChecking=yes",
        "provision_lab": True, "provision_lab_waivers": {**WAIVERS, **(more_waivers or {})},
        "provision_lab_notice": "lab VM node: a qemu VM under plain emulation with a simulated BMC",
        # The node's packages: real Debian ones from the lab's repository on the host (10.0.2.100 from the guest).
        "base_apt_repositories": [{"name": "provision-lab", "uris": [repo_url], "suites": ["./"], "trusted": True}],
        "base_chrony_servers": ["10.0.2.2"],
        # The mirror's members and ESPs as the installer laid them out (partition 2 and 1 of each boot drive).
        "boot_raid1_members": [by_id(s, 2) for s in boot_serials],
        "boot_raid1_efi_partitions": [by_id(s, 1) for s in boot_serials],
        "monitoring_smartd_enabled": False,  # see the services.smartmontools waiver
    }, sort_keys=False), encoding="utf-8")
    return inv / "hosts.yml"
