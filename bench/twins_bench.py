#!/usr/bin/env python3
"""Node twins figures: `up` of 4 twins cold (empty rootfs cache) and warm, host memory per twin,
boot time of 16 twins. Needs root. Prints a table; every lab it starts is torn down.

    python bench/twins_bench.py [--skip-cold] [--boot-nodes 16] [--personality on|off]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from provision.lab import twins  # noqa: E402
from provision.lab.twins import cgroup, hooks, ssh  # noqa: E402
from provision.lab.twins.models import TwinInfo, TwinRequest  # noqa: E402
from provision.spec import NodeSpec, load_fleet  # noqa: E402

PROFILE = "ml_prod_v4"


def spec_for(profile: str) -> NodeSpec:
    fleet = load_fleet(ROOT / "inventory" / "hosts.yml")
    return next(h.spec for h in fleet.hosts.values() if h.profile == profile)


def requests(n: int) -> list[TwinRequest]:
    return [TwinRequest(name=f"node{i:02d}", index=i, profile=PROFILE) for i in range(1, n + 1)]


def timed(fn: Callable[[], object]) -> float:
    start = time.monotonic()
    fn()
    return time.monotonic() - start


def pss_kib(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in text.splitlines() if line.startswith("Pss:")), 0)


def twin_memory_mib(lab_dir: Path) -> list[float]:
    """PSS of every process of each twin (supervisor, nspawn, the container's systemd and services)."""
    import json

    state = json.loads((lab_dir / "twins" / "state.json").read_text())
    out = []
    for twin in state["twins"]:
        group = cgroup.path_for(f"pl-node{twin['slot']:02d}")
        pids = cgroup.pids(group) if group else []
        out.append(sum(pss_kib(p) for p in pids) / 1024)
    return out


def run_up(lab_dir: Path, n: int) -> tuple[float, list[TwinInfo]]:
    infos: list[TwinInfo] = []
    try:
        elapsed = timed(lambda: infos.extend(twins.up(lab_dir, requests(n), spec_for)))
    except BaseException:
        twins.down(lab_dir)
        raise
    return elapsed, infos


def settle(infos: list[TwinInfo]) -> None:
    import subprocess

    for i in infos:
        subprocess.run([*ssh.client_argv(i.key_file, i.known_hosts, i.address), "systemctl is-system-running --wait"],
                       capture_output=True, timeout=120, check=False)


def bench_up4(work: Path, cold: bool) -> dict[str, str]:
    rows: dict[str, str] = {}
    if cold:
        cache = work / "cache"
        os.environ["PROVISION_LAB_CACHE"] = str(cache)
        t_cold, _ = run_up(work / "lab-cold", 4)
        t_down = timed(lambda: twins.down(work / "lab-cold"))
        rows["up --nodes 4, cold (debootstrap into an empty cache)"] = f"{t_cold:.1f} s"
        rows["down --nodes 4"] = f"{t_down:.1f} s"
    warm = []
    for k in range(3):
        t, infos = run_up(work / f"lab-warm{k}", 4)
        warm.append(t)
        if k == 0:
            settle(infos)
            mem = twin_memory_mib(work / "lab-warm0")
            rows["host memory per twin (PSS, all its processes)"] = (
                f"{statistics.mean(mem):.0f} MiB (min {min(mem):.0f}, max {max(mem):.0f})"
            )
        twins.down(work / f"lab-warm{k}")
    rows["up --nodes 4, warm (median of 3)"] = f"{statistics.median(warm):.1f} s ({', '.join(f'{t:.1f}' for t in warm)})"
    return rows


def bench_boot(work: Path, n: int) -> dict[str, str]:
    lab_dir = work / "lab-boot"
    t_up, infos = run_up(lab_dir, n)
    try:
        names = [i.name for i in infos]
        t_off = timed(lambda: [twins.power(lab_dir, name, on=False) for name in names])

        def boot_all() -> None:
            for name in names:
                twins.power(lab_dir, name, on=True)
            for i in infos:
                ssh.wait_ssh(i.key_file, i.known_hosts, i.address, timeout=300)

        t_boot = timed(boot_all)
    finally:
        twins.down(lab_dir)
    return {
        f"up --nodes {n}, warm (prepare + boot + ssh ready)": f"{t_up:.1f} s",
        f"boot of {n} twins (power on all -> ssh answers on all)": f"{t_boot:.1f} s",
        f"power off {n} twins (clean shutdown, sequential)": f"{t_off:.1f} s",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-cold", action="store_true", help="do not rebuild the rootfs in a temp cache")
    parser.add_argument("--boot-nodes", type=int, default=16)
    parser.add_argument("--personality", choices=["on", "off"], default="on")
    args = parser.parse_args()
    if args.personality == "off":
        os.environ[hooks.SWITCH_ENV] = "off"
    if os.geteuid() != 0:
        print("twins_bench: needs root", file=sys.stderr)
        return 2
    rows: dict[str, str] = {}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="twins-bench-") as tmp:
        work = Path(tmp)
        rows.update(bench_up4(work, cold=not args.skip_cold))
        rows.update(bench_boot(work, args.boot_nodes))
    width = max(len(k) for k in rows)
    load = f"load average {load_before:.1f} at start, {os.getloadavg()[0]:.1f} at end"
    print(f"\nnode twins ({os.cpu_count()} CPUs, {load}, personality {args.personality})")
    print(f"| {'measure'.ljust(width)} | value |")
    print(f"|{'-' * (width + 2)}|-------|")
    for key, value in rows.items():
        print(f"| {key.ljust(width)} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
