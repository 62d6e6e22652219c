"""Wall time of a lab bring-up of 1 and of N nodes, split by stage, plus the orchestrator's own CPU and memory.

    python bench/bringup_bench.py [--nodes 1 4] [--speed 60] [--recheck]

Each size gets a fresh lab (simulated BMCs + node twins) and a fresh journal; the bring-up runs in this
process (as `provision bringup` does), so getrusage(SELF) is the orchestrator, getrusage(CHILDREN) is
Ansible and ssh. Prints a table; nothing is asserted. Root needed (the lab's twins).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

from provision.bringup.engine import run_bringup
from provision.bringup.model import STAGES, BringupResult
from provision.bringup.options import BringupOptions
from provision.bringup.stages import default_stages
from provision.journal import Journal
from provision.journal.configured import configured
from provision.lab import manager
from provision.spec import load_fleet

ROOT = Path(__file__).resolve().parents[1]


def one_size(nodes: int, speed: float, recheck: bool = False) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="bench-bringup-") as tmp:
        lab_dir = Path(tmp) / "lab"
        t0 = time.monotonic()
        state = manager.up(manager.UpOptions(lab_dir=lab_dir, nodes=nodes, speed=speed,
                                             source_inventory=ROOT / "inventory" / "hosts.yml"))
        lab_up = time.monotonic() - t0
        try:
            hosts = list(load_fleet(state.inventory).hosts.values())
            opts = BringupOptions(inventory=state.inventory, poll_s=0.2)
            self0, kids0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
            with Journal(Path(tmp) / "j.db") as journal:
                t1 = time.monotonic()
                result = run_bringup(hosts, default_stages(opts), journal=journal, concurrency=nodes)
                wall = time.monotonic() - t1
                t2 = time.monotonic()
                again = run_bringup(hosts, default_stages(opts), journal=journal, concurrency=nodes)
                rerun = time.monotonic() - t2
                records = [configured(journal, h.name) for h in hosts]
                t3 = time.monotonic()
                checked = run_bringup(hosts, default_stages(opts.model_copy(update={"recheck": True})),
                                      journal=journal, concurrency=nodes) if recheck else None
                recheck_s = time.monotonic() - t3
            self1, kids1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        finally:
            manager.down(lab_dir)
    per_stage = _per_stage(result)
    rerun_stage = _per_stage(again)
    return {
        "nodes": nodes, "ok": result.ok, "rerun_ok": again.ok,
        "rerun_changed": any(n.changed for n in again.nodes), "lab_up_s": round(lab_up, 1),
        "wall_s": round(wall, 1), "rerun_s": round(rerun, 1), "per_stage_median_s": per_stage,
        "rerun_per_stage_median_s": rerun_stage,
        "orchestrator_cpu_s": round((self1.ru_utime + self1.ru_stime) - (self0.ru_utime + self0.ru_stime), 1),
        "children_cpu_s": round((kids1.ru_utime + kids1.ru_stime) - (kids0.ru_utime + kids0.ru_stime), 1),
        "orchestrator_peak_rss_mib": round(self1.ru_maxrss / 1024, 1),
        "failed": [f"{n.node}@{n.failed_stage}" for n in result.nodes if not n.ok],
        "record": sorted({f"{len(r.manifest['file'])} files, {len(r.manifest['service'])} services"
                          if r else "none" for r in records}),
        "recheck": (f"{recheck_s:.1f} s, changed {any(n.changed for n in checked.nodes)}, configure "
                    f"{_per_stage(checked)['configure']} s") if checked else "not run",
        "rerun_configure": sorted({st.plan.note for n in again.nodes for st in n.stages if st.stage == "configure"}),
    }


def _per_stage(result: BringupResult) -> dict[str, float]:
    return {s: statistics.median([st.seconds for n in result.nodes for st in n.stages if st.stage == s] or [0])
            for s in STAGES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--speed", type=float, default=60.0)
    parser.add_argument("--recheck", action="store_true", help="time a third run with --recheck (check mode)")
    args = parser.parse_args()
    rows = [one_size(n, args.speed, args.recheck) for n in args.nodes]
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in __import__('os').getloadavg())}")
    head = ["nodes", "ok", "lab up s", "bring-up s", *STAGES, "rerun s", "rerun changed", "orch CPU s",
            "ansible+ssh CPU s", "orch peak RSS MiB"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        stages = r["per_stage_median_s"]
        assert isinstance(stages, dict)
        cells = [r["nodes"], r["ok"], r["lab_up_s"], r["wall_s"], *(stages[s] for s in STAGES), r["rerun_s"],
                 r["rerun_changed"], r["orchestrator_cpu_s"], r["children_cpu_s"], r["orchestrator_peak_rss_mib"]]
        print("| " + " | ".join(str(c) for c in cells) + " |")
        rerun = r["rerun_per_stage_median_s"]
        assert isinstance(rerun, dict)
        print("  rerun by stage (median s): " + ", ".join(f"{s} {rerun[s]}" for s in STAGES))
        print(f"  rerun configure: {r['rerun_configure']}; journal record: {r['record']}")
        print(f"  re-run with --recheck (check mode): {r['recheck']}")
        if r["failed"]:
            print(f"  failed: {r['failed']}")


if __name__ == "__main__":
    main()
