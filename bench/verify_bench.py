"""Benchmark `provision verify --level full` against lab twins, and naive testinfra in the same run.

    python bench/verify_bench.py [--nodes 16] [--repeat 3] [--naive-nodes 1] [--keep-lab DIR] [--out FILE]

Brings up a lab (simulated BMCs + N node twins), converges the twins minimally (tests/lab/verify_lab.py),
then measures, median of --repeat runs after a first run (the first run after converging is shown on its
own: the twins' stand-in tools render their outputs then, and serve them until the twin's state changes):
  - one-round-trip verify of node01, fresh SSH connection and over an established ControlMaster;
  - one-round-trip verify of all N twins in parallel (fresh connections);
  - N fresh SSH connections in parallel running an empty script (the floor of the fleet figure);
  - the same two verifies with `KexAlgorithms=curve25519-sha256` in the SSH common args (opt-in through
    `ansible_ssh_common_args`; the OpenSSH 9.2 default sntrup761 hybrid costs ~0.1 s CPU per connection);
  - the same checks through plain pytest-testinfra as shipped (`ssh://` backend, one ssh per command,
    no ControlPath: no multiplexing) on --naive-nodes twins, and with ControlPath set for reference;
  - `--level burnin` over --burnin-nodes twins (the burn-in stand-ins installed first): the cost of the
    orchestration around the measurements (gather, the node-local phase one probe at a time, IB pairs, mpirun),
    the stand-ins answering at once; a real burn-in takes as long as its tools run (DCGM -r 3, fio 2 x 30 s, ...).
BMC-side checks are left out (they go over Redfish, not SSH). Needs root (twins). Prints a table and
writes the rows, with the load average, to --out (bench/results/verify_bench.json).

The CPU column is the CPU time the measured run used on this machine, both ends: this process and its
ssh clients (os.times) plus the twins' cgroups (cpu.stat). Other work on a shared machine inflates the
wall figures but not this one; on an idle machine a run needs at least CPU / cores seconds of wall.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from provision.conformance.facts import close_master, control_dir  # noqa: E402
from provision.conformance.model import Level, RunReport  # noqa: E402
from provision.conformance.node import verify  # noqa: E402
from provision.lab.twins import cgroup as twin_cgroup  # noqa: E402
from provision.lab.twins.models import TwinInfo  # noqa: E402
from provision.spec import load_fleet  # noqa: E402
from provision.spec.fleet import HostEntry  # noqa: E402
from tests.lab.verify_lab import converge, project_spec, ssh, verify_lab  # noqa: E402

BURNIN_PACKAGES = "nccl-tests fio perftest openmpi-bin"


def _close(hosts: list[HostEntry]) -> None:
    for h in hosts:
        if h.ssh is not None:
            close_master(h.ssh)


class CpuMeter:
    """CPU seconds used by this process, its waited-for children (ssh clients) and the twins' cgroups."""

    def __init__(self, infos: dict[str, TwinInfo]) -> None:
        root = twin_cgroup.v2_root()
        slots = [int(i.address.split(".")[2]) for i in infos.values()]
        self.stats = [root / twin_cgroup.LAB_GROUP / f"pl-node{n:02d}" / "cpu.stat" for n in slots] if root else []

    def read(self) -> float:
        t = os.times()
        twins = 0
        for stat in self.stats:
            with contextlib.suppress(OSError, IndexError, ValueError):
                twins += int(stat.read_text().split()[1])  # usage_usec
        return t.user + t.system + t.children_user + t.children_system + twins / 1e6


METER: CpuMeter | None = None
LAST_CPU: dict[str, float] = {}


def timed_verify(hosts: list[HostEntry], fresh: bool) -> tuple[float, RunReport]:
    if fresh:
        _close(hosts)
    c0 = METER.read() if METER else 0.0
    t0 = time.monotonic()
    report = verify(hosts, Level.FULL)
    elapsed = time.monotonic() - t0
    LAST_CPU["verify"] = (METER.read() - c0) if METER else float("nan")
    return elapsed, report


def fast_kex(hosts: list[HostEntry]) -> list[HostEntry]:
    """The hosts with `-o KexAlgorithms=curve25519-sha256` added to their SSH common args."""
    out = []
    for h in hosts:
        assert h.ssh is not None
        args = f"{h.ssh.common_args} -o KexAlgorithms=curve25519-sha256".strip()
        out.append(h.model_copy(update={"ssh": h.ssh.model_copy(update={"common_args": args})}))
    return out


def timed_connects(hosts: list[HostEntry]) -> float:
    """Fresh connections to every host in parallel, each running an empty script."""
    from provision.conformance.facts import ssh_runner

    _close(hosts)
    runners = [(h.name, ssh_runner(h.ssh)) for h in hosts if h.ssh is not None]
    c0 = METER.read() if METER else 0.0
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=len(runners)) as pool:
        list(pool.map(lambda nr: nr[1](nr[0], "true\n"), runners))
    elapsed = time.monotonic() - t0
    LAST_CPU["verify"] = (METER.read() - c0) if METER else float("nan")
    return elapsed


def series(hosts: list[HostEntry], fresh: bool, repeat: int) -> tuple[float, float, RunReport]:
    """(first run, median of the next `repeat` runs, last report); LAST_CPU: first and median CPU s."""
    first, report = timed_verify(hosts, fresh)
    LAST_CPU["first"] = LAST_CPU["verify"]
    rest, cpu = [], []
    for _ in range(repeat):
        t, report = timed_verify(hosts, fresh)
        rest.append(t)
        cpu.append(LAST_CPU["verify"])
    LAST_CPU["median"] = median(cpu)
    return first, median(rest), report


def decomposition(host: HostEntry, report: RunReport) -> list[tuple[str, float, str]]:
    """Where the time of one node goes: SSH round trip, each probe on the node, local evaluation."""
    from provision.conformance.facts import gather, ssh_runner
    from provision.conformance.runner import evaluate, node_probes

    assert host.ssh is not None
    probes = node_probes(host.spec, Level.FULL)
    runner = ssh_runner(host.ssh)
    close_master(host.ssh)
    t0 = time.monotonic()
    runner(host.name, "true\n")
    connect = time.monotonic() - t0
    t0 = time.monotonic()
    runner(host.name, "true\n")
    trip = time.monotonic() - t0
    timing = "export LC_ALL=C\n" + "".join(
        f"s=$(date +%s%N); ( {p.command if p.each is None else f'for m in {p.each}; do set -- $m; {p.command}; done'}"
        f" ) >/dev/null 2>&1; e=$(date +%s%N); echo \"$(( (e-s)/1000000 )) {p.name}\"\n" for p in probes)
    lines = runner(host.name, timing).decode().split("\n")
    per_probe = sorted(((int(x.split()[0]), x.split()[1]) for x in lines if x.strip()), reverse=True)
    facts = gather(host.name, probes, runner)
    t0 = time.monotonic()
    for _ in range(10):
        evaluate(host.name, host.spec, facts, Level.FULL)
    local = (time.monotonic() - t0) / 10
    serial = sum(ms for ms, _ in per_probe) / 1000
    top = ", ".join(f"{name} {ms} ms" for ms, name in per_probe[:6])
    return [
        ("ssh: new connection + empty script", connect, ""),
        ("ssh: round trip over the ControlMaster", trip, ""),
        (f"on node: {len(probes)} probes one after another", serial, f"slowest: {top}"),
        ("local: parse + evaluate every check", local, f"{len(report.nodes[0].results)} checks"),
    ]


def burnin_row(hosts: list[HostEntry], infos: dict[str, TwinInfo]) -> tuple[str, float, float, str]:
    """One `--level burnin` run over `hosts` after installing the burn-in stand-ins on them."""
    for h in hosts:
        ssh(infos[h.name], f"DEBIAN_FRONTEND=noninteractive apt-get -y -qq install {BURNIN_PACKAGES} >/dev/null")
    _close(hosts)
    c0 = METER.read() if METER else 0.0
    t0 = time.monotonic()
    report = verify(hosts, Level.BURNIN)
    elapsed = time.monotonic() - t0
    cpu = (METER.read() - c0) if METER else float("nan")
    burnin = [r for n in report.nodes for r in n.results if r.area == "burnin"]
    bad = sum(1 for r in burnin if not r.accepted)
    return (f"verify --level burnin, {len(hosts)} nodes (stand-ins, orchestration only)", elapsed, cpu,
            f"{len(burnin)} burn-in checks, {bad} failed or could not be made")


def ssh_config(path: Path, infos: dict[str, TwinInfo], multiplex: bool) -> Path:
    lines = []
    for name, info in infos.items():
        lines += [f"Host {name}", f"  HostName {info.address}", f"  User {info.user}", f"  Port {info.port}",
                  f"  IdentityFile {info.key_file}", "  IdentitiesOnly yes", f"  UserKnownHostsFile {info.known_hosts}",
                  "  StrictHostKeyChecking yes", "  BatchMode yes"]
        if multiplex:
            lines += ["  ControlMaster auto", f"  ControlPath {control_dir()}/ti-%C", "  ControlPersist 60s"]
    path.write_text("\n".join(lines) + "\n")
    return path


def timed_testinfra(names: list[str], inventory: Path, config: Path) -> tuple[float, str]:
    hosts = ",".join(f"ssh://{n}" for n in names)
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "tests" / "testinfra"),
            f"--hosts={hosts}", f"--ssh-config={config}", f"--spec-inventory={inventory}"]
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=3600, check=False)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-200:]
    return time.monotonic() - t0, summary


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def run(args: argparse.Namespace, base: Path) -> None:
    with verify_lab(base, args.nodes) as (inventory, _twin_dir, infos):
        spec = project_spec()
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda i: converge(i, spec), infos.values()))
        print(f"lab: {args.nodes} twins up and converged ({time.monotonic() - t0:.1f} s converge)", flush=True)
        time.sleep(args.settle)  # let the reboots' services settle before measuring
        load_start = os.getloadavg()
        fleet = load_fleet(inventory)
        all_hosts = fleet.select(sorted(infos))
        one = fleet.select(["node01"])
        global METER
        METER = CpuMeter(infos)
        nan = float("nan")
        rows: list[tuple[str, float, float, str]] = []
        first1, one_fresh, rep1 = series(one, True, args.repeat)
        cpu1 = dict(LAST_CPU)
        node = rep1.nodes[0]
        checks = (f"{len(node.results)} checks ({len(node.failed)} failed, {len(node.errors)} could not be made, "
                  f"{len(node.waived)} waived)")
        rows.append(("verify, 1 node, fresh connection, first run (stand-ins render)", first1, cpu1["first"], checks))
        rows.append(("verify, 1 node, fresh connection", one_fresh, cpu1["median"], checks))
        _first_w, one_warm, _ = series(one, False, args.repeat)
        rows.append(("verify, 1 node, established ControlMaster", one_warm, LAST_CPU["median"],
                     f"gather {node.gather_seconds:.2f} s"))
        first_n, all_fresh, rep_n = series(all_hosts, True, args.repeat)
        failed = sum(len(n.failed) for n in rep_n.nodes)
        fleet_checks = f"{sum(len(n.results) for n in rep_n.nodes)} checks, {failed} failed"
        rows.append((f"verify, {args.nodes} nodes in parallel, fresh, first run", first_n, LAST_CPU["first"],
                     fleet_checks))
        rows.append((f"verify, {args.nodes} nodes in parallel, fresh", all_fresh, LAST_CPU["median"], fleet_checks))
        _f, all_warm, _r = series(all_hosts, False, args.repeat)
        rows.append((f"verify, {args.nodes} nodes in parallel, established ControlMasters", all_warm,
                     LAST_CPU["median"], ""))
        conn = []
        for _ in range(args.repeat):
            conn.append((timed_connects(all_hosts), LAST_CPU["verify"]))
        rows.append((f"{args.nodes} fresh ssh connections in parallel, empty script", median([w for w, _ in conn]),
                     median([c for _, c in conn]), ""))
        _f, kex1, _r = series(fast_kex(one), True, args.repeat)
        rows.append(("verify, 1 node, fresh, KexAlgorithms=curve25519-sha256 (opt-in)", kex1, LAST_CPU["median"], ""))
        _f, kex_n, rep_k = series(fast_kex(all_hosts), True, args.repeat)
        rows.append((f"verify, {args.nodes} nodes, fresh, KexAlgorithms=curve25519-sha256 (opt-in)", kex_n,
                     LAST_CPU["median"], f"{sum(len(n.failed) for n in rep_k.nodes)} failed"))
        rows += [(w, t, nan, n) for w, t, n in decomposition(one[0], rep1)]
        if args.burnin_nodes:
            rows.append(burnin_row(fleet.select(sorted(infos)[: args.burnin_nodes]), infos))
        _close(all_hosts)
        naive_names = sorted(infos)[: args.naive_nodes]
        plain = ssh_config(base / "ssh_config.plain", infos, multiplex=False)
        muxed = ssh_config(base / "ssh_config.mux", infos, multiplex=True)
        t_naive, s_naive = timed_testinfra(naive_names, inventory, plain)
        rows.append((f"testinfra as shipped (one ssh per command), {len(naive_names)} node(s)", t_naive, nan,
                     s_naive))
        t_mux, s_mux = timed_testinfra(naive_names, inventory, muxed)
        rows.append((f"testinfra with ControlPath, {len(naive_names)} node(s)", t_mux, nan, s_mux))
        print_table(rows, args, t_naive / len(naive_names), one_fresh, all_fresh)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps({
                "nodes": args.nodes, "repeat": args.repeat, "cpus": os.cpu_count(),
                "loadavg_start": [round(x, 2) for x in load_start],
                "loadavg_end": [round(x, 2) for x in os.getloadavg()],
                "rows": [{"what": w, "seconds": round(t, 3), "cpu_seconds": None if c != c else round(c, 3),
                          "notes": n} for w, t, c, n in rows],
            }, indent=1) + "\n")


def print_table(rows: list[tuple[str, float, float, str]], args: argparse.Namespace, naive_per_node: float,
                one: float, fleet: float) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"\n{'method':<{width}}  {'wall s':>8}  {'CPU s':>7}  notes")
    for name, seconds, cpu, note in rows:
        shown = "" if cpu != cpu else f"{cpu:7.2f}"
        print(f"{name:<{width}}  {seconds:8.2f}  {shown:>7}  {note}")
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (host has {os.cpu_count()} CPUs)")
    print(f"\nper node, 1 node fresh: {one:.2f} s (goal <= 0.35 s); {args.nodes} nodes: {fleet:.2f} s "
          f"(goal <= 2.5 s for 16); naive per node {naive_per_node:.1f} s -> {naive_per_node / one:.0f}x faster "
          "(goal >= 20x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--naive-nodes", type=int, default=1,
                        help="twins for the plain-testinfra rows (at least 1: the summary compares against them)")
    parser.add_argument("--burnin-nodes", type=int, default=2, help="twins for the --level burnin row (0: none)")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds to wait after converging")
    parser.add_argument("--keep-lab", type=Path, default=None, help="lab directory (default: a temp dir)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "verify_bench.json",
                        help="where to write the rows as JSON ('' for nowhere)")
    args = parser.parse_args()
    if args.naive_nodes < 1:
        parser.error("--naive-nodes: at least 1 (the summary line compares verify with plain testinfra)")
    args.out = args.out if str(args.out) else None
    if args.keep_lab:
        args.keep_lab.mkdir(parents=True, exist_ok=True)
        run(args, args.keep_lab)
    else:
        with tempfile.TemporaryDirectory(prefix="verify-bench-") as tmp:
            run(args, Path(tmp))


if __name__ == "__main__":
    main()
