"""The inventory variables the roles need on the lab's node twins.

The lab writes its own inventory (provision/lab/inventory_writer.py); these helpers give it, and the lab tests,
the Ansible side: the stand-in apt repository, the twin's scratch drives by id, the role overrides.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from provision.errors import LabError
from provision.lab.declaration import lab_declaration

LAB_GROUP_VARS = "lab_group_vars.yml"


def lab_group_vars_text() -> str:
    """The role overrides every lab node gets (YAML text)."""
    return resources.files("provision.lab").joinpath("data", LAB_GROUP_VARS).read_text(encoding="utf-8")


def scratch_devices(hardware_json: Path) -> list[str]:
    """The twin's scratch drives as /dev/disk/by-id paths, from the personality's hardware.json."""
    try:
        hardware = json.loads(hardware_json.read_text(encoding="utf-8"))
        drives = [d for d in hardware["nvme"] if d["role"] == "scratch"]
        return [f"/dev/disk/by-id/{d['by_id']}" for d in drives]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LabError(f"{hardware_json}: cannot read the twin's drives ({exc.__class__.__name__})") from None


def boot_members(hardware_json: Path) -> list[str]:
    """The twin's boot mirror members as kernel paths (/dev/nvme0n1p2, ...); none where it has no mirror."""
    try:
        hardware = json.loads(hardware_json.read_text(encoding="utf-8"))
        raid = hardware["boot_raid"]
        return [] if raid is None else [f"/dev/{m}" for m in raid["members"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LabError(f"{hardware_json}: cannot read the twin's boot mirror ({exc.__class__.__name__})") from None


def lab_host_vars(repo_url: str, hardware_json: Path) -> dict[str, Any]:
    """Host variables of one twin: its repository and its drives (roles), its lab declaration (conformance)."""
    return {
        "provision_lab_repo_url": repo_url,
        "zfs_scratch_devices": scratch_devices(hardware_json),
        **lab_declaration(),
    }


def write_twin_inventory(
    inv_dir: Path, profile: str, group_vars: Path, twins: list[Any], twins_dir: Path
) -> Path:
    """A standalone inventory for running the roles on twins (lab tests, benches); returns hosts.yml.

    `twins` are TwinInfo objects (name, address, port, user, key_file, known_hosts, repo_url);
    `twins_dir` holds <name>/state/hardware.json; `group_vars` is the project's group_vars directory.
    """
    import shutil

    import yaml

    if inv_dir.exists():
        shutil.rmtree(inv_dir)
    (inv_dir / "host_vars").mkdir(parents=True)
    shutil.copytree(group_vars, inv_dir / "group_vars")
    (inv_dir / "group_vars" / "all").mkdir(exist_ok=True)
    (inv_dir / "group_vars" / "all" / "lab.yml").write_text(lab_group_vars_text(), encoding="utf-8")
    hosts = {"all": {"children": {profile: {"hosts": {t.name: None for t in twins}}}}}
    (inv_dir / "hosts.yml").write_text("---\n" + yaml.safe_dump(hosts, sort_keys=False), encoding="utf-8")
    for twin in twins:
        host_vars = {
            "ansible_host": twin.address,
            "ansible_port": twin.port,
            "ansible_user": twin.user,
            "ansible_ssh_private_key_file": str(twin.key_file),
            "ansible_ssh_common_args": f"-o UserKnownHostsFile={twin.known_hosts} -o StrictHostKeyChecking=yes",
            **lab_host_vars(twin.repo_url, twins_dir / twin.name / "state" / "hardware.json"),
        }
        text = "---\n" + yaml.safe_dump(host_vars, sort_keys=False)
        (inv_dir / "host_vars" / f"{twin.name}.yml").write_text(text, encoding="utf-8")
    return inv_dir / "hosts.yml"
