"""The Ansible roles (site.yml, as `provision configure` runs it) on a twin of a catalogue profile: a
single-socket EPYC with two NVMe drives and no GPU, InfiniBand, scratch set, JBOD or boot mirror. The roles
skip what the profile does not have: the first run converges the factory-fresh twin, a second changes
nothing, and the converged twin verifies with exit 0 (issue 21, item 7). Needs root; run under the lab lock.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from provision.ansible import PlayResult, RunOptions, run_playbook
from provision.ansible.runner import PlayFailed
from provision.lab import manager

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "catalogue_epyc_9454p"
NODE = "node01"

pytestmark = [pytest.mark.lab, pytest.mark.twins, pytest.mark.heavy, pytest.mark.timeout(3600),
              pytest.mark.skipif(os.geteuid() != 0, reason="node twins need root")]


@dataclass
class Runs:
    """The two site.yml runs (a PlayResult, or the failure's message) and the verify after them."""

    first: PlayResult | str
    second: PlayResult | str | None
    verify: subprocess.CompletedProcess[str] | None
    report: dict | None  # type: ignore[type-arg]


def _play(inventory: Path) -> PlayResult | str:
    try:
        return run_playbook(RunOptions(inventory=inventory, limit=(NODE,)))
    except PlayFailed as exc:  # the failing task, named: the test shows it
        return str(exc)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """`provision lab up --profile catalogue_epyc_9454p` (its BMC and twin), site.yml twice, then verify."""
    lab_dir = tmp_path_factory.mktemp("catalogue-roles-lab")
    try:
        state = manager.up(manager.UpOptions(lab_dir=lab_dir, nodes=1, profile=PROFILE, speed=60.0,
                                             source_inventory=ROOT / "inventory" / "hosts.yml"))
        first = _play(state.inventory)
        second = _play(state.inventory) if isinstance(first, PlayResult) and first.ok else None
        verify = report = None
        if isinstance(second, PlayResult):
            out = lab_dir / "report.json"
            verify = subprocess.run([sys.executable, "-c", "from provision.cli import run; run()", "verify", NODE,
                                     "-i", str(state.inventory), "--level", "full", "--no-bmc", "--json", str(out)],
                                    capture_output=True, text=True, timeout=600, cwd=ROOT, check=False)
            report = json.loads(out.read_text()) if out.exists() else None
        yield Runs(first, second, verify, report)
    finally:
        manager.down(lab_dir)


def test_site_converges_the_catalogue_twin(runs: Runs) -> None:
    assert isinstance(runs.first, PlayResult), runs.first
    assert runs.first.ok and runs.first.hosts[NODE].failed == 0 and runs.first.hosts[NODE].changed > 0
    tasks = {c.task for c in runs.first.changes}
    assert not [t for t in tasks if "NVIDIA" in t or "scratch pool" in t.lower()], tasks  # absent sections


def test_second_run_changes_nothing(runs: Runs) -> None:
    assert isinstance(runs.second, PlayResult), runs.second
    assert runs.second.ok and runs.second.hosts[NODE].changed == 0, [c.task for c in runs.second.changes]
    assert runs.second.changes == []


def test_the_configured_twin_verifies_with_exit_0(runs: Runs) -> None:
    assert runs.verify is not None and runs.report is not None, runs.verify
    results = runs.report["nodes"][0]["results"]
    bad = [f"{r['id']}: expected {r['expected']}, found {r['found']}" for r in results
           if r["outcome"] in ("fail", "error")]
    assert runs.verify.returncode == 0, "\n".join(bad) + runs.verify.stderr[-1500:]
