"""Benchmark: a full inventory of one simulated node, three clients, one run.

Clients: this project (provision.redfish.ops.inventory.observe: $expand where advertised, bounded
parallel GETs otherwise), a naive crawl that follows every @odata.id, and sushy (pip-installed) walking
the same resources. Targets:
  lab     the project's BMC simulator (`provision lab up --bmc-only`, Supermicro tree, complete server),
          at 0 ms and at `--latency` ms per request (the simulator's latency fault);
  static  the captured Supermicro tree served as files by a loopback server that honours
          `$expand=.($levels=N)` as its service root advertises, with the same latency, and at most 4
          requests served at once (as real BMCs do).
  gh200   the whole NVIDIA GH200 capture (tests/fixtures/redfish/full/nvidia_gh200, 1315 resources) served
          WITHOUT `$expand` (ignored, whatever its root advertises), same latency, at most 4 at once; only
          this project's client (the issue's figure: a full inventory under 3 s at 20 ms per request).
Prints a table and writes JSON with --json. Usage:
  python bench/redfish_inventory.py [--runs 3] [--latency 20] [--targets lab,static,gh200] [--json out.json]
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import requests
from pydantic import SecretStr

from provision.redfish.connector import Connector, ConnectorOptions
from provision.redfish.ops.inventory import observe

ROOT = "/redfish/v1"
TREE = Path(__file__).resolve().parents[1] / "provision" / "lab" / "data" / "trees" / "supermicro"
GH200 = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "redfish" / "full" / "nvidia_gh200"


@dataclass
class Target:
    name: str
    address: str
    username: str
    password: str
    ca: str | bool
    set_latency: Callable[[float], None]


@dataclass
class Result:
    client: str
    target: str
    latency_ms: float
    requests: int
    seconds: float
    gpus: int | None = None


# ---- clients -----------------------------------------------------------------------------------
def ours(t: Target, expand: bool = True) -> tuple[int, int | None]:
    opts = ConnectorOptions(address=t.address, username=t.username, password=SecretStr(t.password),
                            ca_file=Path(t.ca) if isinstance(t.ca, str) else None,
                            verify_tls=t.ca is not False, use_expand=expand,
                            insecure_http=t.address.startswith("http://"))  # the loopback static capture
    conn = Connector(opts)
    conn.open()
    inv = observe(conn)
    conn.close()
    return conn.stats.requests, len(inv.gpus)


def naive(t: Target) -> tuple[int, int | None]:
    s = requests.Session()
    s.auth = (t.username, t.password)
    s.verify = t.ca
    seen: set[str] = set()
    todo: deque[str] = deque([ROOT])
    count = 0
    while todo:
        uri = todo.popleft()
        if uri in seen:
            continue
        seen.add(uri)
        count += 1
        r = s.get(t.address + uri, timeout=30, verify=t.ca)
        if r.status_code != 200:
            continue
        for link in _links(r.json()):
            if link not in seen and link.startswith(ROOT) and "/JsonSchemas" not in link:
                todo.append(link)
    return count, None


def _links(obj: Any) -> list[str]:
    out: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "@odata.id" and isinstance(v, str):
                out.append(v.split("#", 1)[0].rstrip("/"))
            else:
                out += _links(v)
    elif isinstance(obj, list):
        for v in obj:
            out += _links(v)
    return out


def sushy_client(t: Target) -> tuple[int, int | None]:
    import sushy
    from sushy import connector as sconn

    counter = {"n": 0}

    class Counting(sconn.Connector):  # type: ignore[misc]
        def _op(self, method: str, path: str = "", *args: Any, **kw: Any) -> Any:
            counter["n"] += 1
            return super()._op(method, path, *args, **kw)

    root = sushy.Sushy(t.address + ROOT, username=t.username, password=t.password, verify=t.ca,
                       connector=Counting(t.address, verify=t.ca))
    gpus = 0

    def each(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except Exception:  # sushy aborts on the first missing member; keep going like an operator would
            return None

    for system in root.get_system_collection().get_members():
        each(lambda s=system: [p.processor_type for p in s.processors.get_members()])
        each(lambda s=system: [m.capacity_mib for m in s.memory.get_members()])
        for st in each(lambda s=system: s.storage.get_members()) or []:
            each(lambda st=st: [d.capacity_bytes for d in st.drives])
        each(lambda s=system: s.simple_storage.get_members())
        each(lambda s=system: s.ethernet_interfaces.get_members())
        each(lambda s=system: s.bios.attributes)
    for ch in root.get_chassis_collection().get_members():
        each(lambda c=ch: c.thermal.temperatures)
        each(lambda c=ch: c.power.power_supplies)
        devs = each(lambda c=ch: _sushy_chassis_pcie(root, c)) or []  # sushy's Chassis has no pcie_devices
        gpus += sum(1 for d in devs if str(getattr(d, "identity", "")).startswith("GPU"))
        each(lambda c=ch: [a.network_ports.get_members() for a in c.network_adapters.get_members()])
    each(lambda: [f.version for f in root.get_update_service().firmware_inventory.get_members()])
    each(lambda: root.get_manager_collection().get_members())
    return counter["n"], gpus


def _sushy_chassis_pcie(root: Any, chassis: Any) -> list[Any]:
    from sushy.resources.system.pcie_device import PCIeDeviceCollection

    link = chassis.json.get("PCIeDevices", {}).get("@odata.id")
    if not link:
        return []
    coll = PCIeDeviceCollection(root._conn, link, redfish_version=root.redfish_version, registries=None,
                                root=root)
    return list(coll.get_members())


CLIENTS: dict[str, Callable[[Target], tuple[int, int | None]]] = {
    "provision": ours, "prov. no-exp": lambda t: ours(t, expand=False), "naive crawl": naive,
    "sushy": sushy_client}


# ---- targets -----------------------------------------------------------------------------------
def lab_target(workdir: Path) -> tuple[Target, Callable[[], None]]:
    from provision.lab import manager
    from provision.spec import load_fleet

    root = Path(__file__).resolve().parents[1]
    state = manager.up(manager.UpOptions(lab_dir=workdir / "lab", nodes=1, bmc_only=True,
                                         bmc_tree=Path("supermicro"), source_inventory=root / "inventory" / "hosts.yml"))
    bmc = load_fleet(state.inventory).hosts["node01"].bmc

    def latency(ms: float) -> None:
        manager.fault(workdir / "lab", "node01", "latency", clear=ms <= 0, value=ms if ms > 0 else None)

    target = Target("lab simulator", bmc.address.rstrip("/"), bmc.username, bmc.password.get_secret_value(),
                    str(bmc.ca_file), latency)
    return target, lambda: manager.down(workdir / "lab")


def static_target(root: Path = TREE, expand: bool = True) -> tuple[Target, Callable[[], None]]:
    tree = {}
    for f in root.rglob("index.json"):
        rel = f.parent.relative_to(root).as_posix()
        try:
            tree["/" + rel] = json.loads(f.read_text())
        except ValueError:  # served as a 404: a capture's odd file is no part of an inventory
            continue
    state = {"latency": 0.0}
    gate = threading.BoundedSemaphore(4)

    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *a: Any) -> None:
            pass

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with gate:
                time.sleep(state["latency"] / 1000)
            self._send(201, {"Id": "1"}, {"X-Auth-Token": uuid.uuid4().hex,
                                          "Location": f"{ROOT}/SessionService/Sessions/1"})

        def do_DELETE(self) -> None:
            self._send(204, {})

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            path = unquote(parts.path).rstrip("/")
            with gate:
                time.sleep(state["latency"] / 1000)
            res = tree.get(path)
            if res is None:
                self._send(404, {"error": {"message": "not found"}})
                return
            query = unquote(parts.query)
            if expand and "$expand" in query:
                levels = int(query.split("$levels=")[1].split(")")[0]) if "$levels=" in query else 1
                res = _expand(tree, res, levels)
            self._send(200, res)

    ThreadingHTTPServer.request_queue_size = 128
    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    name = "static capture + $expand" if expand else f"{root.name} no $expand"
    target = Target(name, f"http://127.0.0.1:{srv.server_address[1]}", "admin",
                    base64.b16encode(uuid.uuid4().bytes).decode(), False,
                    lambda ms: state.__setitem__("latency", ms))
    return target, lambda: (srv.shutdown(), srv.server_close())  # type: ignore[func-returns-value]


def _expand(tree: dict[str, Any], obj: Any, levels: int) -> Any:
    """`$expand=.($levels=N)`: replace non-Links navigation links (single or in arrays) by their
    resources, N levels deep; links to resources the capture lacks stay links."""
    if levels <= 0:
        return obj
    if isinstance(obj, list):
        return [_expand_link(tree, v, levels) if _is_link(v) else _expand(tree, v, levels) for v in obj]
    if not isinstance(obj, dict):
        return obj
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if k in ("Links", "RelatedItem", "Oem", "Actions", "RedundancySet"):
            out[k] = v
        elif _is_link(v):
            out[k] = _expand_link(tree, v, levels)
        else:
            out[k] = _expand(tree, v, levels) if isinstance(v, list | dict) else v
    return out


def _is_link(v: Any) -> bool:
    return isinstance(v, dict) and set(v) == {"@odata.id"}


def _expand_link(tree: dict[str, Any], link: dict[str, Any], levels: int) -> Any:
    res = tree.get(str(link["@odata.id"]).split("#")[0].rstrip("/"))
    return link if res is None else _expand(tree, res, levels - 1)


# ---- run ---------------------------------------------------------------------------------------
def measure(t: Target, latency: float, runs: int, clients: tuple[str, ...] | None = None) -> list[Result]:
    t.set_latency(latency)
    out = []
    for client, fn in CLIENTS.items():
        if clients is not None and client not in clients:
            continue
        times, counts, gpus = [], [], None
        for _ in range(runs):
            start = time.perf_counter()
            n, gpus = fn(t)
            times.append(time.perf_counter() - start)
            counts.append(n)
        out.append(Result(client, t.name, latency, int(statistics.median(counts)), statistics.median(times), gpus))
    t.set_latency(0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--latency", type=float, default=20.0, help="ms added per request in the second pass")
    ap.add_argument("--targets", default="lab,static")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="rfbench-") as tmp:
        for name in args.targets.split(","):
            clients = ("provision", "prov. no-exp") if name == "gh200" else None
            if name == "lab":
                target, stop = lab_target(Path(tmp))
            else:
                target, stop = static_target(GH200, expand=False) if name == "gh200" else static_target()
            try:
                for lat in (0.0, args.latency):
                    results += measure(target, lat, args.runs, clients)
            finally:
                stop()
    print(f"{'target':26} {'latency':>7} {'client':12} {'requests':>8} {'seconds':>8} {'vs naive req':>12} "
          f"{'vs sushy time':>13}")
    for r in results:
        same = [x for x in results if x.target == r.target and x.latency_ms == r.latency_ms]
        nv = next((x for x in same if x.client == "naive crawl"), None)
        su = next((x for x in same if x.client == "sushy"), None)
        vs_nv = f"{r.requests / nv.requests:>12.2f}" if nv else f"{'-':>12}"
        vs_su = f"{su.seconds / r.seconds:>12.2f}x" if su else f"{'-':>13}"
        print(f"{r.target:26} {r.latency_ms:>5.0f}ms {r.client:12} {r.requests:>8} {r.seconds:>8.2f} {vs_nv} {vs_su}")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in results], indent=2))


if __name__ == "__main__":
    main()
