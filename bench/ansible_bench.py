"""Time site.yml on node twins: first and second (idempotent) run, Ansible defaults vs tuned vs mitogen.

    sudo .venv/bin/python bench/ansible_bench.py [--nodes 1 4] [--variants defaults tuned mitogen]

Each (node count, variant) gets factory-fresh twins, so every first run does the same work. Variants:
  defaults  Ansible's own settings (no ansible.cfg of ours: no pipelining, forks 5, linear strategy)
  tuned     the project's ansible.cfg (pipelining, ControlPersist, forks 8), linear strategy
  mitogen   the project's ansible.cfg with the mitogen_linear strategy (provision[fast])
Prints a table and writes bench/results/ansible_bench.json. Needs root (twins).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from provision.ansible import RunOptions, run_playbook
from provision.lab import twins
from provision.lab.inventory import write_twin_inventory
from provision.lab.twins.models import TwinRequest
from provision.lab.twins.state import twins_dir
from provision.spec import load_fleet

ROOT = Path(__file__).resolve().parents[1]
PROFILE = "ml_prod_v4"
DEFAULTS_CFG = "[defaults]\n# Ansible's defaults: only where the roles live.\nroles_path = {roles}\n"


def _variant(name: str, scratch: Path) -> tuple[dict[str, Any], Path | None]:
    """(RunOptions fields, ansible.cfg override) of one variant."""
    if name == "defaults":
        cfg = scratch / "defaults.cfg"
        cfg.write_text(DEFAULTS_CFG.format(roles=ROOT / "roles"))
        return {"forks": 5, "strategy": "linear"}, cfg
    if name == "tuned":
        return {"forks": 8, "strategy": "linear"}, None
    if name == "mitogen":
        return {"forks": 8, "strategy": "mitogen"}, None
    raise SystemExit(f"unknown variant {name!r}")


def _timed(options: RunOptions, config: Path | None) -> tuple[float, int]:
    start = time.monotonic()
    result = run_playbook(options, config=config)
    return time.monotonic() - start, result.changed_total


def measure(nodes: int, variant: str, scratch: Path) -> dict[str, Any]:
    lab = scratch / f"lab-{nodes}-{variant}"
    fleet = load_fleet(ROOT / "inventory" / "hosts.yml")
    requests = [TwinRequest(name=f"node{i:02d}", index=i, profile=PROFILE) for i in range(1, nodes + 1)]
    fields, config = _variant(variant, scratch)
    try:
        infos = twins.up(lab, requests, lambda profile: fleet.profiles[profile])
        inv = write_twin_inventory(lab / "inventory", PROFILE, ROOT / "inventory" / "group_vars", infos,
                                   twins_dir(lab))
        options = RunOptions(inventory=inv, **fields)
        first_s, first_changed = _timed(options, config)
        second_s, second_changed = _timed(options, config)
    finally:
        twins.down(lab)
    return {"nodes": nodes, "variant": variant, "first_s": round(first_s, 1), "second_s": round(second_s, 1),
            "first_changed": first_changed, "second_changed": second_changed}


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--variants", nargs="+", default=["defaults", "tuned", "mitogen"])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "ansible_bench.json")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="provision-ansible-bench-") as tmp:
        for nodes in args.nodes:
            for variant in args.variants:
                row = measure(nodes, variant, Path(tmp)) | {"loadavg_1m_after": _load()}
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(f"\n{'nodes':>5} {'variant':<9} {'first s':>8} {'second s':>9} {'changed 1st/2nd':>16} {'2nd vs defaults':>16}")
    for row in rows:
        base = next((r for r in rows if r["nodes"] == row["nodes"] and r["variant"] == "defaults"), None)
        ratio = f"{base['second_s'] / row['second_s']:.2f}x" if base else "-"
        print(f"{row['nodes']:>5} {row['variant']:<9} {row['first_s']:>8} {row['second_s']:>9} "
              f"{str(row['first_changed']) + '/' + str(row['second_changed']):>16} {ratio:>16}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
