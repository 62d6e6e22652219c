"""Run the conformance checks: gather each node's facts in one round trip, evaluate locally.

Nodes run in parallel (one SSH connection each); a node that cannot be reached gets a NodeReport
with `error` set and no verdicts, and the run goes on with the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from fnmatch import fnmatchcase

from provision.conformance.checks import NODE_AREAS, burnin, burnin_run, nfs
from provision.conformance.checks._base import Context
from provision.conformance.facts import GatherError, NodeFacts, Probe, Runner, gather, ssh_runner
from provision.conformance.model import CheckResult, Level, NodeReport, Outcome, RunReport
from provision.conformance.provenance import spec_digest
from provision.errors import InventoryError, ProvisionError
from provision.spec.fleet import HostEntry, LabDeclaration, Waiver
from provision.spec.model import NodeSpec

RunnerFor = Callable[[HostEntry], Runner]


class CheckModuleError(ProvisionError):
    """The check modules disagree (one probe defined twice, one check id recorded twice): no verdict."""

BmcHook = Callable[[Context, HostEntry], None]


def node_probes(spec: NodeSpec, level: Level) -> list[Probe]:
    """Every probe the checks need, each once (modules share some, e.g. systemctl and dpkg)."""
    seen: dict[str, Probe] = {}
    for module in (*NODE_AREAS, burnin):
        for probe in module.probes(spec, level):
            known = seen.get(probe.name)
            if known is not None and known != probe:
                raise CheckModuleError(f"two check modules define probe {probe.name} differently")
            seen[probe.name] = probe
    return list(seen.values())


def evaluate(
    node: str, spec: NodeSpec, facts: NodeFacts, level: Level, lab: LabDeclaration | None = None
) -> Context:
    """Every node-side check of `level` from facts already gathered (pure: no I/O).

    `lab` is the inventory's declaration: the checks it waives are WAIVED with its reasons, every other
    check is judged as on real hardware. Nothing found on the node makes it a lab node.
    """
    declared = lab or LabDeclaration()
    ctx = Context(node=node, spec=spec, facts=facts, level=level)
    for module in (*NODE_AREAS, burnin):
        module.evaluate(ctx)
    ctx.results[:] = apply_waivers(ctx.results, declared.waivers)
    return ctx


def waiver_for(check_id: str, waivers: Sequence[Waiver]) -> Waiver | None:
    """The first waiver whose pattern (a check id or an fnmatch pattern) matches `check_id`."""
    return next((w for w in waivers if fnmatchcase(check_id, w.pattern)), None)


def apply_waivers(results: Sequence[CheckResult], waivers: Sequence[Waiver]) -> list[CheckResult]:
    """Each result a waiver lists becomes WAIVED with the waiver's reason (what was found is kept)."""
    out = []
    for result in results:
        waiver = waiver_for(result.id, waivers)
        if waiver is None or result.outcome is Outcome.WAIVED:
            out.append(result)
            continue
        why = f"waived by the inventory (provision_lab_waivers {waiver.pattern}): {waiver.reason}"
        out.append(result.model_copy(update={"outcome": Outcome.WAIVED, "detail": why}))
    return out


# How long one node's gather may take: burn-in runs DCGM diag, NCCL, fio and ib_write_bw for minutes.
GATHER_TIMEOUT_S = {Level.QUICK: 60.0, Level.FULL: 180.0, Level.BURNIN: 3600.0}


def ssh_runner_for(level: Level) -> RunnerFor:
    """The production Runner factory: the system ssh, multiplexed, with the level's time limit."""

    def runner_for(host: HostEntry) -> Runner:
        if host.ssh is None:
            raise InventoryError(f"{host.name}: no SSH endpoint in the inventory (set ansible_host)")
        return ssh_runner(host.ssh, timeout_s=GATHER_TIMEOUT_S[level])

    return runner_for


def verify_node(
    host: HostEntry, level: Level, runner_for: RunnerFor | None = None, bmc: BmcHook | None = None
) -> NodeReport:
    """Gather, evaluate, and (when a hook is given) run the BMC-side checks of one node. At burn-in the
    node-local measurements run after the gather; the checks that need a peer node are waived (one node)."""
    report, facts = _verify_node(host, level, runner_for, bmc)
    report = _with_nfs([host], [report], {host.name: facts}, runner_for or ssh_runner_for(level))[0]
    if level is Level.BURNIN:
        return _with_fabric([host], [report], {host.name: facts}, runner_for or ssh_runner_for(level))[0]
    return report


def _verify_node(
    host: HostEntry, level: Level, runner_for: RunnerFor | None, bmc: BmcHook | None
) -> tuple[NodeReport, NodeFacts | None]:
    runner_for = runner_for or ssh_runner_for(level)
    try:
        run = runner_for(host)
        facts = gather(host.name, node_probes(host.spec, level), run)
        if level is Level.BURNIN:
            facts = burnin_run.measure_local(host, facts, run)
    except (GatherError, InventoryError) as exc:
        return NodeReport(node=host.name, profile=host.profile, spec_digest=spec_digest(host.spec),
                          error=str(exc)), None
    ctx = evaluate(host.name, host.spec, facts, level, host.lab)
    if bmc is not None and level is not Level.QUICK:
        bmc(ctx, host)
    return NodeReport(
        node=host.name,
        profile=host.profile,
        spec_digest=spec_digest(host.spec),
        lab=host.lab.lab,
        standins=host.lab.standins,  # the inventory's declaration, for display: nothing on the node is probed
        notice=host.lab.notice,
        gather_seconds=round(facts.seconds, 3),
        results=tuple(_unique(apply_waivers(ctx.results, host.lab.waivers))),
    ), facts


def _with_fabric(
    hosts: Sequence[HostEntry], reports: list[NodeReport], facts: dict[str, NodeFacts | None], runner_for: RunnerFor
) -> list[NodeReport]:
    """The burn-in checks across the run's nodes (IB pairs, multi-node NCCL) added to each node's report."""
    return _with_results(hosts, reports, burnin_run.across_nodes(hosts, facts, runner_for))


def _with_nfs(
    hosts: Sequence[HostEntry], reports: list[NodeReport], facts: dict[str, NodeFacts | None], runner_for: RunnerFor
) -> list[NodeReport]:
    """Phase 2 of the NFS probe (a node reads what another wrote on a shared export), when a spec has one."""
    if not any(m.shared for h in hosts for m in h.spec.nfs_mounts):
        return reports
    return _with_results(hosts, reports, nfs.across_nodes(hosts, facts, runner_for))


def _with_results(
    hosts: Sequence[HostEntry], reports: list[NodeReport], extra: dict[str, list[CheckResult]]
) -> list[NodeReport]:
    out = []
    for host, report in zip(hosts, reports, strict=True):
        added = apply_waivers(extra.get(host.name, []), host.lab.waivers)
        out.append(report.model_copy(update={"results": tuple(_unique([*report.results, *added]))}))
    return out


def _unique(results: list[CheckResult]) -> list[CheckResult]:
    ids: set[str] = set()
    for r in results:
        if r.id in ids:
            raise CheckModuleError(f"{r.node}: check id {r.id} recorded twice")
        ids.add(r.id)
    return results


def verify(
    hosts: Sequence[HostEntry],
    level: Level,
    runner_for: RunnerFor | None = None,
    bmc: BmcHook | None = None,
    max_parallel: int = 32,
    on_node: Callable[[NodeReport, float], None] | None = None,
) -> RunReport:
    """Verify every host in parallel; the report keeps the hosts' order. `on_node` hears of each node as it is
    done (its report and seconds), from the node's worker thread."""
    started = datetime.now().astimezone()
    t0 = time.monotonic()
    workers = max(1, min(max_parallel, len(hosts)))

    def one(host: HostEntry) -> tuple[NodeReport, NodeFacts | None]:
        began = time.monotonic()
        report, facts = _verify_node(host, level, runner_for, bmc)
        if on_node is not None:  # at burn-in: before the checks across nodes, which need every node's facts
            on_node(report, time.monotonic() - began)
        return report, facts

    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(one, hosts))
    reports = [report for report, _ in done]
    facts = {h.name: f for h, (_, f) in zip(hosts, done, strict=True)}
    reports = _with_nfs(hosts, reports, facts, runner_for or ssh_runner_for(level))
    if level is Level.BURNIN:
        reports = _with_fabric(hosts, reports, facts, runner_for or ssh_runner_for(level))
    return RunReport(level=level, started=started, seconds=round(time.monotonic() - t0, 3), nodes=tuple(reports))
