"""Halt across controllers: how soon every controller sharing a campaign honours a halt another one decided.

N simulated BMCs (one simulator, `--bmc-only`), a PostgreSQL journal made for the run (tests/pgcluster.py),
one `campaign start` and N-1 `campaign join` controllers (the real CLI, child processes), `max_failures: 0`,
and the simulator's `task-fail` fault on one node of a later wave: its failure halts the campaign, decided in
one controller's transaction. Figures, from the journal and the controllers' exits:

- `claimed_after_halt`: nodes whose turn began (journal started_at) more than one poll interval after the
  halt, per controller: 0 when every controller stopped taking nodes within a poll interval;
- `exit_after_s`: per controller, from the later of the halt and the end of its last turn in flight to its
  process exit (its loop sees the halt at its next poll, waits for its turns, resigns, exits);
- `in_flight_at_halt`: that controller's turns begun before the halt and ended after it (they finish).

    python bench/campaign_halt.py --nodes 300 --controllers 3

Prints one JSON document. Takes about a minute on 300 BMCs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.campaign_scale import wait_for_campaign  # noqa: E402
from provision.journal import Journal  # noqa: E402
from provision.journal.campaigns import CampaignStore  # noqa: E402
from provision.lab import manager  # noqa: E402
from provision.lab.campaign_kit import SimLog, write_lab_campaign  # noqa: E402

CLI = (sys.executable, "-c", "from provision.cli import run; run()")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=300)
    p.add_argument("--controllers", type=int, default=3)
    p.add_argument("--speed", type=float, default=40.0, help="simulated clock speed")
    p.add_argument("--poll", type=float, default=0.3, help="controller poll interval (s)")
    p.add_argument("--lease", type=float, default=10.0, help="node and leader lease seconds")
    p.add_argument("--fail-node", type=int, default=None, help="the failing node's index (default: the middle)")
    opts = p.parse_args()
    from tests.pgcluster import cluster

    with cluster() as pg:
        os.environ["PROVISION_JOURNAL_URL"] = pg.url()
        os.environ["PROVISION_JOURNAL_PASSWORD"] = pg.password
        return bench(opts)


def bench(opts: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="campaign-halt-bench-"))
    state = manager.up(manager.UpOptions(lab_dir=work / "lab", nodes=opts.nodes, bmc_only=True, speed=opts.speed,
                                         source_inventory=ROOT / "inventory" / "hosts.yml"))
    try:
        failing = state.nodes[opts.fail_node if opts.fail_node is not None else opts.nodes // 2].name
        manager.fault(work / "lab", failing, "task-fail", False, None)
        policy = {"waves": {"canary": 3, "max_unavailable": "25%"}, "halt": {"max_failures": 0}, "concurrency": 30}
        camp = write_lab_campaign(work / "campaign", "halt", policy, components=2)
        env = {**os.environ, "PROVISION_STATE_DIR": str(work / "state")}
        common = ["-i", str(state.inventory), "--json", "--poll-seconds", str(opts.poll),
                  "--lease-seconds", str(opts.lease)]
        procs = [_spawn(["campaign", "start", str(camp), *common], env, work, 0)]
        if not wait_for_campaign("halt", timeout_s=300, every_s=0.2):
            raise SystemExit("the starting controller never recorded the campaign")
        procs += [_spawn(["campaign", "join", "halt", *common], env, work, i) for i in range(1, opts.controllers)]
        exits = _wait_all(procs)
        result = summarise(opts, failing, procs, exits, SimLog(work / "lab" / "bmcsim.log"))
    finally:
        manager.down(work / "lab")
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


def _spawn(args: list[str], env: dict[str, str], work: Path, i: int) -> subprocess.Popen[str]:
    err = open(work / f"controller{i}.log", "w")  # noqa: SIM115 -- the child holds it; closed with the work dir
    return subprocess.Popen([*CLI, *args], env=env, text=True, stdout=subprocess.PIPE, stderr=err)


def _wait_all(procs: list[subprocess.Popen[str]]) -> dict[int, float]:
    """Each controller's exit (wall clock, as the journal's times are), polled every 20 ms."""
    exits: dict[int, float] = {}
    deadline = time.monotonic() + 1800
    while len(exits) < len(procs) and time.monotonic() < deadline:
        for proc in procs:
            if proc.pid not in exits and proc.poll() is not None:
                exits[proc.pid] = time.time()
        time.sleep(0.02)
    return exits


def summarise(opts: argparse.Namespace, failing: str, procs: list[subprocess.Popen[str]], exits: dict[int, float],
              log: SimLog) -> dict[str, object]:
    with Journal(read_only=True) as j:
        record = CampaignStore(j).get("halt")
        nodes = CampaignStore(j).nodes("halt")
    halt_at = record.updated_at
    per: dict[str, dict[str, object]] = {}
    for proc in procs:
        mine = [n for n in nodes if n.controller.split(":")[-1].split("/")[0] == str(proc.pid)]
        ends = [n.ended_at for n in mine if n.ended_at]
        last_end = max([halt_at, *ends])
        per[str(proc.pid)] = {
            "rc": proc.returncode, "turns": len(mine),
            "in_flight_at_halt": sum(1 for n in mine if (n.started_at or 0) <= halt_at < (n.ended_at or 0)),
            "claimed_after_halt": sum(1 for n in mine if (n.started_at or 0) > halt_at + opts.poll),
            "exit_after_s": round(exits.get(proc.pid, float("inf")) - last_end, 2),
        }
    tasks = log.update_tasks()
    checks = {
        "halted": record.state.value == "halted" and failing in record.reason,
        "no_claim_after_halt_plus_one_poll": all(c["claimed_after_halt"] == 0 for c in per.values()),
        "every_controller_exited": len(exits) == len(procs),
        "at_most_one_task_per_component": all(v <= 2 for v in tasks.values()),
    }
    return {"nodes": opts.nodes, "controllers": opts.controllers, "poll_s": opts.poll, "lease_s": opts.lease,
            "failing_node": failing, "reason": record.reason, "per_controller": per,
            "nodes_touched": len(tasks), "checks": checks, "ok": all(checks.values())}


if __name__ == "__main__":
    sys.exit(main())
