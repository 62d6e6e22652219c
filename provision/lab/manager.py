"""`provision lab up|down|status|fault`: start the BMC simulator (and the twins), write the lab inventory,
remember what runs in `<lab>/lab.json`, and take it all down again."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import secrets
import shutil
import ssl
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel, SecretStr

from provision.ansible.project import example_inventory
from provision.errors import InputError, LabError
from provision.lab import simproc
from provision.lab.bmcsim import capture
from provision.lab.bmcsim.config import TREES_DIR, BmcConfig, Parts, Ready, SimConfig, VmHostConfig, factory_cert_file
from provision.lab.bmcsim.faults import BMC_FAULT_KINDS
from provision.lab.ca import make_ca_and_server
from provision.lab.inventory_writer import USERNAME, write_inventory
from provision.lab.parts import spec_parts
from provision.lab.simproc import SIM_CONFIG, alive, ports_left, stop_process
from provision.lab.state import STATE, LabState, NodeState, read_state
from provision.lab.twins.models import TwinInfo, TwinRequest
from provision.lab.vm import lab_up
from provision.lab.vm.lab_up import VmLabNode

# A twin fault that takes a part out of the server, and the BMC fault that shows the same part gone.
TWIN_FAULTS_THE_BMC_SEES: dict[str, str] = {"dimm_missing": "dimm-missing"}
READY = "bmcsim.ready.json"
SIM_LOG = "bmcsim.log"
SECRET_FILES = (SIM_CONFIG, "server-key.pem", "server.pem", "ca.pem", READY)
FACTORY_CERTS = "factory-certs"  # config.factory_cert_file: <lab>/factory-certs/<node>.pem


class UpOptions(BaseModel):
    lab_dir: Path
    nodes: int | None = None  # None: one node per tree when several trees are given, else 2
    profile: str = "ml_prod_v4"
    bmc_tree: Path | list[Path] | None = None  # several: node01 serves the first, node02 the second, ...
    as_captured: bool = False
    factory: bool = False  # each BMC as from the factory: PasswordChangeRequired, a self-signed certificate
    bmc_only: bool = False
    vm: bool = False  # each node's host a qemu VM driven by its BMC (implies no twins)
    speed: float = 10.0
    source_inventory: Path = Path("inventory/hosts.yml")


@dataclass(frozen=True)
class Shape:
    """What the options ask for, checked before anything starts: the nodes, the tree each one serves."""

    names: list[str]
    trees: list[Path]  # per node, resolved
    warnings: list[str]  # what the captures serve as captured, once per tree


# --- up ----------------------------------------------------------------------------------
def up(opts: UpOptions) -> LabState:
    """Start the lab; returns its state. Raises InputError for bad options, LabError if it cannot start."""
    lab = opts.lab_dir.resolve()
    shape = shape_of(opts)
    old = read_state(lab)
    if old is not None:
        if alive(old.pid):
            raise LabError(f"a lab is already up in {lab} (simulator pid {old.pid}); run `provision lab down`")
        _cleanup_files(lab)
    parts, group_vars = _profile(opts)
    lab.mkdir(parents=True, exist_ok=True)
    vm_hosts = lab_up.hosts(lab, shape.names) if opts.vm else {}
    proc = None
    try:
        isos = lab_up.build_installers(lab, vm_hosts)
        cfg = _sim_config(lab, opts, shape, parts, vm_hosts)
        proc = simproc.spawn(lab, cfg)
        ready = simproc.wait_ready(lab, proc, cfg)
        _wait_answering(lab / "ca.pem", ready, factory_lab=lab if opts.factory else None)
        twins = _twins_up(lab, opts, shape.names) if not (opts.bmc_only or opts.vm) else {}
        media_pid, vms = _vms_up(lab, vm_hosts, isos)
        state = _state(lab, opts, shape, ready, twins, vms)
        state.warnings, state.media_pid = shape.warnings, media_pid
        write_inventory(lab, opts.profile, group_vars, cfg, state)
    except BaseException:
        if proc is not None:
            stop_process(proc.pid, lab, asked=False)
        lab_up.teardown(lab)  # the image server, a stray qemu, <lab>/vm (nothing when not --vm)
        raise
    (lab / STATE).write_text(state.model_dump_json(indent=1))
    return state


def shape_of(opts: UpOptions) -> Shape:
    """The nodes and their trees; InputError (one line) for options that cannot make a lab."""
    given = opts.bmc_tree if isinstance(opts.bmc_tree, list) else [opts.bmc_tree] if opts.bmc_tree else []
    count = opts.nodes if opts.nodes is not None else len(given) if len(given) > 1 else 2
    _check_options(opts, count)
    if len(given) > 1 and count != len(given):
        raise InputError(f"--bmc-tree: {len(given)} trees for --nodes {count} (one tree per node, node01 the "
                         "first, or one tree for every node)")
    if len(given) > 1 and not opts.bmc_only:
        raise InputError("--bmc-tree: several trees need --bmc-only (twins and VMs stand for the profile's server)")
    wanted: list[Path | None] = list(given) or [None]
    resolved = {tree: _resolve_tree(tree) for tree in dict.fromkeys(wanted)}  # each tree read once, all first
    trees = [resolved[t][0] for t in wanted] if len(wanted) > 1 else [resolved[wanted[0]][0]] * count
    warnings = [line for _tree, lines in resolved.values() for line in lines]
    return Shape(names=[f"node{i:02d}" for i in range(1, count + 1)], trees=trees, warnings=warnings)


def parse_trees(text: str) -> Path | list[Path]:
    """`--bmc-tree A,B,C`: one tree per node. A whole value that names a folder is one tree (a comma in it)."""
    if "," not in text or Path(text).is_dir():
        return Path(text)
    parts = [p.strip() for p in text.split(",")]
    if not all(parts):
        raise InputError(f"--bmc-tree {text}: an empty tree name between commas")
    return [Path(p) for p in parts]


def _vms_up(lab: Path, vm_hosts: dict[str, VmHostConfig], isos: dict[str, Path]
            ) -> tuple[int | None, dict[str, VmLabNode]]:
    """The image server for the installer CDs (its pid) and what the inventory says of each VM node."""
    if not vm_hosts:
        return None, {}
    pid, urls = lab_up.start_media(lab, isos)
    return pid, {name: lab_up.node_info(lab, host, urls[name]) for name, host in vm_hosts.items()}


def _check_options(opts: UpOptions, nodes: int) -> None:
    if not 1 <= nodes <= 2000:
        raise InputError(f"--nodes {nodes}: must be between 1 and 2000")
    if not opts.bmc_only and nodes > 250:
        raise InputError(f"--nodes {nodes}: more than 250 nodes needs --bmc-only")
    if opts.speed <= 0:
        raise InputError(f"--speed {opts.speed}: must be positive")
    if importlib.util.find_spec("aiohttp") is None:  # the simulator's HTTP side; not installed by default
        raise InputError("provision lab up: the BMC simulator needs the lab extra: pip install 'provision[lab]'")
    if opts.vm:
        lab_up.check(nodes)


def _resolve_tree(tree: Path | None) -> tuple[Path, list[str]]:
    """The tree's directory and the warnings its capture gives (each names a file served as captured)."""
    if tree is None:
        return TREES_DIR / "supermicro", []
    if not tree.exists() and (TREES_DIR / str(tree)).is_dir():
        tree = TREES_DIR / str(tree)
    if not tree.is_dir():
        raise InputError(f"--bmc-tree {tree}: no such directory (built-in trees: {', '.join(builtin_trees())})")
    if not ((tree / "redfish" / "v1" / "index.json").is_file() or (tree / "index.json").is_file()):
        raise InputError(f"--bmc-tree {tree}: not a Redfish mockup (no redfish/v1/index.json or index.json)")
    cap = capture.load(tree)  # the whole capture reads before anything starts (InputError if no mockup)
    return tree.resolve(), cap.warnings


def builtin_trees() -> list[str]:
    return sorted(p.name for p in TREES_DIR.iterdir() if p.is_dir())


def _source_inventory(path: Path) -> Path:
    if path.exists():
        return path
    with contextlib.suppress(InputError):  # neither a checkout nor a wheel's copy: the error below says it
        repo = example_inventory()
        if repo.exists():
            return repo
    raise InputError(f"{path}: inventory not found (the lab copies its specs from it; see --from-inventory)")


def _profile(opts: UpOptions) -> tuple[Parts, Path]:
    """The spec's parts for the profile, and the group_vars directory the specs live in."""
    from provision.spec import load_fleet

    inv = _source_inventory(opts.source_inventory)
    fleet = load_fleet(inv)
    spec = fleet.profiles.get(opts.profile)
    if spec is None:
        raise InputError(f"--profile {opts.profile}: not in {inv} (known: {', '.join(sorted(fleet.profiles))})")
    parts = spec_parts(spec)
    base = inv if inv.is_dir() else inv.parent
    return parts, base / "group_vars"


def _sim_config(lab: Path, opts: UpOptions, shape: Shape, parts: Parts,
                vm_hosts: dict[str, VmHostConfig] | None = None) -> SimConfig:
    _ca, cert, key = make_ca_and_server(lab)
    vm_hosts = vm_hosts or {}
    nodes = [
        BmcConfig(name=name, index=i, tree=tree, as_captured=opts.as_captured, username=USERNAME,
                  password=SecretStr(secrets.token_urlsafe(15)), vm=vm_hosts.get(name), factory=opts.factory)
        for i, (name, tree) in enumerate(zip(shape.names, shape.trees, strict=True), start=1)
    ]
    cfg = SimConfig(
        lab_dir=lab, nodes=nodes, speed=opts.speed, cert_file=cert, key_file=key,
        control_token=SecretStr(secrets.token_urlsafe(24)), ready_file=lab / READY, log_file=lab / SIM_LOG,
        parts=parts, twins=not (opts.bmc_only or opts.vm),
    )
    simproc.write_config(lab, cfg)
    return cfg


def _wait_answering(ca: Path, ready: Ready, timeout: float = 60.0, factory_lab: Path | None = None) -> None:
    """Every BMC answers its service root: over plain HTTP where it has it (cheap), and over HTTPS,
    verified with the lab CA (a factory lab: the node's own self-signed certificate), for the first and last
    node and every node without plain HTTP."""
    ctx = ssl.create_default_context(cafile=str(ca))
    own = {n.name: ssl.create_default_context(cafile=str(factory_cert_file(factory_lab, n.name)))
           for n in ready.nodes if factory_lab is not None and n.https_port}
    deadline = time.monotonic() + timeout + len(ready.nodes) / 20
    edges = {ready.nodes[0].name, ready.nodes[-1].name}
    urls = []
    for node in ready.nodes:
        if node.http_port:
            urls.append((node.name, f"http://127.0.0.1:{node.http_port}/redfish/v1"))
        if node.https_port and (node.name in edges or not node.http_port):
            urls.append((node.name, f"https://127.0.0.1:{node.https_port}/redfish/v1"))

    def probe(item: tuple[str, str]) -> None:
        name, url = item
        while not _answers(url, own.get(name, ctx)):
            if time.monotonic() > deadline:
                raise LabError(f"{name}: BMC at {url} does not answer")
            time.sleep(0.1)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(probe, urls))


def _answers(url: str, ctx: ssl.SSLContext) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5, context=ctx if url.startswith("https") else None) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _twins_module() -> ModuleType:
    try:
        mod = importlib.import_module("provision.lab.twins")
    except ImportError as exc:
        raise LabError(f"node twins are not available ({exc}); use --bmc-only") from None
    if not hasattr(mod, "up"):
        raise LabError("node twins are not available in this build; use --bmc-only")
    return mod


def _twins_up(lab: Path, opts: UpOptions, names: list[str]) -> dict[str, TwinInfo]:
    twins = _twins_module()
    reqs = [TwinRequest(name=name, index=i, profile=opts.profile) for i, name in enumerate(names, start=1)]
    from provision.spec import load_fleet  # twins need each profile's NodeSpec (spec_for)

    profiles = load_fleet(_source_inventory(opts.source_inventory)).profiles
    infos: list[TwinInfo] = twins.up(lab, reqs, profiles.__getitem__)
    return {info.name: info for info in infos}


def _state(lab: Path, opts: UpOptions, shape: Shape, ready: Ready, twins: dict[str, TwinInfo],
           vms: dict[str, VmLabNode] | None = None) -> LabState:
    vms = vms or {}
    tree_of = dict(zip(shape.names, shape.trees, strict=True))
    nodes = [NodeState(name=n.name, https_port=n.https_port, http_port=n.http_port, tree=str(tree_of[n.name]),
                       ssh=twins.get(n.name), vm=vms.get(n.name)) for n in ready.nodes]  # fmt: skip
    trees = ",".join(dict.fromkeys(str(t) for t in shape.trees))
    return LabState(lab_dir=lab, pid=ready.pid, control_port=ready.control_port, profile=opts.profile,
                    tree=trees, as_captured=opts.as_captured, twins=bool(twins), vm=bool(vms), factory=opts.factory,
                    inventory=lab / "inventory" / "hosts.yml", nodes=nodes)


# --- control -----------------------------------------------------------------------------
def _token(lab: Path) -> str:
    try:
        return str(json.loads((lab / SIM_CONFIG).read_text())["control_token"])
    except (OSError, ValueError, KeyError):
        raise LabError(f"{lab / SIM_CONFIG}: missing or unreadable; the lab cannot be controlled") from None


def control(state: LabState, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call the simulator's loopback control endpoint."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{state.control_port}{path}", method=method,
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Bearer {_token(state.lab_dir)}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return dict(json.loads(resp.read()))
    except urllib.error.HTTPError as exc:
        detail = json.loads(exc.read() or b"{}").get("error", exc.reason)
        raise LabError(f"simulator refused {path}: {detail}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise LabError(f"simulator control endpoint does not answer ({exc.__class__.__name__})") from None


def status(lab_dir: Path) -> dict[str, Any]:
    lab = lab_dir.resolve()
    state = read_state(lab)
    if state is None:
        return {"state": "down", "lab_dir": str(lab), "inventory": None, "nodes": []}
    if not alive(state.pid):
        return {"state": "stale", "lab_dir": str(lab), "inventory": str(state.inventory), "pid": state.pid,
                "nodes": [], "hint": "the simulator is gone; run `provision lab down` to clean up"}
    live = {n["name"]: n for n in control(state, "GET", "/status").get("nodes", [])}
    nodes = []
    for n in state.nodes:
        info = live.get(n.name, {})
        nodes.append({
            "name": n.name,
            "bmc": f"https://127.0.0.1:{n.https_port}" if n.https_port else None,
            "bmc_http": f"http://127.0.0.1:{n.http_port}" if n.http_port else None, "tree": n.tree,
            "power": info.get("power"), "faults": info.get("faults"),
            "password_change_required": info.get("password_change_required"), "certificate": info.get("certificate"),
            "ssh": n.ssh.model_dump(mode="json") if n.ssh else None,
            "vm": {"ssh": f"127.0.0.1:{n.vm.ssh_port}", "installer": n.vm.installer_url} if n.vm else None,
        })
    return {"state": "up", "lab_dir": str(lab), "inventory": str(state.inventory), "pid": state.pid,
            "profile": state.profile, "tree": state.tree, "as_captured": state.as_captured, "factory": state.factory,
            "twins": state.twins, "vm": state.vm, "warnings": state.warnings, "nodes": nodes}


def fault(lab_dir: Path, node: str, kind: str, clear: bool, value: float | None) -> dict[str, Any]:
    lab = lab_dir.resolve()
    state = read_state(lab)
    if state is None or not alive(state.pid):
        raise LabError(f"no lab is up in {lab}; run `provision lab up` first")
    names = [n.name for n in state.nodes]
    if node not in names:
        raise InputError(f"node {node!r}: not in the lab (nodes: {', '.join(names)})")
    if kind in BMC_FAULT_KINDS:
        return control(state, "POST", "/fault", {"node": node, "kind": kind, "clear": clear, "value": value})
    twin_kinds: frozenset[str] = frozenset()
    if state.twins:
        twins = _twins_module()
        twin_kinds = frozenset(getattr(twins, "FAULT_KINDS", frozenset()))
        if kind in twin_kinds:
            twins.fault(lab, node, kind, clear)
            also = TWIN_FAULTS_THE_BMC_SEES.get(kind)
            if also is not None:  # the part is gone from the server: its BMC shows it too, as a real one does
                control(state, "POST", "/fault", {"node": node, "kind": also, "clear": clear, "value": None})
            return {"node": node, "twin_fault": kind, "cleared": clear, **({"bmc_fault": also} if also else {})}
    known = sorted(BMC_FAULT_KINDS | twin_kinds)
    raise InputError(f"fault kind {kind!r}: unknown (known: {', '.join(known)})")


# --- down --------------------------------------------------------------------------------
def down(lab_dir: Path) -> dict[str, Any]:
    """Stop twins and simulator, verify no port is left listening, remove the lab's secrets."""
    lab = lab_dir.resolve()
    state = read_state(lab)
    if state is None:
        return {"state": "down", "lab_dir": str(lab), "stopped": False}
    errors: list[str] = []
    if state.twins:
        try:
            _twins_module().down(lab)
        except Exception as exc:  # keep tearing down the rest
            errors.append(f"twins: {exc}")
    if alive(state.pid):
        asked = True
        try:
            control(state, "POST", "/shutdown")
        except LabError:
            asked = False
        stop_process(state.pid, lab, asked)
    try:
        lab_up.teardown(lab)  # after the simulator (which stops its VMs): the image server, a stray qemu
    except LabError as exc:
        errors.append(str(exc))
    ports = [p for n in state.nodes for p in (n.https_port, n.http_port, state.control_port) if p]
    left = ports_left(ports + [n.vm.ssh_port for n in state.nodes if n.vm])
    if left:
        errors.append(f"ports still listening: {sorted(set(left))}")
    if errors:
        raise LabError(f"lab down incomplete in {lab}: {'; '.join(errors)}")
    _cleanup_files(lab)
    return {"state": "down", "lab_dir": str(lab), "stopped": True}


def _cleanup_files(lab: Path) -> None:
    lab_up.teardown(lab)
    for name in (*SECRET_FILES, STATE):
        with contextlib.suppress(FileNotFoundError):
            (lab / name).unlink()
    shutil.rmtree(lab / "inventory", ignore_errors=True)
    shutil.rmtree(lab / FACTORY_CERTS, ignore_errors=True)
