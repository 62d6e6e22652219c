"""A campaign over a mixed lab, each node's BMC serving a whole capture as captured (`lab up --bmc-tree A,B,C
--as-captured`): node01 a Supermicro SYS-821GE-TNHR, node02 an HPE ProLiant DL385, node03 a Lenovo SR670 V2. The
campaign's images are for the SYS-821GE-TNHR only (provision/lab/campaign_kit.py): `campaign plan` and `start`
list the HPE and Lenovo nodes "not applicable", and the simulator's log shows no update task, BIOS write or
reset on them; the Supermicro node is the only one touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from provision.lab import manager
from provision.lab.campaign_kit import SimLog, write_lab_campaign
from provision.lab.state import LabState

pytestmark = pytest.mark.lab
ROOT = Path(__file__).resolve().parents[2]
FULL = ROOT / "tests" / "fixtures" / "redfish" / "full"
CLI = (sys.executable, "-c", "from provision.cli import run; run()")
TREES = {"node01": "supermicro", "node02": "hpe", "node03": "lenovo"}


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LabState, Path]]:
    work = tmp_path_factory.mktemp("campaign-mixed")
    state = manager.up(manager.UpOptions(lab_dir=work / "lab", bmc_only=True, as_captured=True, speed=60,
                                         bmc_tree=[FULL / t for t in TREES.values()],
                                         source_inventory=ROOT / "inventory" / "hosts.yml"))
    try:
        yield state, work
    finally:
        manager.down(work / "lab")


def _cli(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PROVISION_STATE_DIR": str(work / "state")}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, timeout=300, check=False)


def _touched(log: SimLog, node: str) -> list[dict[str, Any]]:
    """Every change the simulator logged on `node`: a task, a BIOS write, a system PATCH, a host reset."""
    return [e for e in log.events if e.get("node") == node and (
        e["event"] in ("task.start", "bios.staged", "system.patch")
        or (e["event"] == "sel" and str(e.get("message", "")).startswith("Host reset")))]


def test_a_campaign_over_a_mixed_lab_touches_only_the_platform_it_is_for(
        mixed: tuple[LabState, Path]) -> None:
    state, work = mixed
    path = write_lab_campaign(work / "campaign", "mixed", {"waves": {"canary": 1, "batch_size": 2}})
    inv = str(state.inventory)
    proc = _cli(work, "campaign", "plan", str(path), "-i", inv, "--json")
    assert proc.returncode in (0, 3), proc.stdout + proc.stderr
    plan = json.loads(proc.stdout)
    assert sorted(plan["not_applicable"]) == ["node02", "node03"], plan
    assert [n for w in plan["waves"] for n in w] in ([], ["node01"]), plan
    start = _cli(work, "campaign", "start", str(path), "-i", inv, "--json")
    log = SimLog(state.lab_dir / manager.SIM_LOG)
    for node in ("node02", "node03"):
        assert _touched(log, node) == [], (node, start.stdout[-2000:], start.stderr[-2000:])
    said = start.stdout + start.stderr
    assert start.returncode == 0, said[-3000:]
    assert "node02: not applicable: the node is HPE ProLiant DL385 Gen10 Plus v2" in said, said[-3000:]
    assert "node03: not applicable: the node is Lenovo ThinkSystem SR670 V2" in said, said[-3000:]
    assert log.update_tasks() == {"node01": 3}  # bmc, bios, gpu: on the Supermicro node only
    assert log.host_resets() == {"node01": 1}
    report = json.loads(_cli(work, "campaign", "report", "mixed", "--json").stdout)
    assert [n["node"] for n in report["nodes"]] == ["node01"], report
    (node01,) = report["nodes"]
    assert node01["outcome"] == "done" and sorted(node01["flashed"]) == ["bios", "bmc", "gpu"], node01
    assert node01["after"] == {"bmc": "11.02.05", "bios": "2.1", "gpu": "96.00.9F.00.04"}, node01
