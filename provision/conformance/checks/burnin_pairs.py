"""Burn-in across nodes, judged (pure): ib_write_bw/ib_read_bw pairs on every HCA and multi-node NCCL. What to run
comes from burnin_plan; the runs are conformance's own (provision/conformance/across_burnin.py), which hands the
sections it got back to the verdicts here.

A check that needs a peer is WAIVED on a run of one node (with that reason), never passed; a peer that could
not be gathered, or a side that could not run, makes it an ERROR. NEVER RUN ON REAL HARDWARE here (no two
hosts with InfiniBand, no MPI cluster): the lab's stand-ins cannot reach each other (twins reach only the
lab host), so there each side reports its own HCA's modelled figure and the check takes the lower one.
"""

from __future__ import annotations

from dataclasses import dataclass

from provision.conformance.checks._base import Context
from provision.conformance.checks.burnin import AREA
from provision.conformance.checks.burnin_parsers import parse_nccl, parse_perftest_bw
from provision.conformance.checks.burnin_plan import (
    IB_TESTS,
    ib_client_probes,
    ib_hcas,
    ib_section,
    ib_server_probes,
    multinode_gate,
    nccl_multinode_probe,
)
from provision.conformance.facts import NodeFacts, Probe, Section
from provision.conformance.target import Target
from provision.errors import ParseError
from provision.spec.acceptance import Acceptance
from provision.spec.model import required

ONE_NODE = "one node in this verify run: {what} needs a peer node (peers are the other nodes of the run)"


@dataclass
class Member:
    """One node of the run as the checks across nodes see it."""

    host: Target
    facts: NodeFacts | None  # None: the node could not be gathered
    ctx: Context


# ---- InfiniBand pairs -----------------------------------------------------------------------------------
def hcas(node: Member) -> list[str] | str:
    """The node's HCAs, or why they are unknown."""
    if node.facts is None:
        return f"{node.host.name} could not be gathered"
    try:
        found = ib_hcas(node.host.spec, node.facts)
    except ParseError as exc:
        return f"{node.host.name}: {exc}"
    ib = node.host.spec.network.infiniband
    return found or f"{node.host.name}: ibstat lists no HCA with link layer {ib.link_layer if ib else '?'}"


def _ib_id(node: Member, test: str, hca: str) -> str:
    return f"burnin.ib.{hca}.{test}_bw"


def _ib_gate(node: Member) -> str:
    return f">= {required(node.host.spec.acceptance.ib_write_bw_gbps, 'acceptance.ib_write_bw_gbps'):g}"


def ib_members(nodes: dict[str, Member]) -> list[Member]:
    """The nodes whose spec has InfiniBand HCAs (the pairs are drawn among them)."""
    return [n for n in nodes.values() if (ib := n.host.spec.network.infiniband) is not None and ib.count]


def waive_ib_alone(node: Member) -> None:
    """The only InfiniBand node of the run: every pair check WAIVED (it needs a peer), never passed."""
    found = hcas(node)
    for test in IB_TESTS:
        for hca in found if isinstance(found, list) and found else ["hca"]:
            node.ctx.waive(_ib_id(node, test, hca), AREA, f"ib_{test}_bw {hca} to a peer node (Gb/s)",
                           _ib_gate(node), ONE_NODE.format(what=f"ib_{test}_bw"))


def ib_ends(server: Member, client: Member, record_server: bool) -> list[tuple[Member, Member]]:
    """(node, peer) of each side whose verdict a pair records (the server's only in the first round)."""
    return [(server, client), (client, server)] if record_server else [(client, server)]


def ib_pair_probes(server: Member, client: Member, test: str,
                   ends: list[tuple[Member, Member]]) -> tuple[list[Probe], list[Probe]] | None:
    """(server probes, client probes) of one pair and test; None when it cannot run, after recording an ERROR on
    each end with the reason (a peer not gathered, no HCA listed, no SSH address for the client to reach)."""
    s_hcas, c_hcas = hcas(server), hcas(client)
    if isinstance(s_hcas, list) and isinstance(c_hcas, list) and server.host.ssh is not None:
        return ib_server_probes(test, s_hcas), ib_client_probes(test, c_hcas, s_hcas, server.host.ssh.host)
    why = s_hcas if isinstance(s_hcas, str) else c_hcas if isinstance(c_hcas, str) else \
        f"{server.host.name}: no SSH address for the client to reach"
    for node, peer in ends:
        own = hcas(node)
        for hca in own if isinstance(own, list) and own else ["hca"]:
            node.ctx.error(_ib_id(node, test, hca), AREA, f"ib_{test}_bw {hca} <-> {peer.host.name} (Gb/s)",
                           _ib_gate(node), why)
    return None


def judge_ib_pair(server: Member, client: Member, test: str, ends: list[tuple[Member, Member]],
                  s_out: dict[str, Section], c_out: dict[str, Section]) -> None:
    """Each rail's verdict from what the two sides printed (ib_pair_probes said the pair could run)."""
    s_hcas, c_hcas = hcas(server), hcas(client)
    assert isinstance(s_hcas, list) and isinstance(c_hcas, list)
    want = max(len(s_hcas), len(c_hcas), *(n.host.spec.network.infiniband.count for n in (server, client)
                                            if n.host.spec.network.infiniband is not None))
    for i in range(want):
        s_hca = s_hcas[i] if i < len(s_hcas) else None
        c_hca = c_hcas[i] if i < len(c_hcas) else None
        _ib_verdict(ends, test, i, {server.host.name: s_hca, client.host.name: c_hca},
                    s_out.get(ib_section(test, s_hca or "")), c_out.get(ib_section(test, c_hca or "")))


def _ib_verdict(ends: list[tuple[Member, Member]], test: str, rail: int, hca: dict[str, str | None],
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


def nccl_members(nodes: dict[str, Member]) -> dict[str, Member]:
    """The nodes whose spec gates multi-node NCCL (GPUs and an all_reduce figure); others have no such check."""
    return {n: node for n, node in nodes.items()
            if node.host.spec.gpu is not None and node.host.spec.acceptance.allreduce_busbw_gbs is not None
            and node.host.spec.acceptance.allreduce_latency_us_p99 is not None}


def waive_nccl_alone(node: Member) -> None:
    """The only NCCL node of the run: multi-node NCCL WAIVED (it needs a peer), never passed."""
    gate, _src = multinode_gate(node.host.spec)
    node.ctx.waive("burnin.nccl_multinode.busbw", AREA, "NCCL all_reduce_perf across nodes: bus bandwidth (GB/s)",
                   f">= {gate:g}", ONE_NODE.format(what="multi-node NCCL"))
    node.ctx.waive("burnin.nccl_multinode.latency", AREA, "NCCL all_reduce_perf across nodes: 8 B time (us)",
                   f"<= {_latency_gate(node.host.spec.acceptance):g}", ONE_NODE.format(what="multi-node NCCL"))


def nccl_launch(nodes: dict[str, Member]) -> tuple[list[Member], list[str], Member | None, Probe | None]:
    """(the nodes that join, the names left out, the launcher, its mpirun probe) of a run's multi-node NCCL:
    the gathered nodes with an SSH address, launched from the first when there are two or more."""
    names = sorted(nodes)
    good = [nodes[n] for n in names if nodes[n].facts is not None and nodes[n].host.ssh is not None]
    lost = [n for n in names if nodes[n] not in good]
    if len(good) < 2:
        return good, lost, None, None
    hosts = [(n.host.ssh.host, n.host.spec.need_gpu().count) for n in good if n.host.ssh is not None]
    return good, lost, good[0], nccl_multinode_probe(good[0].host.spec, hosts)


def judge_nccl(node: Member, out: Section | None, launcher: Member | None, ran: list[str], lost: list[str]) -> None:
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
