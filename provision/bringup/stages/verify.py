"""The verify stage (the os stage: os_stage.py; configure: configure.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

from provision.bringup.model import Action, StagePlan
from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.bringup.stages.bmc_session import bmc
from provision.conformance import node as conformance  # conformance.verify_node: the one way a node is verified
from provision.conformance.bmc_source import HeldSession
from provision.conformance.model import Level, NodeReport, Outcome
from provision.errors import CheckFailed
from provision.redfish.connector import Connector
from provision.scheduler.hooks import SlurmNote, tell_slurm
from provision.scheduler.slurm import SlurmAction
from provision.spec import HostEntry


def _run_started(ctx: StageContext) -> datetime | None:
    """When this bring-up run began: SEL entries before it are history, not findings."""
    if ctx.journal is None or ctx.run_id is None:
        return None
    run = ctx.journal.run(ctx.run_id)
    return datetime.fromtimestamp(run.started_at, UTC) if run else None


class Verified(NodeReport):
    """The verify stage's observation: the node's report, and what Slurm was told (provision_slurm)."""

    slurm: SlurmNote = SlurmNote()

    @classmethod
    def of(cls, report: NodeReport, slurm: SlurmNote) -> Verified:
        return cls.model_validate({**dict(report), "slurm": slurm})


class VerifyStage:
    """Conformance of the node (and its BMC) to the spec; a failure stops the node with the failing checks."""

    name = "verify"
    judges_changes = True  # in --plan, judged only when nothing before it would change

    def __init__(self, opts: BringupOptions) -> None:
        self.opts = opts

    def observe(self, ctx: StageContext) -> Verified:
        report = self._verify(ctx)
        if ctx.plan_only:
            return Verified.of(report, SlurmNote())

        def record(action: SlurmAction, do: Callable[[], None]) -> None:  # journaled as the stage's side effect
            ctx.side_effect(self.name, Action(kind=f"slurm-{action.kind.value}", target=action.node,
                                              after=action.reason or action.why), do)

        return Verified.of(report, tell_slurm(ctx.host, report, record))

    def _verify(self, ctx: StageContext) -> NodeReport:
        @contextmanager
        def session() -> Iterator[Connector]:  # the node's one session, opened here if no stage did
            with bmc(ctx, self.opts) as node:
                yield node.conn

        reach = conformance.Reach(bmc=HeldSession(session), sel_since=_run_started(ctx))
        return conformance.verify_node(ctx.host, Level(self.opts.verify_level), reach)

    def plan(self, host: HostEntry, observed: NodeReport) -> StagePlan:
        slurm = observed.slurm if isinstance(observed, Verified) else None
        told = f"; {slurm.text}" if slurm and slurm.text else ""
        if observed.error:
            raise CheckFailed(f"{host.name}: conformance could not run: {observed.error}{told}")
        # a check that could not be made (ERROR) stops the node as a failure does: never a pass
        parts = []
        if observed.failed:
            shown = "; ".join(f"{r.id}: expected {r.expected}, found {r.found}" for r in observed.failed[:5])
            parts.append(f"{len(observed.failed)} check(s) failed: {shown}")
        if observed.errors:
            shown = "; ".join(f"{r.id}: {r.detail}" for r in observed.errors[:3])
            parts.append(f"{len(observed.errors)} check(s) could not be made: {shown}")
        if parts:
            raise CheckFailed(f"{host.name}: " + "; ".join(parts) + told)
        if slurm and slurm.failed:  # conformant, but still drained in Slurm: not done
            raise CheckFailed(f"{host.name}: conformant{told}")
        counts = observed.counts()
        areas = Counter(r.area for r in observed.results if r.outcome in (Outcome.PASS, Outcome.WARN))
        by_area = ", ".join(f"{area} {count}" for area, count in sorted(areas.items()))
        warned = "; ".join(f"{r.id}: {r.found}" for r in observed.warnings[:3])
        note = (f"{counts[Outcome.PASS]} checks passed, {counts[Outcome.WARN]} warned, "
                f"{counts[Outcome.WAIVED]} waived ({by_area})")
        note += f"; warnings: {warned}" if warned else ""
        return StagePlan(stage=self.name, node=host.name, note=note + told)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:  # verification changes nothing
        return None
