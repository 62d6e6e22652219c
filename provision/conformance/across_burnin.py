"""Burn-in runs (apply): the node-local measurements after the ordinary gather, then the runs that need two or
more nodes of the verify (ib_write_bw/ib_read_bw pairs on every HCA, multi-node NCCL). The plans are
burnin_plan's and the verdicts checks/burnin_pairs' (both pure); this module only runs the probes over each
node's Runner and hands the sections back.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from provision.conformance.checks._base import Context
from provision.conformance.checks.burnin_pairs import (
    Member,
    ib_ends,
    ib_members,
    ib_pair_probes,
    judge_ib_pair,
    judge_nccl,
    nccl_launch,
    nccl_members,
    waive_ib_alone,
    waive_nccl_alone,
)
from provision.conformance.checks.burnin_plan import IB_TESTS, NCCL_MULTI, Pair, local_probes, pair_rounds
from provision.conformance.facts import NodeFacts, Runner, Section, run_probes
from provision.conformance.model import CheckResult, Level
from provision.conformance.target import RunnerFor, Target


def measure_local(host: Target, facts: NodeFacts, runner: Runner) -> NodeFacts:
    """The node-local burn-in, one measurement at a time, planned from the gathered facts; its sections are
    merged into the node's facts."""
    found = run_probes(host.name, local_probes(host.spec, facts), runner, lanes=1)
    return facts.model_copy(update={"sections": {**facts.sections, **found}})


def across_nodes(
    hosts: Sequence[Target], facts: dict[str, NodeFacts | None], runner_for: RunnerFor
) -> dict[str, list[CheckResult]]:
    """The burn-in checks across the run's nodes, per node name."""
    nodes = {h.name: Member(h, facts.get(h.name), Context(node=h.name, spec=h.spec, facts=NodeFacts(
             node=h.name, sections={}), level=Level.BURNIN)) for h in hosts}
    _ib(nodes, runner_for)
    _nccl_multinode(nodes, runner_for)
    return {name: n.ctx.results for name, n in nodes.items()}


def _ib(nodes: dict[str, Member], runner_for: RunnerFor) -> None:
    members = ib_members(nodes)
    if len(members) == 1:
        waive_ib_alone(members[0])
        return
    for index, pairs in enumerate(pair_rounds([n.host.name for n in members])):
        for test in IB_TESTS:
            with ThreadPoolExecutor(max_workers=max(1, len(pairs))) as pool:
                jobs = [pool.submit(_ib_pair, nodes, p, test, runner_for, index == 0) for p in pairs]
                for job in jobs:
                    job.result()


def _ib_pair(nodes: dict[str, Member], pair: Pair, test: str, runner_for: RunnerFor, record_server: bool) -> None:
    server, client = nodes[pair[0]], nodes[pair[1]]
    ends = ib_ends(server, client, record_server)
    probes = ib_pair_probes(server, client, test, ends)
    if probes is None:
        return
    with ThreadPoolExecutor(max_workers=2) as pool:
        s_job = pool.submit(run_probes, server.host.name, probes[0], runner_for(server.host))
        c_out = run_probes(client.host.name, probes[1], runner_for(client.host))
        s_out = s_job.result()
    judge_ib_pair(server, client, test, ends, s_out, c_out)


def _nccl_multinode(nodes: dict[str, Member], runner_for: RunnerFor) -> None:
    members = nccl_members(nodes)
    if len(members) == 1:
        waive_nccl_alone(next(iter(members.values())))
        return
    if not members:
        return
    good, lost, launcher, probe = nccl_launch(members)
    out: Section | None = None
    if launcher is not None and probe is not None:
        out = run_probes(launcher.host.name, [probe], runner_for(launcher.host)).get(NCCL_MULTI)
    for node in good or [members[n] for n in sorted(members)]:
        judge_nccl(node, out, launcher, [n.host.name for n in good], lost)
