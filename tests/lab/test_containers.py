"""The container_runtime role on a node twin, then `verify`'s container GPU checks (needs root).

One ML-PROD-V4 twin (engines docker + apptainer) is converged minimally without its container engines
(tests/lab/verify_lab.py), then playbooks/containers.yml installs Docker and Apptainer from the lab repository,
writes the NVIDIA runtime into daemon.json and puts the test image and SIF on the node; a second run changes
nothing. Verify's containers checks then pass, the fault container_gpu_hidden fails exactly them, and a daemon.json
without the NVIDIA runtime fails the runtime check until the role is applied again. The engines are LAB STAND-INs
(docker, apptainer, nvidia-ctk): Docker and Apptainer on a real GPU node were never run here.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from provision.ansible import PlayResult, RunOptions, run_playbook
from provision.conformance.model import Level, NodeReport, Outcome
from provision.conformance.node import verify
from provision.lab import twins
from provision.lab.inventory import lab_group_vars_text, lab_host_vars
from provision.lab.twins.models import TwinInfo
from provision.lab.twins.state import twins_dir
from provision.spec import load_fleet
from tests.lab.verify_lab import converge, project_spec, ssh, verify_lab

pytestmark = [
    pytest.mark.lab,
    pytest.mark.twins,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(os.geteuid() != 0, reason="node twins need root"),
]

NODE = "node01"
CONTAINER_CHECKS = {"containers.docker.runtime", "containers.docker.gpus", "containers.apptainer.gpus"}


@dataclass
class ContainersLab:
    inventory: Path
    twin_dir: Path
    info: TwinInfo
    first: PlayResult
    second: PlayResult

    def apply(self) -> PlayResult:
        return run_playbook(RunOptions(playbook="containers.yml", inventory=self.inventory, limit=(NODE,)))


def _lab_vars(inventory: Path, info: TwinInfo, twin_dir: Path) -> None:
    """The roles' lab settings (stand-in repository, overrides), as `provision lab up` writes them."""
    (inventory.parent / "group_vars" / "all").mkdir(parents=True, exist_ok=True)
    (inventory.parent / "group_vars" / "all" / "lab.yml").write_text(lab_group_vars_text(), encoding="utf-8")
    path = inventory.parent / "host_vars" / f"{NODE}.yml"
    data = yaml.safe_load(path.read_text()) or {}
    data.update(lab_host_vars(info.repo_url, twins_dir(twin_dir) / NODE / "state" / "hardware.json"),
                ansible_ssh_common_args=f"-o UserKnownHostsFile={info.known_hosts} -o StrictHostKeyChecking=yes")
    path.write_text("---\n" + yaml.safe_dump(data, sort_keys=False))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContainersLab]:
    base = tmp_path_factory.mktemp("containers-lab")
    with verify_lab(base, 1) as (inventory, twin_dir, infos):
        info = infos[NODE]
        converge(info, project_spec(), containers=False)
        _lab_vars(inventory, info, twin_dir)
        first = run_playbook(RunOptions(playbook="containers.yml", inventory=inventory, limit=(NODE,)))
        second = run_playbook(RunOptions(playbook="containers.yml", inventory=inventory, limit=(NODE,)))
        yield ContainersLab(inventory, twin_dir, info, first, second)


def report(lab: ContainersLab) -> NodeReport:
    (node,) = verify(load_fleet(lab.inventory).select([NODE]), Level.FULL).nodes
    assert node.error is None, node.error
    return node


def outcomes(node: NodeReport) -> dict[str, Outcome]:
    return {r.id: r.outcome for r in node.results if r.area == "containers"}


def failing(node: NodeReport) -> set[str]:
    return {r.id for r in node.results if not r.accepted}


def test_role_converges_then_changes_nothing(lab: ContainersLab) -> None:
    assert lab.first.ok and lab.first.hosts[NODE].changed > 0
    assert lab.second.ok and lab.second.hosts[NODE].changed == 0, lab.second.changes
    daemon = ssh(lab.info, "cat /etc/docker/daemon.json")
    assert '"nvidia"' in daemon and '"default-runtime": "nvidia"' in daemon
    assert "use nvidia-container-cli = no" in ssh(lab.info, "cat /etc/apptainer/apptainer.conf")
    assert ssh(lab.info, "systemctl is-active docker containerd").split() == ["active", "active"]


def test_verify_passes_every_check_with_the_containers(lab: ContainersLab) -> None:
    node = report(lab)
    assert outcomes(node) == dict.fromkeys(CONTAINER_CHECKS, Outcome.PASS)
    assert failing(node) == set(), [f"{r.id}: {r.found}" for r in node.results if not r.accepted]
    gpus = next(r for r in node.results if r.id == "containers.docker.gpus")
    assert gpus.found == "8 of 8"


def test_container_gpu_hidden_fails_the_container_checks_only(lab: ContainersLab) -> None:
    twins.fault(lab.twin_dir, NODE, "container_gpu_hidden", False)
    try:
        node = report(lab)
        assert failing(node) == {"containers.docker.gpus", "containers.apptainer.gpus"}
        assert next(r for r in node.results if r.id == "containers.docker.gpus").found == "0 of 8"
    finally:
        twins.fault(lab.twin_dir, NODE, "container_gpu_hidden", True)
    assert failing(report(lab)) == set()


def test_runtime_removed_from_daemon_json_fails_until_the_role_runs_again(lab: ContainersLab) -> None:
    ssh(lab.info, "echo '{}' > /etc/docker/daemon.json && systemctl restart docker")
    try:
        assert failing(report(lab)) == {"containers.docker.runtime"}
    finally:
        again = lab.apply()
    assert again.ok and again.hosts[NODE].changed > 0
    assert failing(report(lab)) == set()
