"""A real Slurm drains a twin that fails its checks and resumes it when the fault clears.

Debian's slurm-wlm 22.05 and munge (provision/lab/slurm.py says exactly what runs where): slurmctld and
munged on the host, slurmd and munged in an ML-PROD-V4 twin converged as in test_verify. slurmd runs
`provision verify --local --spec-file /etc/provision/node.json --level quick --drain` as its
HealthCheckProgram every 5 s (the wrapper the README documents). Then:
- a `gpu_missing` fault gets the node drained by its own health check, the reason naming the check
  (`provision: gpu.count`), and clearing the fault gets it resumed;
- from the controller, `provision verify` over SSH plus the bring-up/campaign hook (scheduler.slurm.sync
  with scontrol on the host) drains and resumes it the same way; a node an operator drained is left alone.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from provision.conformance.model import Level
from provision.conformance.node import verify
from provision.lab import slurm as labslurm
from provision.lab import twins
from provision.lab.twins.models import TwinInfo
from provision.scheduler.slurm import ActionKind, Scontrol, SlurmNode, parse_node, sync
from provision.scheduler.specfile import NodeSpecFile
from provision.spec import load_fleet
from provision.spec.slurm import SlurmSettings
from tests.lab.verify_lab import ROOT, converge, project_spec, ssh, verify_lab

pytestmark = [
    pytest.mark.lab,
    pytest.mark.twins,
    pytest.mark.skipif(os.geteuid() != 0, reason="node twins need root"),
    pytest.mark.skipif(bool(labslurm.missing_programs()), reason="needs slurm-wlm and munge (scripts/bootstrap.sh)"),
]

NODE = "node01"
FAULT, CHECK = "gpu_missing", "gpu.count"  # a quick-level check: the health check runs --level quick
INTERVAL_S = 5


@dataclass
class Cluster:
    lab: labslurm.SlurmLab
    inventory: Path
    twin_dir: Path
    info: TwinInfo

    def node(self) -> SlurmNode:
        return parse_node(NODE, self.lab.run("scontrol", "-o", "show", "node", NODE))

    def wait(self, ready: object, what: str, timeout: float = 90) -> SlurmNode:
        deadline, node = time.monotonic() + timeout, self.node()
        while time.monotonic() < deadline:
            node = self.node()
            if ready(node):  # type: ignore[operator]
                return node
            time.sleep(1)
        log = ssh(self.info, f"tail -n 20 {labslurm.HEALTHCHECK_LOG} 2>&1 || true", timeout=30)
        raise AssertionError(f"{what}: {node} after {timeout:g} s\nhealth check log:\n{log}\n{self.lab.log_tail()}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("slurm-lab")
    repo = labslurm.node_repo()
    with verify_lab(base, 1) as (inventory, twin_dir, infos):
        info = infos[NODE]
        converge(info, project_spec())
        node = labslurm.LabNode(NODE, info.address, twin_dir / "twins" / NODE / "state")
        host_addr = info.address.rsplit(".", 1)[0] + ".1"
        extra = f"HealthCheckProgram={labslurm.HEALTHCHECK}\nHealthCheckInterval={INTERVAL_S}\n"
        spec_json = NodeSpecFile.of(load_fleet(inventory).select([NODE])[0]).to_json()
        with labslurm.slurm_lab(base / "slurm", [node], host_addr, extra_conf=extra) as lab:
            labslurm.stage_node(lab, node, repo)
            labslurm.stage_provision(node, ROOT, Path(sysconfig.get_paths()["purelib"]), spec_json)
            ssh(info, labslurm.PROVISION_INSTALL + labslurm.INSTALL_SCRIPT, timeout=300)
            c = Cluster(lab, inventory, twin_dir, info)
            c.wait(lambda n: "NOT_RESPONDING" not in n.states and "UNKNOWN" not in n.states and not n.drained,
                   "slurmd did not register healthy")
            yield c


def test_health_check_drains_a_faulty_node_and_resumes_it_when_cleared(cluster: Cluster) -> None:
    assert not cluster.node().drained
    twins.fault(cluster.twin_dir, NODE, FAULT, False)
    try:
        drained = cluster.wait(lambda n: n.drained, f"{FAULT} did not drain {NODE}")
    finally:
        twins.fault(cluster.twin_dir, NODE, FAULT, True)
    assert drained.reason == f"provision: {CHECK}"
    assert f"provision: {CHECK}" in cluster.lab.run("sinfo", "-R", "-h", "-o", "%100E|%N")
    resumed = cluster.wait(lambda n: not n.drained, f"clearing {FAULT} did not resume {NODE}")
    assert resumed.reason == ""
    log = ssh(cluster.info, f"cat {labslurm.HEALTHCHECK_LOG}", timeout=30)
    assert f"slurm: {NODE}: drain" in log and f"slurm: {NODE}: resume" in log  # slurmd ran it, both ways


def test_controller_hook_drains_and_resumes_and_leaves_an_operators_drain(cluster: Cluster) -> None:
    settings = SlurmSettings(drain_on_fail=True, scontrol=shutil.which("scontrol") or "scontrol")
    os.environ["SLURM_CONF"] = str(cluster.lab.conf)  # scontrol_env passes SLURM_* through, nothing else
    try:
        tool = Scontrol(settings.scontrol)
        host = load_fleet(cluster.inventory).select([NODE])
        twins.fault(cluster.twin_dir, NODE, FAULT, False)
        try:
            (report,) = verify(host, Level.QUICK).nodes
            action = sync(report, settings, scontrol=tool)
        finally:
            twins.fault(cluster.twin_dir, NODE, FAULT, True)
        assert action.kind in {ActionKind.DRAIN, ActionKind.NONE}  # NONE: its own health check was first
        assert cluster.node().drained and cluster.node().reason == f"provision: {CHECK}"
        (healthy,) = verify(host, Level.QUICK).nodes
        assert healthy.ok
        sync(healthy, settings, scontrol=tool)
        assert not cluster.node().drained
        cluster.lab.run("scontrol", "update", f"nodename={NODE}", "state=drain", "reason=operator: fan swap")
        try:
            kept = sync(healthy, settings, scontrol=tool)
            assert kept.kind is ActionKind.NONE and cluster.node().reason == "operator: fan swap"
            time.sleep(INTERVAL_S * 2)  # the node's own health check leaves it drained as well
            assert cluster.node().drained and cluster.node().reason == "operator: fan swap"
        finally:
            cluster.lab.run("scontrol", "update", f"nodename={NODE}", "state=resume")
    finally:
        os.environ.pop("SLURM_CONF", None)
