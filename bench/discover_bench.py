"""Discovery over loopback: `provision discover` of 1,024 addresses (127.0.8.0-127.0.11.255) of which 256
answer (the whole Supermicro, HPE, Lenovo and GH200 captures in turn, HTTPS verified against a throwaway CA,
served by tests/unit/redfish/rf_fakebmc.py in a second process so the two do not share one GIL).

    python bench/discover_bench.py [--answering 256] [--concurrency 64]

Prints one JSON object: addresses asked, BMCs found and identified, seconds (the command, in process, from
argv to its output), and the goal (<= 30 s). Only 127.0.0.0/8 is ever asked.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.unit.redfish.full_captures import full_tree  # noqa: E402
from tests.unit.redfish.rf_fakebmc import FakeBmc, Served, make_cert  # noqa: E402

FIRST = ipaddress.ip_address("127.0.8.0")
ADDRESSES = 1024
CAPTURES = ("supermicro", "hpe", "lenovo", "nvidia_gh200")
PASSWORD = "bench-Pa55-discover"


def answering(n: int) -> list[str]:
    """`n` addresses spread over the 1,024 (every 4th with n=256)."""
    step = ADDRESSES // n
    return [str(FIRST + i * step + 1) for i in range(n)]


def serve(ips: list[str], port: int, cert: Path, key: Path) -> None:
    """The server process: one FakeBmc per address, until stdin closes."""
    trees = {name: full_tree(name) for name in CAPTURES}
    servers = []
    for i, ip in enumerate(ips):
        bmc = FakeBmc(tree=trees[CAPTURES[i % len(CAPTURES)]], password=PASSWORD)
        srv = Served(bmc, tls=(cert, key), host=ip, port=port)
        srv.__enter__()
        servers.append(srv)
    print("ready", flush=True)
    sys.stdin.read()
    os._exit(0)  # the daemon threads of every server end with the process


def free_port(ip: str) -> int:
    with socket.socket() as s:
        s.bind((ip, 0))
        return int(s.getsockname()[1])


def run(n: int, concurrency: int) -> dict[str, Any]:
    from provision.cli import main

    ips = answering(n)
    work = Path(tempfile.mkdtemp(prefix="discover-bench-"))
    ca, cert, key = make_cert(work, ips=tuple(ips))
    port = free_port(ips[0])
    child = subprocess.Popen([sys.executable, __file__, "--serve", str(port), str(cert), str(key), str(n)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        targets = ",".join(str(FIRST + i) for i in range(ADDRESSES))
        os.environ.update({"PROVISION_BMC_USERNAME": "admin", "PROVISION_BMC_PASSWORD": PASSWORD})
        out = (work / "out.json").open("w+", encoding="utf-8")  # a real file: Ansible reconfigures stdout
        t0 = time.monotonic()
        with contextlib.redirect_stdout(out):
            rc = main(["-q", "discover", "-r", targets, "--port", str(port), "--max", str(ADDRESSES),
                       "-i", str(ROOT / "inventory" / "hosts.yml"), "--ca-file", str(ca),
                       "--concurrency", str(concurrency), "--json"])
        seconds = time.monotonic() - t0
    finally:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=60)
    out.seek(0)
    found = json.loads(out.read())["found"]
    identified = [r for r in found if r["outcome"] == "identified"]
    return {"addresses": ADDRESSES, "answering": n, "found": len(found), "identified": len(identified),
            "exact": sorted(r["address"] for r in found) == sorted(f"https://{ip}:{port}" for ip in ips),
            "exit": rc, "concurrency": concurrency, "seconds": round(seconds, 2), "goal_s": 30,
            "cpus": os.cpu_count()}


def main_() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        port, cert, key, n = int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5])
        serve(answering(n), port, cert, key)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answering", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=256)
    args = ap.parse_args()
    print(json.dumps(run(args.answering, args.concurrency)))


if __name__ == "__main__":
    main_()
