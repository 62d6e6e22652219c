"""Verify nodes: the one way a node is verified, for `provision verify`, the bring-up's verify stage and
`provision verify --local`.

`verify_node` judges one node: its facts gathered in one round trip (at burn-in, the node-local measurements
after it), the node-side checks (pure), the BMC-side checks from the run's BMC source (bmc_source), the NVMe
wear kept in the journal when the run names one, then the phases across the nodes of its run (NFS reads of
another node's file, burn-in pairs), and the inventory's waivers applied once over all of it. `verify` runs a
fleet: every node's first part in parallel, the phases across nodes once they all are gathered, then each
node's `verify_node` with what they found. A node that cannot be reached gets a NodeReport with `error` set
and no node-side verdicts, and the run goes on with the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from provision.conformance import across_burnin, across_nfs
from provision.conformance.bmc_source import BmcSource, check_bmc
from provision.conformance.facts import GatherError, NodeFacts, gather
from provision.conformance.model import CheckResult, Level, NodeReport, RunReport
from provision.conformance.provenance import spec_digest
from provision.conformance.runner import check_node, judged, node_probes, ssh_runner_for
from provision.conformance.target import RunnerFor, Target
from provision.errors import InventoryError

if TYPE_CHECKING:
    from provision.journal.location import Location


@dataclass(frozen=True)
class Reach:
    """How a verify run reaches its nodes and their BMCs, as its caller says (nothing else differs between them).

    `runner_for`: how a script runs on a node (None: the system ssh with the level's time limit). `bmc`: where
    the BMC checks' facts come from (None: no BMC checks at all). `sel_since`: SEL entries from then on count;
    without it, from the node's last bring-up in `journal`. `journal`: where NVMe wear readings are kept and
    the last bring-up is read (None: neither).
    """

    runner_for: RunnerFor | None = None
    bmc: BmcSource | None = None
    sel_since: datetime | None = None
    journal: Location | None = None

    def runner(self, level: Level) -> RunnerFor:
        return self.runner_for or ssh_runner_for(level)


@dataclass(frozen=True)
class Observed:
    """One node's first part: its facts (None: could not be gathered, `error` says why) and results so far."""

    facts: NodeFacts | None
    results: list[CheckResult] = field(default_factory=list)
    error: str | None = None


def observe_node(host: Target, level: Level, reach: Reach) -> Observed:
    """Gather (at burn-in, measure after), evaluate the node-side checks, then the BMC-side ones and the wear
    projection; no waiver yet."""
    runner_for = reach.runner(level)
    try:
        run = runner_for(host)
        facts = gather(host.name, node_probes(host.spec, level), run)
        if level is Level.BURNIN:
            facts = across_burnin.measure_local(host, facts, run)
    except (GatherError, InventoryError) as exc:
        return Observed(facts=None, error=str(exc))
    ctx = check_node(host.name, host.spec, facts, level)
    if level is not Level.QUICK:
        if reach.bmc is not None:
            check_bmc(ctx, host, reach.bmc, reach.sel_since or _last_bringup(host.name, reach.journal))
        if reach.journal is not None:
            from provision.conformance.wear import keep_wear

            keep_wear(ctx, reach.journal)  # NVMe endurance projection from the journal's readings
    return Observed(facts=facts, results=ctx.results)


def _last_bringup(node: str, journal: Location | None) -> datetime | None:
    if journal is None:
        return None
    from provision.conformance.since import last_bringup

    return last_bringup(node, journal)


def across(hosts: Sequence[Target], level: Level, facts: dict[str, NodeFacts | None],
           reach: Reach) -> dict[str, list[CheckResult]]:
    """The phases across the nodes of one run (the NFS reads when a spec shares an export; burn-in pairs and
    multi-node NCCL at burn-in): each node's added results, per name."""
    runner_for = reach.runner(level)
    out: dict[str, list[CheckResult]] = {h.name: [] for h in hosts}
    if any(m.shared for h in hosts for m in h.spec.nfs_mounts):
        for name, found in across_nfs.across_nodes(hosts, facts, runner_for).items():
            out[name] += found
    if level is Level.BURNIN:
        for name, found in across_burnin.across_nodes(hosts, facts, runner_for).items():
            out[name] += found
    return out


def verify_node(host: Target, level: Level, reach: Reach | None = None, *, observed: Observed | None = None,
                crossed: list[CheckResult] | None = None) -> NodeReport:
    """One node's report: observed (unless a fleet run already did), the phases across nodes (a run of one
    unless `crossed` brings the fleet's), and the inventory's waivers applied once over every result."""
    reach = reach or Reach()
    seen = observed if observed is not None else observe_node(host, level, reach)
    if crossed is None:
        crossed = across([host], level, {host.name: seen.facts}, reach)[host.name]
    return _report(host, seen, crossed)


def _report(host: Target, seen: Observed, crossed: list[CheckResult]) -> NodeReport:
    results = tuple(judged([*seen.results, *crossed], host.lab.waivers))
    if seen.facts is None:
        return NodeReport(node=host.name, profile=host.profile, spec_digest=spec_digest(host.spec),
                          error=seen.error, results=results)
    return NodeReport(
        node=host.name,
        profile=host.profile,
        spec_digest=spec_digest(host.spec),
        lab=host.lab.lab,
        standins=host.lab.standins,  # the inventory's declaration, for display: nothing on the node is probed
        notice=host.lab.notice,
        gather_seconds=round(seen.facts.seconds, 3),
        results=results,
    )


def verify(
    hosts: Sequence[Target],
    level: Level,
    reach: Reach | None = None,
    max_parallel: int = 32,
    on_node: Callable[[NodeReport, float], None] | None = None,
) -> RunReport:
    """Verify every host, in parallel; the report keeps the hosts' order. `on_node` hears of each node as its
    own part is done (its report before the phases across nodes, and seconds), from the node's worker thread."""
    reach = reach or Reach()
    started = datetime.now().astimezone()
    t0 = time.monotonic()

    def one(host: Target) -> Observed:
        began = time.monotonic()
        seen = observe_node(host, level, reach)
        if on_node is not None:  # at burn-in: before the checks across nodes, which need every node's facts
            on_node(_report(host, seen, []), time.monotonic() - began)
        return seen

    with ThreadPoolExecutor(max_workers=max(1, min(max_parallel, len(hosts)))) as pool:
        seen = list(pool.map(one, hosts))
    crossed = across(hosts, level, {h.name: s.facts for h, s in zip(hosts, seen, strict=True)}, reach)
    reports = [verify_node(h, level, reach, observed=s, crossed=crossed[h.name])
               for h, s in zip(hosts, seen, strict=True)]
    return RunReport(level=level, started=started, seconds=round(time.monotonic() - t0, 3), nodes=tuple(reports))
