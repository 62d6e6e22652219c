"""Scale of the BMC simulator: N BMCs in one process (`lab up --bmc-only`), each hit once; RSS per BMC.

    python bench/bmcsim_scale.py --nodes 1000 [--tree supermicro] [--concurrency 32]

Prints one JSON object: nodes, seconds to start, seconds to hit every BMC once (GET
Systems/1 over HTTPS, TLS verified with the lab CA, basic auth), the simulator's RSS before and
after, RSS per BMC (total / N) and the marginal cost per BMC (against a 1-node lab started the
same way). Writes it to bench/results/bmcsim_scale.json too.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import ssl
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from provision.lab import manager
from provision.lab.bmcsim.config import TREES_DIR
from provision.lab.state import LabState


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def hit_all(lab: Path, state: LabState, concurrency: int) -> int:
    ctx = ssl.create_default_context(cafile=str(lab / "ca.pem"))
    sem = asyncio.Semaphore(concurrency)
    ok = 0

    async def one(http: aiohttp.ClientSession, node: str) -> None:
        nonlocal ok
        hv = yaml.safe_load((lab / "inventory" / "host_vars" / f"{node}.yml").read_text())
        cred = f"{hv['provision_bmc_username']}:{hv['provision_bmc_password']}".encode()
        headers = {"Authorization": "Basic " + base64.b64encode(cred).decode()}
        async with sem, http.get(f"{hv['provision_bmc_address']}/redfish/v1/Systems/1", headers=headers,
                                 ssl=ctx) as resp:
            body = await resp.json()
            ok += resp.status == 200 and body.get("PowerState") is not None

    conn = aiohttp.TCPConnector(limit=concurrency, force_close=True)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=120)) as http:
        await asyncio.gather(*(one(http, n.name) for n in state.nodes))
    return ok


def measure(nodes: int, tree: str, concurrency: int) -> dict[str, Any]:
    lab = Path(tempfile.mkdtemp(prefix="bmcsim-scale-"))
    t0 = time.monotonic()
    state = manager.up(manager.UpOptions(lab_dir=lab, nodes=nodes, bmc_only=True, bmc_tree=TREES_DIR / tree))
    started = time.monotonic() - t0
    try:
        before = rss_kib(state.pid)
        t1 = time.monotonic()
        ok = asyncio.run(hit_all(lab, state, concurrency))
        hit = time.monotonic() - t1
        after = rss_kib(state.pid)
    finally:
        manager.down(lab)
    return {"nodes": nodes, "start_s": round(started, 2), "hit_s": round(hit, 2), "answered": ok,
            "rss_before_kib": before, "rss_after_kib": after}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--tree", default="supermicro")
    ap.add_argument("--concurrency", type=int, default=32)
    args = ap.parse_args()
    base = measure(1, args.tree, 1)
    big = measure(args.nodes, args.tree, args.concurrency)
    result = {
        "tree": args.tree, "baseline_1_node": base, "run": big,
        "rss_per_bmc_kib": round(big["rss_after_kib"] / args.nodes, 1),
        "marginal_per_bmc_kib": round((big["rss_after_kib"] - base["rss_after_kib"]) / max(args.nodes - 1, 1), 1),
    }
    out = Path(__file__).resolve().parent / "results"
    out.mkdir(exist_ok=True)
    (out / "bmcsim_scale.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
