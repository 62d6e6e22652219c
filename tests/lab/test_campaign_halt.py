"""`provision campaign halt` on a campaign three controller processes share through a real PostgreSQL journal,
over 60 simulated BMCs, halted mid-wave: checked from the journal and the simulator's own event log, no
controller began a node turn more than one poll interval after the halt was recorded, no node without a turn
begun was flashed, the turns in flight ended, and every controller exited, halted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from provision.lab import manager
from provision.lab.campaign_kit import SimLog, write_lab_campaign
from provision.lab.state import LabState
from tests.lab.controllers import reaped

pytestmark = [pytest.mark.lab, pytest.mark.postgres]
CLI = (sys.executable, "-c", "from provision.cli import run; run()")
NODES = 60
POLL_S = 0.5


def _active(db: object) -> tuple[int | None, dict[str, int]]:
    """The active wave (None: none yet, or the journal not migrated yet) and active nodes per controller."""
    import psycopg

    try:
        wave = db.execute("SELECT MIN(wave) FROM campaign_waves WHERE state = 'active'").fetchone()[0]  # type: ignore[attr-defined]
        rows = db.execute("SELECT controller, COUNT(*) FROM campaign_nodes WHERE state = 'active'"  # type: ignore[attr-defined]
                          " GROUP BY controller").fetchall()
    except psycopg.errors.UndefinedTable:
        return None, {}
    return wave, {str(c): int(n) for c, n in rows if c}


def test_a_halt_stops_three_controllers_within_a_poll(shared_lab: Callable[[int, float], LabState],
                                                       tmp_path: Path, pg_url: str, journal_db: object) -> None:
    lab = shared_lab(NODES, 40)
    policy = {"waves": {"canary": 3, "max_unavailable": "25%"}, "concurrency": 6}
    camp = write_lab_campaign(tmp_path / "campaign", "halting", policy, components=2)
    env = {**os.environ, "PROVISION_STATE_DIR": str(tmp_path / "state")}
    common = ["-i", str(lab.inventory), "--poll-seconds", str(POLL_S), "--lease-seconds", "10", "--json"]
    logs = [open(tmp_path / f"controller{i}.log", "w") for i in range(3)]  # noqa: SIM115 -- closed below
    procs = [subprocess.Popen([*CLI, "campaign", "start", str(camp), *common], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=logs[0])]
    db = journal_db
    outs = []
    with reaped(procs, logs):
        deadline = time.monotonic() + 60
        while _active(db)[0] is None:
            assert procs[0].poll() is None and time.monotonic() < deadline, (tmp_path / "controller0.log").read_text()
            time.sleep(0.1)
        procs += [subprocess.Popen([*CLI, "campaign", "join", "halting", *common], env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=logs[i]) for i in (1, 2)]
        while True:  # halt in wave 1, once every controller has nodes in flight
            wave, active = _active(db)
            if wave is not None and wave >= 1 and len(active) == 3:
                break
            assert time.monotonic() < deadline, f"wave {wave}, active {active}"
            time.sleep(0.05)
        halt = subprocess.run([*CLI, "campaign", "halt", "halting"], env=env, text=True, capture_output=True,
                              timeout=30)
        assert halt.returncode == 0 and "halted" in halt.stdout, halt.stderr
        outs = [p.communicate(timeout=60)[0] for p in procs]
    state, reason, halted_at = db.execute("SELECT state, reason, updated_at FROM campaigns").fetchone()  # type: ignore[attr-defined]
    assert (state, reason) == ("halted", "halted by request")
    for i, (proc, out) in enumerate(zip(procs, outs, strict=True)):
        assert proc.returncode == 1, f"controller {i}: exit {proc.returncode} {(tmp_path / f'controller{i}.log').read_text()[-2000:]}"
        assert json.loads(out)["state"] == "halted"
    nodes = db.execute("SELECT node, state, started_at FROM campaign_nodes").fetchall()  # type: ignore[attr-defined]
    began = {n: float(t) for n, _, t in nodes if t is not None}
    assert began and max(began.values()) <= halted_at + POLL_S, sorted(began.values())[-5:]
    assert not [n for n, s, _ in nodes if s == "active"]  # the turns in flight ended
    left = {n for n, s, _ in nodes if s == "pending"}
    assert left and len(began) + len(left) == NODES  # the halt stopped the campaign part way
    log = SimLog(lab.lab_dir / manager.SIM_LOG)
    flashed = {n for n, _ in log.flashes()} | set(log.update_tasks())
    assert flashed <= set(began) and not flashed & left  # nothing sent to a node whose turn had not begun
