"""Start time and memory of the BMC simulator serving a whole capture as captured.

    python bench/bmcsim_as_captured.py [--tree tests/fixtures/redfish/full/lenovo] [--nodes 1] [--repeat 3]

Prints one JSON object: the capture's files, the in-process load (capture.load) and seed build times,
`lab up --bmc-only --as-captured` wall time (checks, CA, spawn, both loads, every BMC answering), the
simulator's RSS after start and after one full walk of every URI it serves (GET over HTTP, basic auth),
and the walk's requests and seconds. Writes it to bench/results/bmcsim_as_captured.json too.
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from provision.lab import manager
from provision.lab.bmcsim import capture
from provision.lab.bmcsim.config import Parts
from provision.lab.bmcsim.seed import build
from provision.lab.state import LabState

REPO = Path(__file__).resolve().parents[1]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def walk(lab: Path, state: LabState, uris: list[str]) -> tuple[int, float]:
    hv = yaml.safe_load((lab / "inventory" / "host_vars" / f"{state.nodes[0].name}.yml").read_text())
    auth = base64.b64encode(f"{hv['provision_bmc_username']}:{hv['provision_bmc_password']}".encode()).decode()
    base = hv["provision_lab_bmc_http_address"]
    ok, t0 = 0, time.perf_counter()
    for uri in uris:
        req = urllib.request.Request(base + urllib.request.quote(uri, safe="/$?=&"),
                                     headers={"Authorization": f"Basic {auth}"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                resp.read()
                ok += 1
        except urllib.error.HTTPError:
            ok += 1  # a captured error status, served as captured
    return ok, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", type=Path, default=REPO / "tests" / "fixtures" / "redfish" / "full" / "lenovo")
    ap.add_argument("--nodes", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    files = sum(1 for p in args.tree.rglob("*") if p.is_file())
    loads, builds, ups, rss, rss_walk = [], [], [], [], []
    walked: tuple[int, float] = (0, 0.0)
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        cap = capture.load(args.tree)
        loads.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        build(args.tree, as_captured=True, parts=Parts())
        builds.append(time.perf_counter() - t0)
        with tempfile.TemporaryDirectory() as tmp:
            lab = Path(tmp) / "lab"
            t0 = time.perf_counter()
            state = manager.up(manager.UpOptions(lab_dir=lab, nodes=args.nodes, bmc_tree=args.tree,
                                                 as_captured=True, bmc_only=True, source_inventory=REPO /
                                                 "inventory" / "hosts.yml"))
            try:
                ups.append(time.perf_counter() - t0)
                rss.append(rss_kib(state.pid))
                walked = walk(lab, state, sorted({*cap.resources, *cap.raw}))
                rss_walk.append(rss_kib(state.pid))
            finally:
                manager.down(lab)
    out: dict[str, Any] = {
        "tree": str(args.tree.relative_to(REPO) if args.tree.is_relative_to(REPO) else args.tree),
        "files": files, "resources": len(cap.resources), "raw": len(cap.raw), "warnings": len(cap.warnings),
        "nodes": args.nodes, "repeat": args.repeat,
        "load_s_median": round(statistics.median(loads), 3), "seed_build_s_median": round(statistics.median(builds), 3),
        "lab_up_s_median": round(statistics.median(ups), 3),
        "sim_rss_mib_after_start": round(statistics.median(rss) / 1024, 1),
        "sim_rss_mib_after_walk": round(statistics.median(rss_walk) / 1024, 1),
        "walk_requests": walked[0], "walk_s": round(walked[1], 2),
    }
    print(json.dumps(out, indent=1))
    results = REPO / "bench" / "results"
    results.mkdir(exist_ok=True)
    (results / "bmcsim_as_captured.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
