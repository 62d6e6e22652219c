"""Campaigns against the lab's simulated BMCs: canary then waves to the baseline, halts on failing
BMCs, a BMC that reports success but keeps its version, kill -9 of the controller then resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from provision.lab import manager
from provision.lab.campaign_kit import LAB_COMPONENTS, SimLog, write_lab_campaign
from provision.lab.state import LabState
from tests.reportcheck import check_metrics

pytestmark = pytest.mark.lab
ROOT = Path(__file__).resolve().parents[2]
CLI = (sys.executable, "-c", "from provision.cli import run; run()")
BASELINE = {"BMC": "11.02.05", "BIOS": "2.1", "HGX_FW_GPU_SXM_1": "96.00.9F.00.04", "HGX_FW_GPU_SXM_8": "96.00.9F.00.04"}


class Lab:
    def __init__(self, state: LabState, workdir: Path) -> None:
        self.state = state
        self.dir = state.lab_dir
        self.inventory = state.inventory
        self.workdir = workdir
        self.env = {**os.environ, "PROVISION_STATE_DIR": str(workdir / "state")}

    def campaign(self, policy: dict, name: str = "labc") -> Path:
        return write_lab_campaign(self.workdir / "campaign", name, policy)

    def cli(self, *args: str, check_rc: int | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*CLI, *args], capture_output=True, text=True,
                              env=self.env, timeout=300, check=False)
        if check_rc is not None:
            assert proc.returncode == check_rc, proc.stdout + proc.stderr
        return proc

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([*CLI, *args], env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def log(self) -> SimLog:
        return SimLog(self.dir / "bmcsim.log")

    def versions(self, node: str) -> dict[str, str]:
        """Read straight from the simulated BMC (not through the code under test)."""
        hv = _host_vars(self.inventory.parent / "host_vars" / f"{node}.yml")
        out = {}
        for ident in BASELINE:
            resp = requests.get(f"{hv['provision_bmc_address']}/redfish/v1/UpdateService/FirmwareInventory/{ident}",
                                auth=(hv["provision_bmc_username"], hv["provision_bmc_password"]),
                                verify=hv["provision_bmc_ca_file"], timeout=30)
            resp.raise_for_status()
            out[ident] = resp.json()["Version"]
        return out

    def at_baseline(self, node: str) -> bool:
        return self.versions(node) == BASELINE

    def nodes(self) -> list[str]:
        return [n.name for n in self.state.nodes]


def _host_vars(path: Path) -> dict[str, str]:
    import yaml

    return yaml.safe_load(path.read_text())


def _lab(tmp_path: Path, nodes: int, speed: float) -> Iterator[Lab]:
    state = manager.up(manager.UpOptions(lab_dir=tmp_path / "lab", nodes=nodes, bmc_only=True, speed=speed,
                                         source_inventory=ROOT / "inventory" / "hosts.yml"))
    try:
        yield Lab(state, tmp_path)
    finally:
        manager.down(tmp_path / "lab")


@pytest.fixture
def lab6(tmp_path: Path) -> Iterator[Lab]:
    yield from _lab(tmp_path, 6, 60)


@pytest.fixture
def lab50(tmp_path: Path) -> Iterator[Lab]:
    yield from _lab(tmp_path, 50, 120)


def test_canary_then_waves_to_the_baseline(lab6: Lab) -> None:
    path = lab6.campaign({"waves": {"canary": 1, "batch_size": 3}, "halt": {"max_failures": 0}})
    inv = str(lab6.inventory)
    plan = json.loads(lab6.cli("campaign", "plan", str(path), "-i", inv, "--json", check_rc=0).stdout)
    assert [len(w) for w in plan["waves"]] == [1, 3, 2]
    assert not plan["at_baseline"]
    lab6.cli("campaign", "start", str(path), "-i", inv, check_rc=0)
    assert all(lab6.at_baseline(n) for n in lab6.nodes())
    log = lab6.log()
    assert log.update_tasks() == {n: len(LAB_COMPONENTS) for n in lab6.nodes()}  # one flash per component
    assert log.host_resets() == {n: 1 for n in lab6.nodes()}  # one host reset for bios + gpu
    report = json.loads(lab6.cli("campaign", "report", "labc", "--json", check_rc=0).stdout)
    assert report["state"] == "done" and report["summary"]["updated"] == 6
    first = min(report["nodes"], key=lambda n: n["wave"])
    assert first["before"]["bmc"] == "11.01.01" and first["after"]["bmc"] == "11.02.05"
    waves = report["waves"]
    assert [w["state"] for w in waves] == ["done"] * 3 and all(w["gate"] == "ok" for w in waves)
    html = lab6.workdir / "r.html"
    lab6.cli("campaign", "report", "labc", "--html", str(html), check_rc=0)
    assert "node01" in html.read_text() and "11.01.01 &rarr; 11.02.05" in html.read_text()
    # a second start is refused; a second campaign over converged nodes does nothing
    assert lab6.cli("campaign", "start", str(path), "-i", inv).returncode == 2
    again = lab6.campaign({"waves": {"canary": 1}}, name="again")
    out = lab6.cli("campaign", "start", str(again), "-i", inv, check_rc=0).stdout
    assert "nothing to do" in out
    assert lab6.log().update_tasks() == log.update_tasks()


def test_two_percent_failing_bmcs_halt_as_the_policy_says(lab50: Lab) -> None:
    manager.fault(lab50.dir, "node17", "task-fail", False, None)  # 1 of 50 = 2%
    path = lab50.campaign({"waves": {"canary": 2, "batch_size": 12}, "concurrency": 64,
                           "halt": {"max_failures": 5, "max_fail_percentage": 1}})
    proc = lab50.cli("campaign", "start", str(path), "-i", str(lab50.inventory), "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    assert out["state"] == "halted" and "> 1%" in out["reason"]
    report = json.loads(lab50.cli("campaign", "report", "labc", "--json", check_rc=0).stdout)
    by_node = {n["node"]: n for n in report["nodes"]}
    failed_wave = by_node["node17"]["wave"]
    assert by_node["node17"]["outcome"] == "failed" and "Exception" in by_node["node17"]["error"]
    tasks = lab50.log().update_tasks()
    for name, node in by_node.items():  # every node in a known state, and the BMCs agree with the journal
        assert node["outcome"] in ("done", "failed", "pending"), name
        if node["outcome"] == "done":
            assert lab50.at_baseline(name), name
        if node["outcome"] == "pending":
            assert node["wave"] > failed_wave and tasks[name] == 0, name
            assert lab50.versions(name)["BMC"] == "11.01.01", name
    assert report["summary"]["failed"] == 1 and report["summary"]["pending"] > 0


def test_success_without_a_new_version_is_a_failure(lab6: Lab) -> None:
    manager.fault(lab6.dir, "node03", "update-noop", False, None)
    path = lab6.campaign({"waves": {"canary": 1, "batch_size": 5}, "halt": {"max_failures": 0}})
    proc = lab6.cli("campaign", "start", str(path), "-i", str(lab6.inventory), "--json")
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["state"] == "halted"
    node = next(n for n in json.loads(lab6.cli("campaign", "report", "labc", "--json").stdout)["nodes"]
                if n["node"] == "node03")
    assert node["outcome"] == "failed"
    assert node["error"].startswith("after the update: bmc is 11.01.01, expected 11.02.05")


@pytest.mark.parametrize("kill_after_tasks", [4, 9])
def test_kill_9_mid_wave_then_resume(lab6: Lab, kill_after_tasks: int) -> None:
    """Killed while BMCs are flashing; resume re-reads every BMC: all reach the baseline, none flashed twice."""
    path = lab6.campaign({"waves": {"canary": 1, "batch_size": 5}})
    inv = str(lab6.inventory)
    proc = lab6.popen("campaign", "start", str(path), "-i", inv)
    deadline = time.monotonic() + 120
    while sum(lab6.log().update_tasks().values()) < kill_after_tasks:
        assert proc.poll() is None and time.monotonic() < deadline, "campaign ended before the kill"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    status = json.loads(lab6.cli("campaign", "status", "labc", "--json", check_rc=0).stdout)
    assert status["state"] == "running" and not status["controller_running"]  # what kill -9 leaves
    lab6.cli("campaign", "resume", "labc", "-i", inv, check_rc=0)
    assert all(lab6.at_baseline(n) for n in lab6.nodes())
    log = lab6.log()
    assert log.update_tasks() == {n: len(LAB_COMPONENTS) for n in lab6.nodes()}  # none flashed twice
    assert all(count == 1 for count in log.flashes().values())
    assert set(log.host_resets().values()) == {1}


def test_lost_update_answers_are_followed_through_their_tasks_not_flashed_again(lab6: Lab) -> None:
    """Every update request to two nodes is carried out, then its connection dropped before the answer (fault
    answer-lost): the campaign finds each request's task instead of sending it again."""
    hit = ("node01", "node04")  # the canary and a node of the next wave
    for node in hit:
        manager.fault(lab6.dir, node, "answer-lost", False, float(len(LAB_COMPONENTS)))
    path = lab6.campaign({"waves": {"canary": 1, "batch_size": 5}, "halt": {"max_failures": 0}})
    lab6.cli("campaign", "start", str(path), "-i", str(lab6.inventory), check_rc=0)
    log = lab6.log()
    lost = log._count(lambda e: e["event"] == "fault.answer_lost")
    assert lost == {n: len(LAB_COMPONENTS) for n in hit}  # the fault did act on every update of those nodes
    assert log.update_tasks() == {n: len(LAB_COMPONENTS) for n in lab6.nodes()}  # one task per component
    assert all(count == 1 for count in log.flashes().values())
    assert all(lab6.at_baseline(n) for n in lab6.nodes())


def test_pause_from_another_process_then_resume(lab6: Lab, tmp_path: Path) -> None:
    path = lab6.campaign({"waves": {"canary": 1, "batch_size": 1}})
    inv = str(lab6.inventory)
    proc = lab6.popen("campaign", "start", str(path), "-i", inv)
    deadline = time.monotonic() + 60
    while not lab6.log().update_tasks():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    lab6.cli("campaign", "pause", "labc", check_rc=0)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "paused" in out
    status = json.loads(lab6.cli("campaign", "status", "labc", "--json", check_rc=0).stdout)
    assert status["state"] == "paused" and status["summary"]["pending"] >= 4
    prom = tmp_path / "campaign.prom"  # what a timer exports while the campaign stands paused
    lab6.cli("campaign", "status", "labc", "--prom", str(prom), check_rc=0)
    check_metrics(prom)
    text = prom.read_text()
    assert 'provision_campaign_state{campaign="labc",state="paused"} 1' in text
    assert 'provision_campaign_halted{campaign="labc"} 0' in text
    assert f'provision_campaign_nodes{{campaign="labc",state="pending"}} {status["summary"]["pending"]}' in text
    lab6.cli("campaign", "resume", "labc", "-i", inv, check_rc=0)
    assert all(lab6.at_baseline(n) for n in lab6.nodes())
    assert set(lab6.log().update_tasks().values()) == {len(LAB_COMPONENTS)}


def test_bmc_reset_mid_update_fails_the_node_then_retry_converges(lab6: Lab) -> None:
    manager.fault(lab6.dir, "node01", "bmc-reset-mid-update", False, None)
    path = lab6.campaign({"waves": {"canary": 1, "batch_size": 5}, "halt": {"max_failures": 0}})
    inv = str(lab6.inventory)
    proc = lab6.cli("campaign", "start", str(path), "-i", inv, "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["state"] == "halted"
    node = json.loads(lab6.cli("campaign", "report", "labc", "--json").stdout)["nodes"][0]
    assert node["node"] == "node01" and node["outcome"] == "failed" and node["error"].startswith("update failed")
    assert lab6.log().update_tasks() == {"node01": 1}  # the canary failed: no other node was touched
    manager.fault(lab6.dir, "node01", "bmc-reset-mid-update", True, None)
    lab6.cli("campaign", "resume", "labc", "-i", inv, "--retry-failed", check_rc=0)
    assert all(lab6.at_baseline(n) for n in lab6.nodes())
    assert all(count == 1 for count in lab6.log().flashes().values())  # each image activated once
