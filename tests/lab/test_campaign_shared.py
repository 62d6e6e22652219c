"""Three controller processes on one campaign through a real PostgreSQL journal, over 300 simulated BMCs: one
controller killed -9 mid-wave, then the leader killed -9; the last one finishes. Checked from the simulator's
own event log: one update task per component per node, one host reset each, never more nodes down at once
than max unavailable; every node's BMC at the baseline. (Issue 23: a node taken over is observed afresh, its
update tasks read; a controller whose lease renewals are late fences itself before its next side effect.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from provision.lab.campaign_kit import LAB_COMPONENTS, SimLog, write_lab_campaign
from provision.lab.state import LabState
from tests.lab.controllers import reaped

pytestmark = [pytest.mark.lab, pytest.mark.postgres]
CLI = (sys.executable, "-c", "from provision.cli import run; run()")
NODES = 300
COMPONENTS = 2  # bmc + bios: one BMC reboot and one host reset per node
MAX_UNAVAILABLE = 75  # 25% of 300
LEASE_S = 10.0


@pytest.fixture
def lab300(shared_lab: Callable[[int, float], LabState]) -> LabState:
    return shared_lab(NODES, 40)


def _active_by_pid(db: object) -> dict[int, int]:
    rows = db.execute("SELECT controller, COUNT(*) FROM campaign_nodes WHERE state = 'active' "  # type: ignore[attr-defined]
                      "GROUP BY controller").fetchall()
    return {int(c.split(":")[-1].split("/")[0]): n for c, n in rows if c}


def _leader_pid(db: object) -> int | None:
    row = db.execute("SELECT owner FROM campaign_leases WHERE role = 'leader'").fetchone()  # type: ignore[attr-defined]
    return int(row[0].split(":")[-1].split("/")[0]) if row else None


def _wave_active(db: object) -> int | None:
    import psycopg

    try:
        row = db.execute("SELECT MIN(wave) FROM campaign_waves WHERE state = 'active'").fetchone()  # type: ignore[attr-defined]
    except psycopg.errors.UndefinedTable:  # the starting controller has not migrated the journal yet
        return None
    return None if row[0] is None else int(row[0])


def test_three_controllers_one_killed_mid_wave_one_killed_as_leader(lab300: LabState, tmp_path: Path,
                                                                    pg_url: str, journal_db: object) -> None:
    policy = {"waves": {"canary": 3, "max_unavailable": "25%"}, "halt": {"max_failures": 0}, "concurrency": 30}
    camp = write_lab_campaign(tmp_path / "campaign", "shared", policy, components=COMPONENTS)
    env = {**os.environ, "PROVISION_STATE_DIR": str(tmp_path / "state")}
    common = ["-i", str(lab300.inventory), "--poll-seconds", "0.3", "--lease-seconds", str(LEASE_S), "--json"]
    logs = [open(tmp_path / f"controller{i}.log", "w") for i in range(3)]  # noqa: SIM115 -- closed below
    procs = [subprocess.Popen([*CLI, "campaign", "start", str(camp), *common], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=logs[0])]
    db = journal_db
    with reaped(procs, logs):
        deadline = time.monotonic() + 180
        while _wave_active(db) is None:
            assert procs[0].poll() is None and time.monotonic() < deadline, (tmp_path / "controller0.log").read_text()
            time.sleep(0.2)
        for i in (1, 2):
            procs.append(subprocess.Popen([*CLI, "campaign", "join", "shared", *common], env=env, text=True,
                                          stdout=subprocess.PIPE, stderr=logs[i]))
        by_pid = {p.pid: p for p in procs}
        # 1. a controller that is not the leader, killed while it has nodes of wave >= 1 in flight
        victim = _kill_when(db, by_pid, lambda pid, leader, wave: pid != leader and wave >= 1, deadline + 300)
        # 2. the leader, killed while it has nodes in flight in a later wave
        leader = _kill_when(db, by_pid, lambda pid, leader, wave: pid == leader and pid != victim and wave >= 2,
                            deadline + 600)
        (last,) = [p for p in procs if p.pid not in (victim, leader)]
        out, _ = last.communicate(timeout=900)
    result = json.loads(out)
    assert last.returncode == 0 and result["state"] == "done", out + (tmp_path / "controller2.log").read_text()
    assert (result["done"], result["failed"], result["pending"]) == (NODES, 0, 0)
    log = SimLog(lab300.lab_dir / "bmcsim.log")
    names = [n.name for n in lab300.nodes]
    assert log.update_tasks() == {n: COMPONENTS for n in names}  # one task per component per node
    baseline = {image: version for _, image, version, *_ in LAB_COMPONENTS[:COMPONENTS]}
    flashes = log.flashes()
    assert set(flashes.values()) == {1} and len(flashes) == NODES * COMPONENTS
    assert log.host_resets() == {n: 1 for n in names}
    assert log.peak_unavailable() <= MAX_UNAVAILABLE
    # every node at the baseline: the last "Firmware X updated to V" of each node and firmware is the baseline
    final = {}
    for e in log.events:
        msg = str(e.get("message", ""))
        if e["event"] == "sel" and msg.startswith("Firmware ") and " updated to " in msg:
            final[(e["node"], msg.split()[1])] = msg.rsplit(" ", 1)[1]
    assert {k: v for k, v in final.items()} == {(n, image): baseline[image] for n in names for image in baseline}


def _kill_when(db: object, procs: dict[int, subprocess.Popen[str]], wanted: object, deadline: float) -> int:
    while time.monotonic() < deadline:
        leader, wave = _leader_pid(db), _wave_active(db)
        active = _active_by_pid(db)
        for pid, proc in procs.items():
            if proc.poll() is None and wave is not None and active.get(pid, 0) >= 3 and wanted(pid, leader, wave):  # type: ignore[operator]
                os.kill(pid, signal.SIGKILL)
                proc.wait()
                return pid
        time.sleep(0.1)
    raise AssertionError("no controller matched in time")
