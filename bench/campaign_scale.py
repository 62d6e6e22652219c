"""Scale benchmark of firmware campaigns: N simulated BMCs (one simulator process, `--bmc-only`),
a campaign of canary + batches run by the real CLI as a child process.

Measures: campaign wall time per wave against the ideal schedule (every node of a wave flashing
in parallel, each component taking exactly the simulated flash time, plus the BMC's own reboot
and one host power cycle), the controller's peak RSS and CPU time, and checks every BMC ends at
the baseline with one update task per component and one host reset.

    python bench/campaign_scale.py --nodes 1000 --speed 3 --components 2
    python bench/campaign_scale.py --nodes 1000 --journal postgresql            # a throwaway PostgreSQL
    python bench/campaign_scale.py --nodes 1000 --journal postgresql --controllers 3

With `--journal postgresql` the journal is a PostgreSQL cluster made for the run (tests/pgcluster.py:
initdb/pg_ctl in a temp directory); `--controllers N` starts N-1 `campaign join` controllers beside the one
that starts the campaign (figures per controller: wall time, peak RSS, CPU). `plan_and_startup_s` is the
starting controller's wall time outside the waves (inventory, the canary's plan, start-up, last gate; the
rest of the BMCs are read while the canary runs);
`overhead_with_startup_pct` its whole wall time over the ideal wave schedule, `first_wave_after_s` the seconds from
the command to the first wave's start.

Prints one JSON document. Needs a few minutes and ~1-2 GB of RAM for 1,000 BMCs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.campaign_phases import wave_phases  # noqa: E402
from provision.errors import LabError, ProvisionError  # noqa: E402
from provision.journal import Journal  # noqa: E402
from provision.journal.campaigns import CampaignStore  # noqa: E402
from provision.lab import manager  # noqa: E402
from provision.lab.bmcsim.config import Timings  # noqa: E402
from provision.lab.campaign_kit import SimLog, write_lab_campaign  # noqa: E402

CLI = (sys.executable, "-c", "from provision.cli import run; run()")


def ideal_node_seconds(components: int, speed: float) -> float:
    """One node's work in real seconds: each flash, the BMC reboot its own image causes, one power cycle."""
    t = Timings()
    reset = t.power_off + 0.5 + t.power_on
    return (components * t.flash + t.bmc_reboot + reset) / speed


class LoadSampler:
    """The 1-minute load average every 5 s while the controller runs (the CPU is shared)."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(5.0):
            self.samples.append(os.getloadavg()[0])

    def __enter__(self) -> LoadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, float]:
        s = self.samples or [os.getloadavg()[0]]
        return {"min": round(min(s), 1), "mean": round(sum(s) / len(s), 1), "max": round(max(s), 1)}


def run_controller(args: list[str], env: dict[str, str], profile: str | None = None,
                   pids: list[int] | None = None) -> dict[str, float | int]:
    """Run the CLI as a child; wall time, exit code, peak RSS (MiB) and CPU seconds from wait4.
    With `profile`, py-spy samples every thread of it into that file (figures then include py-spy)."""
    cmd = [*CLI, *args]
    if profile:
        spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        cmd = [spy, "record", "--gil", "-r", "50", "-f", "raw", "-o", profile, "--", *cmd]
    start, started_at = time.monotonic(), time.time()
    pid = os.posix_spawn(cmd[0], cmd, env)
    if pids is not None:
        pids.append(pid)
    _, status, usage = os.wait4(pid, 0)
    return {
        "rc": os.waitstatus_to_exitcode(status), "wall_s": round(time.monotonic() - start, 2),
        "peak_rss_mib": round(usage.ru_maxrss / 1024, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "started_at": round(started_at, 3),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--speed", type=float, default=3.0, help="simulated clock speed (flash 60 s / speed)")
    p.add_argument("--components", type=int, default=2, choices=(1, 2, 3))
    p.add_argument("--canary", default="1%")
    p.add_argument("--max-unavailable", default="25%")
    p.add_argument("--concurrency", type=int, default=256)
    p.add_argument("--poll", type=float, default=0.5, help="controller poll interval (s)")
    p.add_argument("--journal", choices=("sqlite", "postgresql"), default="sqlite")
    p.add_argument("--controllers", type=int, default=1, help="controllers (more than 1: postgresql only)")
    p.add_argument("--lease", type=float, default=60.0, help="node and leader lease seconds (postgresql)")
    p.add_argument("--kill", action="store_true",
                   help="kill -9 a controller that is not the leader mid-wave, then the leader (3 controllers)")
    p.add_argument("--keep", action="store_true", help="keep the work dir (and the lab up)")
    p.add_argument("--profile", metavar="FILE", help="sample the controller with py-spy (raw folded stacks)")
    opts = p.parse_args()
    if opts.controllers > 1 and opts.journal != "postgresql":
        p.error("--controllers above 1 needs --journal postgresql")
    if opts.kill and opts.controllers < 3:
        p.error("--kill needs --controllers 3 or more (two are killed)")
    with ExitStack() as stack:
        if opts.journal == "postgresql":
            from tests.pgcluster import cluster

            pg = stack.enter_context(cluster())
            os.environ["PROVISION_JOURNAL_URL"] = pg.url()
            os.environ["PROVISION_JOURNAL_PASSWORD"] = pg.password
        return bench(opts)


def bench(opts: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="h8-campaign-bench-"))
    t0 = time.monotonic()
    state = manager.up(manager.UpOptions(lab_dir=work / "lab", nodes=opts.nodes, bmc_only=True, speed=opts.speed,
                                         source_inventory=ROOT / "inventory" / "hosts.yml"))
    lab_up_s = time.monotonic() - t0
    try:
        policy = {"waves": {"canary": opts.canary, "max_unavailable": opts.max_unavailable},
                  "halt": {"max_failures": 0}, "concurrency": opts.concurrency}
        camp = write_lab_campaign(work / "campaign", "bench", policy, components=opts.components)
        env = {**os.environ, "PROVISION_STATE_DIR": str(work / "state")}
        load = os.getloadavg()[0]
        common = ["-i", str(state.inventory), "--json", "--poll-seconds", str(opts.poll)]
        if opts.journal == "postgresql":
            common += ["--lease-seconds", str(opts.lease)]
        joined: list[dict[str, float | int]] = []
        pids: list[int] = []
        killed: list[int] = []
        with LoadSampler() as sampler, ThreadPoolExecutor(opts.controllers) as pool:
            joins = [pool.submit(_join_soon, common, env, pids) for _ in range(opts.controllers - 1)]
            killer = pool.submit(_killer, pids, opts.controllers, killed) if opts.kill else None
            ctl = run_controller(["campaign", "start", str(camp), *common], env, opts.profile, pids)
            joined = [f.result() for f in joins]
            if killer is not None:
                killer.result()
        result = summarise(work, opts, ctl, lab_up_s)
        result["journal"] = opts.journal
        result["joined_controllers"] = joined
        rcs = [int(ctl["rc"]), *(int(j["rc"]) for j in joined)]
        result["killed"] = len(killed)
        if killed:  # the starting controller may be one of them: judge by the survivors and the simulator's log
            result["ok"] = all(result["checks"].values()) and result["state"] == "done"
        result["ok"] = result["ok"] and rcs.count(0) == len(rcs) - len(killed) and len(killed) == 2 * opts.kill
        result["loadavg_1m_before_after"] = [round(load, 1), round(os.getloadavg()[0], 1)]
        result["loadavg_1m_during"] = sampler.summary()
    finally:
        if not opts.keep:
            try:
                manager.down(work / "lab")
            except LabError as exc:  # report it, keep the figures
                print(f"lab down: {exc}", file=sys.stderr)
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


def _killer(pids: list[int], controllers: int, killed: list[int]) -> None:
    """kill -9 a controller that is not the leader while it has nodes of wave >= 1 in flight, then the leader
    while it has nodes of wave >= 2 in flight (read from the journal, as an operator would)."""
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline and len(killed) < 2:
        time.sleep(0.2)
        try:
            with Journal(read_only=True) as j:
                lead = j.query("SELECT owner FROM campaign_leases WHERE role = 'leader'")
                wave = j.query("SELECT MIN(wave) FROM campaign_waves WHERE state = 'active'")[0][0]
                active = {r[0]: int(r[1]) for r in j.query(
                    "SELECT controller, COUNT(*) FROM campaign_nodes WHERE state = 'active' GROUP BY controller")}
        except ProvisionError:
            continue  # not migrated yet
        if len(pids) < controllers or wave is None or not lead:
            continue
        leader = _pid_of(str(lead[0][0]))
        busy = {_pid_of(c): n for c, n in active.items() if c}
        for pid in list(pids):
            if pid in killed or busy.get(pid, 0) < 3:
                continue
            if (not killed and pid != leader and wave >= 1) or (killed and pid == leader and wave >= 2):
                os.kill(pid, 9)
                killed.append(pid)
                break


def _pid_of(owner: str) -> int:
    return int(owner.split(":")[-1].split("/")[0])


def wait_for_campaign(name: str, timeout_s: float = 600.0, every_s: float = 0.5) -> bool:
    """Whether the starting controller recorded campaign `name` in the journal within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with Journal(read_only=True) as j:
                if CampaignStore(j).find(name) is not None:
                    return True
        except ProvisionError:
            pass  # not migrated yet
        time.sleep(every_s)
    return False


def _join_soon(common: list[str], env: dict[str, str], pids: list[int]) -> dict[str, float | int]:
    """`campaign join bench` once the starting controller has recorded the campaign."""
    wait_for_campaign("bench")
    return run_controller(["campaign", "join", "bench", *common], env, pids=pids)


def summarise(work: Path, opts: argparse.Namespace, ctl: dict[str, float | int], lab_up_s: float) -> dict:
    with Journal(None if opts.journal == "postgresql" else work / "state" / "provision.db") as j:
        store = CampaignStore(j)
        record = store.get("bench")
        waves = store.waves("bench")
        nodes = store.nodes("bench")
    ideal_node = ideal_node_seconds(opts.components, opts.speed)
    rows, measured, ideal = [], 0.0, 0.0
    for w in waves:
        took = (w.ended_at or 0) - (w.started_at or 0)
        measured += took
        ideal += ideal_node
        rows.append({"wave": w.wave, "nodes": len(record.waves[w.wave]), "seconds": round(took, 2),
                     "ideal_s": round(ideal_node, 2), "overhead_pct": round(100 * (took / ideal_node - 1), 1)})
    span = max(w.ended_at or 0 for w in waves) - min(w.started_at or 0 for w in waves)
    log = SimLog(work / "lab" / "bmcsim.log")
    tasks, resets = log.update_tasks(), log.host_resets()
    names = [n.node for n in nodes]
    phases = wave_phases(waves, nodes, log, Timings().bmc_reboot / opts.speed) \
        if opts.components == 2 and record.state.value == "done" else []  # the phases assume bmc + bios
    checks = {
        "all_done": all(n.state.value == "done" for n in nodes),
        "one_task_per_component": all(tasks[n] == opts.components for n in names),
        "one_host_reset": all(resets[n] == 1 for n in names) if opts.components > 1 else True,
        "one_activation_per_firmware": set(log.flashes().values()) == {1},
        "max_unavailable_held": log.peak_unavailable() <= len(max(record.waves, key=len)),
    }
    return {
        "nodes": opts.nodes, "speed": opts.speed, "components": opts.components, "poll_s": opts.poll,
        "concurrency": opts.concurrency, "lab_up_s": round(lab_up_s, 1), "controller": ctl,
        "state": record.state.value, "waves": rows, "phases": phases,
        "campaign_waves_s": round(span, 2), "sum_of_waves_s": round(measured, 2), "ideal_s": round(ideal, 2),
        "overhead_pct": round(100 * (span / ideal - 1), 2),
        "plan_and_startup_s": round(float(ctl["wall_s"]) - span, 2),
        "overhead_with_startup_pct": round(100 * (float(ctl["wall_s"]) / ideal - 1), 2),
        "first_wave_after_s": round(min(w.started_at or 0 for w in waves) - float(ctl["started_at"]), 2),
        "checks": checks,
        "ok": ctl["rc"] == 0 and all(checks.values()),
    }


if __name__ == "__main__":
    sys.exit(main())
