"""The node-side checks as one unit: the probes they need, their evaluation (pure), and the inventory's waivers.

A verify run (gather, BMC, the phases across nodes) is provision/conformance/node.py's `verify_node`; `judged`
is where a node's results meet the inventory's waivers, once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from fnmatch import fnmatchcase, translate

from provision.conformance.checks import NODE_AREAS, burnin
from provision.conformance.checks._base import Context
from provision.conformance.facts import NodeFacts, Probe, Runner, ssh_runner
from provision.conformance.model import CheckResult, Level, Outcome
from provision.conformance.target import RunnerFor, Target
from provision.errors import InventoryError, ProvisionError
from provision.spec.fleet import LabDeclaration, Waiver
from provision.spec.model import NodeSpec


class CheckModuleError(ProvisionError):
    """The check modules disagree (one probe defined twice, one check id recorded twice): no verdict."""


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


def check_node(node: str, spec: NodeSpec, facts: NodeFacts, level: Level) -> Context:
    """Every node-side check of `level` from facts already gathered (pure: no I/O), before any waiver."""
    ctx = Context(node=node, spec=spec, facts=facts, level=level)
    for module in (*NODE_AREAS, burnin):
        module.evaluate(ctx)
    return ctx


def evaluate(
    node: str, spec: NodeSpec, facts: NodeFacts, level: Level, lab: LabDeclaration | None = None
) -> Context:
    """The node-side checks of `level` from facts already gathered, judged with the inventory's waivers (pure).

    `lab` is the inventory's declaration: the checks it waives are WAIVED with its reasons, every other
    check is judged as on real hardware. Nothing found on the node makes it a lab node.
    """
    ctx = check_node(node, spec, facts, level)
    ctx.results[:] = judged(ctx.results, (lab or LabDeclaration()).waivers)
    return ctx


def judged(results: Sequence[CheckResult], waivers: Sequence[Waiver]) -> list[CheckResult]:
    """A node's results with the inventory's waivers applied (the one place they are), each check id once."""
    return _unique(apply_waivers(results, waivers))


def waiver_for(check_id: str, waivers: Sequence[Waiver]) -> Waiver | None:
    """The first waiver whose pattern (a check id or an fnmatch pattern) matches `check_id`."""
    return next((w for w in waivers if fnmatchcase(check_id, w.pattern)), None)


def apply_waivers(results: Sequence[CheckResult], waivers: Sequence[Waiver]) -> list[CheckResult]:
    """Each result a waiver lists becomes WAIVED with the waiver's reason (what was found is kept)."""
    matchers = [(re.compile(translate(w.pattern)).match, w) for w in waivers]  # fnmatchcase, compiled once
    out = []
    for result in results:
        waiver = next((w for match, w in matchers if match(result.id)), None)
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

    def runner_for(host: Target) -> Runner:
        if host.ssh is None:
            raise InventoryError(f"{host.name}: no SSH endpoint in the inventory (set ansible_host)")
        return ssh_runner(host.ssh, timeout_s=GATHER_TIMEOUT_S[level])

    return runner_for


def _unique(results: list[CheckResult]) -> list[CheckResult]:
    ids: set[str] = set()
    for r in results:
        if r.id in ids:
            raise CheckModuleError(f"{r.node}: check id {r.id} recorded twice")
        ids.add(r.id)
    return results
