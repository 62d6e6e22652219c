"""Three controller processes run one shared bring-up (`provision bringup all --share NAME`) through a real
PostgreSQL journal that the lab inventory names (provision_journal_url in group_vars/all), over 6 simulated BMCs,
the BMC stages (preflight, firmware, bios, reset). One controller is killed -9 mid-node (a failpoint: right after
a BIOS write reached the BMC, before its outcome was journaled); the two others finish its nodes, each resumed at
its first stage not completed. Checked from the simulator's own event log: every node's firmware activated once
per component, its host reset once; and from the journal: every stage of every node completed once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from provision.lab import manager
from provision.lab.campaign_kit import SimLog
from provision.lab.state import LabState

pytestmark = [pytest.mark.lab, pytest.mark.postgres]
ROOT = Path(__file__).resolve().parents[2]
CLI = (sys.executable, "-c", "from provision.cli import run; run()")
NODES = 6
STAGES = ("bmc-password", "bmc-accounts", "preflight", "bmc", "firmware", "bios", "reset")
VICTIM = 1


@pytest.fixture
def lab6(shared_lab: Callable[[int, float], LabState]) -> LabState:
    return shared_lab(NODES, 60)


def _name_the_journal(inventory: Path, url: str) -> None:
    """provision_journal_url in the lab inventory's group_vars/all (no password: that comes from the env)."""
    group_all = inventory.parent / "group_vars" / "all"
    if group_all.is_dir():
        (group_all / "zz_journal.yml").write_text(f"provision_journal_url: '{url}'\n")
    else:
        group_all.mkdir(parents=True)
        (group_all / "journal.yml").write_text(f"provision_journal_url: '{url}'\n")


def test_three_controllers_split_six_nodes_one_killed_mid_node(lab6: LabState, tmp_path: Path,
                                                               pg_url: str) -> None:
    _name_the_journal(lab6.inventory, pg_url)
    env = {k: v for k, v in os.environ.items() if k != "PROVISION_JOURNAL_URL"}  # the inventory names it
    env["PROVISION_STATE_DIR"] = str(tmp_path / "state")
    cmd = [*CLI, "bringup", "all", "--share", "lab6", "--to", "reset", "-i", str(lab6.inventory),
           "--poll-seconds", "0.2", "--lease-seconds", "10", "--json"]
    procs = []
    for i in range(3):
        # the victim runs one node at a time, so the one it holds when killed is at its failpoint (not, say, in
        # a BMC flash: a takeover at once would find the flash unfinished and send it again; see the README)
        run_env = {**env, "PROVISION_FAILPOINT": "bios-write:after"} if i == VICTIM else env
        width = ["--concurrency", "1" if i == VICTIM else "2", "--log-dir", str(tmp_path / f"logs{i}")]
        procs.append(subprocess.Popen([*cmd, *width], cwd=ROOT, env=run_env, text=True, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
    outs = []
    try:
        for p in procs:
            outs.append(p.communicate(timeout=600))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert procs[VICTIM].returncode == -9, f"the victim was not killed at its failpoint: {outs[VICTIM][1][-2000:]}"
    assert not (tmp_path / "state").exists()  # no SQLite journal: every controller opened the inventory's
    names = sorted(n.name for n in lab6.nodes)
    summaries = {}
    for i in (0, 2):
        out, err = outs[i]
        assert procs[i].returncode == 0, f"controller {i}: exit {procs[i].returncode}: {out[-2000:]} {err[-3000:]}"
        summaries[i] = json.loads(out)
        share = summaries[i]["share"]
        assert sorted(share["done"]) == names and share["failed"] == {}, share
    survivors = set(summaries[0]["share"]["mine"]) | set(summaries[2]["share"]["mine"])
    victim_nodes, completed = _journal(pg_url, procs[VICTIM].pid)
    assert victim_nodes and victim_nodes <= survivors  # the victim's nodes were finished by the others
    assert completed == Counter({(n, s): 1 for n in names for s in STAGES}), completed  # every stage once
    resumed = [n for i in (0, 2) for n in summaries[i]["nodes"] if n["node"] in victim_nodes]
    assert any(s["outcome"] == "skipped" for n in resumed for s in n["stages"])  # from the first stage not done
    log = SimLog(lab6.lab_dir / manager.SIM_LOG)
    assert log.host_resets() == Counter({n: 1 for n in names})
    flashes = log.flashes()
    assert flashes and set(flashes.values()) == {1}, flashes  # no component activated twice
    assert {n for n, _ in flashes} == set(names)
    per_node = Counter(n for n, _ in flashes)
    assert len(set(per_node.values())) == 1, per_node  # the same components on every node


def _journal(url: str, victim_pid: int) -> tuple[set[str], Counter[tuple[str, str]]]:
    """The nodes the victim's run touched, and how many times each (node, stage) completed in the share."""
    from provision.journal import Journal

    os.environ["PROVISION_JOURNAL_URL"] = url  # pg_url's monkeypatch puts it back
    with Journal() as jr:
        runs = jr.query("SELECT id, pid FROM runs WHERE kind = 'bringup' AND target = 'share lab6'")
        victim = [r["id"] for r in runs if r["pid"] == victim_pid]
        assert len(runs) == 3 and len(victim) == 1, runs
        touched = {r["node"] for r in jr.query("SELECT node FROM node_stages WHERE run_id = ?", (victim[0],))}
        rows = jr.query("SELECT ns.node, ns.stage FROM node_stages ns JOIN runs r ON r.id = ns.run_id"
                        " WHERE r.target = 'share lab6' AND ns.outcome IN ('applied', 'converged')")
    return touched, Counter((r["node"], r["stage"]) for r in rows)
