"""Burn-in execution (apply): the node-local measurements after the ordinary gather, then the checks that need
two or more nodes of the run (ib_write_bw/ib_read_bw pairs on every HCA, multi-node NCCL). The plans are
burnin_plan's (pure); this module only runs them over each node's Runner and records verdicts.

A check that needs a peer is WAIVED on a run of one node (with that reason), never passed; a peer that could
not be gathered, or a side that could not run, makes it an ERROR. NEVER RUN ON REAL HARDWARE here (no two
hosts with InfiniBand, no MPI cluster): the lab's stand-ins cannot reach each other (twins reach only the
lab host), so there each side reports its own HCA's modelled figure and the check takes the lower one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from provision.conformance.checks._base import Context
from provision.conformance.checks.burnin import AREA
from provision.conformance.checks.burnin_parsers import parse_nccl, parse_perftest_bw
from provision.conformance.checks.burnin_plan import (
    IB_TESTS,
    NCCL_MULTI,
    Pair,
    ib_client_probes,
    ib_hcas,
    ib_section,
    ib_server_probes,
    local_probes,
    multinode_gate,
    nccl_multinode_probe,
    pair_rounds,
)
from provision.conformance.facts import GatherError, NodeFacts, Probe, Runner, Section, build_script, split_sections
from provision.conformance.model import CheckResult, Level
from provision.errors import ParseError
from provision.spec.acceptance import Acceptance
from provision.spec.fleet import HostEntry
from provision.spec.model import required

RunnerFor = Callable[[HostEntry], Runner]
ONE_NODE = "one node in this verify run: {what} needs a peer node (peers are the other nodes of the run)"


def run_probes(node: str, probes: Sequence[Probe], runner: Runner, lanes: int | None = None) -> dict[str, Section]:
    """Run probes in one round trip; a round trip that fails makes each probe a section with rc -1 and the
    reason (so its checks are ERRORs naming it), never a missing fact that could read as nothing to check."""
    if not probes:
        return {}
    try:
        return split_sections(runner(node, build_script(probes, lanes=lanes)))
    except GatherError as exc:
        return {p.name: Section(name=p.name, rc=-1, stdout="", stderr=str(exc)) for p in probes}


def measure_local(host: HostEntry, facts: NodeFacts, runner: Runner) -> NodeFacts:
    """Phase 2: the node-local burn-in, one measurement at a time, planned from the gathered facts; its
    sections are merged into the node's facts."""
    found = run_probes(host.name, local_probes(host.spec, facts), runner, lanes=1)
    return facts.model_copy(update={"sections": {**facts.sections, **found}})


@dataclass
class _Node:
    host: HostEntry
    facts: NodeFacts | None  # None: the node could not be gathered
    ctx: Context


def across_nodes(
    hosts: Sequence[HostEntry], facts: dict[str, NodeFacts | None], runner_for: RunnerFor
) -> dict[str, list[CheckResult]]:
    """Phase 3: the cross-node checks of the run, per node name."""
    nodes = {h.name: _Node(h, facts.get(h.name), Context(node=h.name, spec=h.spec, facts=NodeFacts(node=h.name,
             sections={}), level=Level.BURNIN)) for h in hosts}
    _ib(nodes, runner_for)
    _nccl_multinode(nodes, runner_for)
    return {name: n.ctx.results for name, n in nodes.items()}


# ---- InfiniBand pairs -----------------------------------------------------------------------------------
def _hcas(node: _Node) -> list[str] | str:
    """The node's HCAs, or why they are unknown."""
    if node.facts is None:
        return f"{node.host.name} could not be gathered"
    try:
        found = ib_hcas(node.host.spec, node.facts)
    except ParseError as exc:
        return f"{node.host.name}: {exc}"
    ib = node.host.spec.network.infiniband
    return found or f"{node.host.name}: ibstat lists no HCA with link layer {ib.link_layer if ib else '?'}"


def _ib_id(node: _Node, test: str, hca: str) -> str:
    return f"burnin.ib.{hca}.{test}_bw"


def _ib_gate(node: _Node) -> str:
    return f">= {required(node.host.spec.acceptance.ib_write_bw_gbps, 'acceptance.ib_write_bw_gbps'):g}"


def _ib(nodes: dict[str, _Node], runner_for: RunnerFor) -> None:
    ib_nodes = [n for n in nodes.values() if (ib := n.host.spec.network.infiniband) is not None and ib.count]
    if len(ib_nodes) == 1:
        node = ib_nodes[0]
        hcas = _hcas(node)
        for test in IB_TESTS:
            for hca in hcas if isinstance(hcas, list) and hcas else ["hca"]:
                node.ctx.waive(_ib_id(node, test, hca), AREA, f"ib_{test}_bw {hca} to a peer node (Gb/s)",
                               _ib_gate(node), ONE_NODE.format(what=f"ib_{test}_bw"))
        return
    for index, pairs in enumerate(pair_rounds([n.host.name for n in ib_nodes])):
        for test in IB_TESTS:
            with ThreadPoolExecutor(max_workers=max(1, len(pairs))) as pool:
                jobs = [pool.submit(_ib_pair, nodes, p, test, runner_for, index == 0) for p in pairs]
                for job in jobs:
                    job.result()


def _ib_pair(nodes: dict[str, _Node], pair: Pair, test: str, runner_for: RunnerFor, record_server: bool) -> None:
    server, client = nodes[pair[0]], nodes[pair[1]]
    ends = [(server, client), (client, server)] if record_server else [(client, server)]
    s_hcas, c_hcas = _hcas(server), _hcas(client)
    if isinstance(s_hcas, str) or isinstance(c_hcas, str) or server.host.ssh is None:
        why = s_hcas if isinstance(s_hcas, str) else c_hcas if isinstance(c_hcas, str) else \
            f"{server.host.name}: no SSH address for the client to reach"
        for node, peer in ends:
            own = _hcas(node)
            for hca in own if isinstance(own, list) and own else ["hca"]:
                node.ctx.error(_ib_id(node, test, hca), AREA, f"ib_{test}_bw {hca} <-> {peer.host.name} (Gb/s)",
                               _ib_gate(node), why)
        return
    with ThreadPoolExecutor(max_workers=2) as pool:
        s_job = pool.submit(run_probes, server.host.name, ib_server_probes(test, s_hcas), runner_for(server.host))
        c_out = run_probes(client.host.name, ib_client_probes(test, c_hcas, s_hcas, server.host.ssh.host),
                           runner_for(client.host))
        s_out = s_job.result()
    want = max(len(s_hcas), len(c_hcas), *(n.host.spec.network.infiniband.count for n in (server, client)
                                            if n.host.spec.network.infiniband is not None))
    for i in range(want):
        s_hca = s_hcas[i] if i < len(s_hcas) else None
        c_hca = c_hcas[i] if i < len(c_hcas) else None
        _ib_verdict(ends, test, i, {server.host.name: s_hca, client.host.name: c_hca},
                    s_out.get(ib_section(test, s_hca or "")), c_out.get(ib_section(test, c_hca or "")))


def _ib_verdict(ends: list[tuple[_Node, _Node]], test: str, rail: int, hca: dict[str, str | None],
                s_sec: Section | None, c_sec: Section | None) -> None:
    figure, why = _ib_figure(test, s_sec, c_sec, hca)
    for node, peer in ends:
        own = hca[node.host.name] or f"rail{rail}"
        desc = f"ib_{test}_bw {own} <-> {peer.host.name} {hca[peer.host.name] or '(none)'} (Gb/s)"
        gate = required(node.host.spec.acceptance.ib_write_bw_gbps, "acceptance.ib_write_bw_gbps")
        if figure is None:
            node.ctx.error(_ib_id(node, test, own), AREA, desc, _ib_gate(node), why)
        else:
            node.ctx.record(_ib_id(node, test, own), AREA, desc, _ib_gate(node), f"{figure:.2f}", figure >= gate,
                            why)


def _ib_figure(test: str, s_sec: Section | None, c_sec: Section | None,
               hca: dict[str, str | None]) -> tuple[float | None, str]:
    """The lower of what the two ends report (the client must report; a server may print only its banner)."""
    missing = [n for n, h in hca.items() if h is None]
    if missing:
        return None, f"no HCA to pair on {', '.join(missing)} (ibstat lists fewer than the spec's count)"
    figures = []
    for side, sec in (("client", c_sec), ("server", s_sec)):
        if sec is None or sec.rc != 0:
            last = (sec.stderr or sec.stdout).strip().splitlines()[-1:] if sec is not None else []
            state = "not run" if sec is None else "command not found" if sec.rc == 127 else f"exit {sec.rc}"
            return None, f"ib_{test}_bw {side}: {state}" + (f" ({last[0][:160]})" if last else "")
        try:
            row = parse_perftest_bw(sec.stdout)
        except ParseError as exc:
            return None, f"ib_{test}_bw {side}: {exc}"
        if row is None and side == "client":
            return None, f"ib_{test}_bw client: no result table"
        if row is not None:
            figures.append((row.average_gbps, side))
    low = min(figures)
    shown = ", ".join(f"{side} {value:.2f}" for value, side in figures)
    return low[0], f"BW average (Gb/s): {shown}; the lower is judged"


# ---- multi-node NCCL ---------------------------------------------------------------------------------------
def _latency_gate(acc: Acceptance) -> float:
    return required(acc.allreduce_latency_us_p99, "acceptance.allreduce_latency_us_p99")


def _nccl_multinode(nodes: dict[str, _Node], runner_for: RunnerFor) -> None:
    # Nodes whose spec gates multi-node NCCL (GPUs and an all_reduce figure); others have no such check.
    nodes = {n: node for n, node in nodes.items()
             if node.host.spec.gpu is not None and node.host.spec.acceptance.allreduce_busbw_gbs is not None
             and node.host.spec.acceptance.allreduce_latency_us_p99 is not None}
    acc_of = {n: node.host.spec.acceptance for n, node in nodes.items()}
    names = sorted(nodes)
    if not names:
        return
    if len(names) == 1:
        node = nodes[names[0]]
        gate, _src = multinode_gate(node.host.spec)
        node.ctx.waive("burnin.nccl_multinode.busbw", AREA, "NCCL all_reduce_perf across nodes: bus bandwidth (GB/s)",
                       f">= {gate:g}", ONE_NODE.format(what="multi-node NCCL"))
        node.ctx.waive("burnin.nccl_multinode.latency", AREA, "NCCL all_reduce_perf across nodes: 8 B time (us)",
                       f"<= {_latency_gate(acc_of[names[0]]):g}", ONE_NODE.format(what="multi-node NCCL"))
        return
    good = [nodes[n] for n in names if nodes[n].facts is not None and nodes[n].host.ssh is not None]
    lost = [n for n in names if nodes[n] not in good]
    launcher = good[0] if len(good) >= 2 else None
    out: Section | None = None
    if launcher is not None:
        hosts = [(n.host.ssh.host, n.host.spec.need_gpu().count) for n in good if n.host.ssh is not None]
        probe = nccl_multinode_probe(launcher.host.spec, hosts)
        out = run_probes(launcher.host.name, [probe], runner_for(launcher.host)).get(NCCL_MULTI)
    for node in good or [nodes[n] for n in names]:
        _nccl_verdict(node, out, launcher, [n.host.name for n in good], lost)


def _nccl_verdict(node: _Node, out: Section | None, launcher: _Node | None, ran: list[str], lost: list[str]) -> None:
    acc = node.host.spec.acceptance
    gate, source = multinode_gate(node.host.spec)
    bw_id, lat_id = "burnin.nccl_multinode.busbw", "burnin.nccl_multinode.latency"
    bw_desc = f"NCCL all_reduce_perf across {len(ran)} nodes: bus bandwidth at the largest size (GB/s)"
    lat_desc = f"NCCL all_reduce_perf across {len(ran)} nodes: time at the smallest size (us)"
    bw_exp, lat_exp = f">= {gate:g}", f"<= {_latency_gate(acc):g}"
    why = None
    if launcher is None or out is None:
        why = f"fewer than two nodes could be gathered (not gathered: {', '.join(lost)})"
    elif out.rc != 0:
        last = (out.stderr or out.stdout).strip().splitlines()[-1:]
        why = f"mpirun on {launcher.host.name}: " + ("command not found" if out.rc == 127 else f"exit {out.rc}") + (
            f" ({last[0][:160]})" if last else "")
    if why is None:
        assert out is not None and launcher is not None
        try:
            run = parse_nccl(out.stdout)
        except ParseError as exc:
            why = f"mpirun on {launcher.host.name}: {exc}"
    if why is not None:
        node.ctx.error(bw_id, AREA, bw_desc, bw_exp, why)
        node.ctx.error(lat_id, AREA, lat_desc, lat_exp, why)
        return
    big, small = run.largest, run.smallest
    evidence = (f"launched from {launcher.host.name if launcher else '?'} over {', '.join(ran)}; {run.ranks} ranks on "
                f"{', '.join(run.hosts)}")
    if lost:
        evidence += f"; not gathered, left out: {', '.join(lost)}"
    node.ctx.record(bw_id, AREA, bw_desc, bw_exp, f"{big.busbw_gbs:g}", big.busbw_gbs >= gate,
                    f"{big.size_bytes} B; gate: {source}; {evidence}")
    fast = small.time_us <= _latency_gate(acc)
    node.ctx.record(lat_id, AREA, lat_desc, lat_exp, f"{small.time_us:g}", fast,
                    f"{small.size_bytes} B out of place; nccl-tests reports the mean over its iterations, held "
                    f"against the seed's p99 figure (acceptance.allreduce_latency_us_p99); {evidence}")
