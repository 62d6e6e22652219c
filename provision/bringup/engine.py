"""Run stages over many nodes under a concurrency limit; one node's failure stops only that node.

Resuming needs no special case: every stage observes the live state (and the journal) before planning,
so a stage whose work was done before an interruption plans nothing and the run moves on. The plan is a
pure function of what was observed; apply carries out exactly the plan's actions.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from provision.bringup.model import STAGES, BringupResult, NodeResult, Outcome, StagePlan, StageResult
from provision.bringup.stage import Progress, Stage, StageContext
from provision.errors import InputError, ProvisionError
from provision.journal import Journal
from provision.journal.locks import NodeLocks
from provision.redfish.redact import scrub
from provision.spec import HostEntry


def select_stages(stages: Sequence[Stage], start: str | None = None, only: str | None = None,
                  end: str | None = None) -> list[Stage]:
    """The stages to run given --from, --only and --to (the last stage run); unknown names are usage errors."""
    names = [s.name for s in stages]
    for wanted in (start, only, end):
        if wanted is not None and wanted not in names:
            raise InputError(f"unknown stage {wanted!r}; stages: {', '.join(names)}")
    if only is not None:
        return [s for s in stages if s.name == only]
    first = names.index(start) if start is not None else 0
    last = names.index(end) if end is not None else len(names) - 1
    if last < first:
        raise InputError(f"--to {end} comes before --from {start}; stages: {', '.join(names)}")
    return list(stages[first:last + 1])


def run_bringup(
    hosts: Sequence[HostEntry],
    stages: Sequence[Stage],
    *,
    journal: Journal | None,
    plan_only: bool = False,
    concurrency: int = 4,
    progress: Progress | None = None,
    kind: str = "bringup",
    args: dict[str, object] | None = None,
) -> BringupResult:
    """Bring every host through `stages`; returns per-node results (never raises for a node).

    A run that changes nodes holds each node's lease in the journal for its whole duration: a node
    another run holds is refused (NodeLocked naming the holder) before anything is done to any node.
    `kind` names the run and the lease's owner (a clean is a run of stages too); `args` join the run's record."""
    if journal is None or plan_only:
        return _run(hosts, stages, journal, None, plan_only, concurrency, progress)
    locks = NodeLocks(journal)
    with locks.hold([h.name for h in hosts], owner=kind):
        return _run(hosts, stages, journal, locks, plan_only, concurrency, progress, kind, args)


def _run(hosts: Sequence[HostEntry], stages: Sequence[Stage], journal: Journal | None, locks: NodeLocks | None,
         plan_only: bool, concurrency: int, progress: Progress | None, kind: str = "bringup",
         args: dict[str, object] | None = None) -> BringupResult:
    run_id = None
    if journal is not None and not plan_only:
        run_id = journal.start_run(kind, ",".join(h.name for h in hosts),
                                   {"stages": [s.name for s in stages], **(args or {})})
    say = progress or (lambda node, stage, msg: None)

    def one(host: HostEntry) -> NodeResult:
        ctx = StageContext(host=host, journal=journal, run_id=run_id, progress=say, locks=locks, plan_only=plan_only)
        try:
            return _run_node(ctx, stages, plan_only)
        finally:
            _close(ctx)

    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix=kind) as pool:
        results = list(pool.map(one, hosts))
    result = BringupResult(run_id=run_id, plan_only=plan_only, nodes=results)
    if journal is not None and run_id is not None:
        journal.finish_run(run_id, "ok" if result.ok else "failed")
    return result


def bring_up_node(ctx: StageContext, stages: Sequence[Stage], done: Sequence[StageResult] = ()) -> NodeResult:
    """One node through `stages` (after `done`, the results of stages already completed), its sessions closed
    at the end; a failed stage ends the node's run. For a driver that runs node by node (provision.bringup.shared).
    """
    try:
        return _run_node(ctx, stages, ctx.plan_only, done)
    finally:
        _close(ctx)


def _run_node(ctx: StageContext, stages: Sequence[Stage], plan_only: bool,
              done: Sequence[StageResult] = ()) -> NodeResult:
    result = NodeResult(node=ctx.host.name, stages=list(done))
    for stage in stages:
        if plan_only and getattr(stage, "judges_changes", False) and any(
            s.outcome is Outcome.PLANNED for s in result.stages
        ):
            note = "runs after the planned changes; not judged from the state before them"
            result.stages.append(StageResult(stage=stage.name, outcome=Outcome.SKIPPED,
                                             plan=StagePlan(stage=stage.name, node=ctx.host.name, note=note)))
            continue
        stage_result = _run_stage(ctx, stage, plan_only)
        result.stages.append(stage_result)
        if stage_result.outcome is Outcome.FAILED:
            break
    return result


def _close(ctx: StageContext) -> None:
    """Close what the node's stages kept open (BMC sessions); a failure to log out is not the node's failure."""
    try:
        ctx.resources.close()
    except Exception as exc:  # logged out or not, the node's outcome stands
        ctx.say("done", f"closing sessions: {type(exc).__name__}")


def _run_stage(ctx: StageContext, stage: Stage, plan_only: bool) -> StageResult:
    started = time.monotonic()
    stage_id = None
    if ctx.journal is not None and ctx.run_id is not None:
        stage_id = ctx.journal.stage_started(ctx.run_id, ctx.host.name, stage.name)
    plan = StagePlan(stage=stage.name, node=ctx.host.name)
    try:
        ctx.say(stage.name, "observing")
        plan = stage.plan(ctx.host, stage.observe(ctx))
        outcome = _apply(ctx, stage, plan, plan_only)
        error = ""
    except ProvisionError as exc:
        outcome, error = Outcome.FAILED, _one_line(str(exc))
    except Exception as exc:  # a bug of ours: fail this node's stage only, and keep the journal whole
        outcome, error = Outcome.FAILED, _one_line(f"internal error: {type(exc).__name__}: {exc}")
    seconds = round(time.monotonic() - started, 3)
    if stage_id is not None and ctx.journal is not None:
        detail = error or "; ".join(a.describe() for a in plan.actions) or plan.note
        ctx.journal.stage_finished(stage_id, outcome.value, scrub(detail))
    ctx.say(stage.name, outcome.value if not error else f"failed: {error}")
    return StageResult(stage=stage.name, outcome=outcome, plan=plan, seconds=seconds, error=error)


def _one_line(text: str) -> str:
    """An error as it is journaled, printed and kept: one line, every registered secret masked (an
    exception's text can quote a request body, a URL with credentials, a library's repr)."""
    return scrub(" ".join(part.strip() for part in text.splitlines() if part.strip()))


def _apply(ctx: StageContext, stage: Stage, plan: StagePlan, plan_only: bool) -> Outcome:
    if plan.converged:
        if plan.actions and not plan_only:  # bookkeeping only: the node is as its spec says
            stage.apply(ctx, plan)
        return Outcome.CONVERGED
    if plan_only:
        return Outcome.PLANNED
    ctx.say(stage.name, f"applying {len(plan.actions)} action(s)")
    stage.apply(ctx, plan)
    return Outcome.APPLIED


__all__ = ["STAGES", "bring_up_node", "run_bringup", "select_stages"]
