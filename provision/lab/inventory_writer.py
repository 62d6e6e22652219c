"""The inventory `provision lab up` writes in `<lab>/inventory/`: hosts.yml, the source inventory's specs copied
(image paths made absolute, the simulated boards described) and host_vars per node (0600)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from provision.lab import simproc
from provision.lab.bmcsim.config import SimConfig, factory_cert_file
from provision.lab.inventory import lab_group_vars_text, lab_host_vars
from provision.lab.state import LabState, NodeState
from provision.lab.vm import lab_up
from provision.spec.platforms import literal

USERNAME = "admin"


def write_inventory(lab: Path, profile: str, group_vars: Path, cfg: SimConfig, state: LabState) -> Path:
    """`<lab>/inventory/`: hosts.yml, the project's group_vars (the specs), host_vars per node (0600)."""
    inv = lab / "inventory"
    if inv.exists():
        shutil.rmtree(inv)
    (inv / "host_vars").mkdir(parents=True)
    if group_vars.is_dir():
        shutil.copytree(group_vars, inv / "group_vars")
        absolute_images(inv / "group_vars", group_vars.parent)
        # the simulator makes each tree's board a node of the profile (as captured, it does not): say so
        describe_lab_boards(inv / "group_vars", [lab_board(n.tree) for n in cfg.nodes if not n.as_captured])
    hosts = {"all": {"children": {profile: {"hosts": {n.name: None for n in state.nodes}}}}}
    (inv / "hosts.yml").write_text("---\n# Written by `provision lab up`; removed by `provision lab down`.\n"
                                   + yaml.safe_dump(hosts, sort_keys=False))
    if state.twins:  # the roles' lab settings: stand-in repository, drives by id, role overrides
        (inv / "group_vars" / "all").mkdir(parents=True, exist_ok=True)
        (inv / "group_vars" / "all" / "lab.yml").write_text(lab_group_vars_text(), encoding="utf-8")
    for node in state.nodes:  # one VM node at most (lab_up.MAX_NODES): the profile carries its installer
        if node.vm is not None:
            lab_up.pin_installer(inv / "group_vars", profile, node.vm.installer_url)
    secrets_by_name = {n.name: n.password.get_secret_value() for n in cfg.nodes}
    for node in state.nodes:
        hv = _host_vars(lab, node, secrets_by_name[node.name])
        if state.factory and node.https_port:  # what the BMC serves until its certificate is replaced
            hv["provision_lab_bmc_factory_cert_file"] = str(factory_cert_file(lab, node.name))
        simproc.write_private(inv / "host_vars" / f"{node.name}.yml", "---\n" + yaml.safe_dump(hv, sort_keys=False))
    return inv / "hosts.yml"


def _edit_profiles(copy: Path, edit: Callable[[dict[str, Any]], bool], note: str) -> None:
    """`edit` every profile (`provision_profile_*`) of the copied inventory's YAML files; a file whose profiles
    it changed (it returns True) is written back under a `note` comment saying what `lab up` did."""
    for path in sorted(copy.rglob("*.y*ml")):
        data = yaml.safe_load(path.read_text())
        if not isinstance(data, dict):
            continue
        changed = False
        for var, spec in data.items():
            if str(var).startswith("provision_profile_") and isinstance(spec, dict):
                changed = edit(spec) or changed
        if changed:
            path.write_text(f"---\n# Copied by `provision lab up`{note}\n" + yaml.safe_dump(data, sort_keys=False))


def absolute_images(copy: Path, source_base: Path) -> None:
    """Firmware image paths in the copied specs are relative to the source inventory: make them absolute."""
    def edit(spec: dict[str, Any]) -> bool:
        changed = False
        for fw in spec.get("firmware") or []:
            image = fw.get("image") if isinstance(fw, dict) else None
            if isinstance(image, str) and "://" not in image and not Path(image).is_absolute():
                fw["image"] = str((source_base / image).resolve())
                changed = True
        return changed

    _edit_profiles(copy, edit, f" from {source_base}; image paths made absolute.")


def lab_board(tree: Path) -> dict[str, str] | None:
    """The board a tree's first ComputerSystem names ({manufacturer, model} as platform globs), or None."""
    for root in (tree / "redfish" / "v1", tree):
        systems = root / "Systems" / "index.json"
        members = json.loads(systems.read_text()).get("Members") or [] if systems.is_file() else []
        for member in members:
            body = root / "Systems" / str(member.get("@odata.id", "")).rstrip("/").rsplit("/", 1)[-1] / "index.json"
            system = json.loads(body.read_text()) if body.is_file() else {}
            if system.get("Manufacturer") and system.get("Model"):
                return {"manufacturer": literal(str(system["Manufacturer"])), "model": literal(str(system["Model"]))}
    return None


def describe_lab_boards(copy: Path, found: list[dict[str, str] | None]) -> None:
    """The copied profiles describe the board the lab simulates as their node (its tree's Manufacturer and
    Model), and their lab images fit it: a profile that does not name it yet gains it in `platforms`; an image
    bound to other platforms says `applies_to: any` (an image in the simulator's format fits the simulated board
    whatever its vendor; the vendor plugin's rules find its entries). As captured, nothing is changed: a
    capture of another platform is then refused as a real node would be."""
    boards = [b for i, b in enumerate(found) if b is not None and b not in found[:i]]
    if not boards:
        return

    def edit(spec: dict[str, Any]) -> bool:
        changed = False
        platforms = spec.get("platforms")
        if isinstance(platforms, list) and any(b not in platforms for b in boards):
            spec["platforms"] = [*platforms, *(b for b in boards if b not in platforms)]
            changed = True
        for fw in spec.get("firmware") or []:
            target = fw.get("applies_to") if isinstance(fw, dict) else None
            if isinstance(target, dict) and any(b not in (target.get("platforms") or []) for b in boards):
                fw["applies_to"] = "any"
                changed = True
        return changed

    named = ", ".join(f"{b['manufacturer']} {b['model']}" for b in boards)
    _edit_profiles(copy, edit, f": the profiles describe the lab's simulated {named}.")


def _host_vars(lab: Path, node: NodeState, password: str) -> dict[str, Any]:
    port = node.https_port
    hv: dict[str, Any] = {
        "provision_bmc_address": f"https://127.0.0.1:{port}" if port else f"http://127.0.0.1:{node.http_port}",
        "provision_bmc_username": USERNAME,
        "provision_bmc_password": password,
        "provision_bmc_ca_file": str(lab / "ca.pem"),
    }
    if not port:  # a lab BMC that only speaks HTTP: the lab's own opt-in to a password in clear on loopback
        hv["provision_bmc_insecure_http"] = True
    if node.http_port:
        hv["provision_lab_bmc_http_address"] = f"http://127.0.0.1:{node.http_port}"
    if node.ssh:
        ssh = node.ssh
        hv.update(
            ansible_host=ssh.address, ansible_port=ssh.port, ansible_user=ssh.user,
            ansible_ssh_private_key_file=str(ssh.key_file),
            ansible_ssh_common_args=f"-o UserKnownHostsFile={ssh.known_hosts} -o StrictHostKeyChecking=yes",
            provision_ssh_known_hosts=str(ssh.known_hosts),
        )
        hv.update(lab_host_vars(ssh.repo_url, lab / "twins" / node.name / "state" / "hardware.json"))
    if node.vm:
        hv.update(lab_up.host_vars(node.vm))
    return hv
