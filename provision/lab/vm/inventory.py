"""A standalone Ansible inventory for one VM: the project's group_vars (the specs) plus its host_vars."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from provision.lab.vm.models import VmInfo


def write_vm_inventory(inv_dir: Path, vm: VmInfo, profile: str, group_vars: Path, extra: dict[str, Any]) -> Path:
    """<inv_dir>/hosts.yml with `vm` in group `profile`; `extra` are more host variables. Returns hosts.yml."""
    if inv_dir.exists():
        shutil.rmtree(inv_dir)
    (inv_dir / "host_vars").mkdir(parents=True)
    shutil.copytree(group_vars, inv_dir / "group_vars")
    hosts = {"all": {"children": {profile: {"hosts": {vm.name: None}}}}}
    (inv_dir / "hosts.yml").write_text("---\n" + yaml.safe_dump(hosts, sort_keys=False), encoding="utf-8")
    host_vars = {
        "ansible_host": vm.address,
        "ansible_port": vm.port,
        "ansible_user": vm.user,
        "ansible_python_interpreter": "/usr/bin/python3",
        "ansible_ssh_private_key_file": str(vm.key_file),
        "ansible_ssh_common_args": f"-o UserKnownHostsFile={vm.known_hosts} -o StrictHostKeyChecking=yes",
        **extra,
    }
    path = inv_dir / "host_vars" / f"{vm.name}.yml"
    path.write_text("---\n" + yaml.safe_dump(host_vars, sort_keys=False), encoding="utf-8")
    path.chmod(0o600)
    return inv_dir / "hosts.yml"
