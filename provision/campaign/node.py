"""One node's turn in a campaign: observe -> drain -> flash -> re-observe and verify -> undrain.

Every decision starts from the BMC's own FirmwareInventory and TaskService, never from the journal,
so a node whose flash finished while the controller was dead is not flashed again, and a node
whose flash never started is not skipped.

Under a node lease (ctx.locks) the turn fences itself: right before each side effect (the drain hook,
each component's update request, the host reset) it checks that its lease is still its own and was
renewed recently enough (NodeLocks.check). When it is not, the turn is abandoned there: what was sent
stays sent and finished, nothing more is, the journal records why, and the node stays `active` for its
next holder, which re-reads the BMC before doing anything.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from provision.campaign.catalog import Catalog, Component
from provision.campaign.hooks import HookRunner, run_hook
from provision.campaign.updater import FirmwareState, Guard, NodeUpdater, Refused, Target, UpdateFailed, unguarded
from provision.errors import ProvisionError
from provision.journal.campaigns import CampaignStore, NodeState
from provision.journal.locks import NodeLocked, NodeLocks
from provision.redact import scrub


@dataclass(frozen=True)
class NodeContext:
    """What every node's turn shares."""

    catalog: Catalog
    store: CampaignStore
    run_id: int
    updater: NodeUpdater
    run_hook: HookRunner = run_hook
    poll_s: float = 2.0
    busy_timeout_s: float = 3600.0
    locks: NodeLocks | None = None
    """Node leases: a turn holds its node's, so no bring-up (or other campaign) changes it meanwhile."""


def applicable(components: Sequence[Component], state: FirmwareState) -> list[Component]:
    """Pure: the components whose `applies_to` fits the node's identity (none fit an identity not read, but
    those for `any` platform): the others are never sent to it."""
    return [c for c in components if c.target.fits(state.identity)]


def not_applicable(components: Sequence[Component], state: FirmwareState) -> str:
    """'' when some component fits the node; else one line naming its platform and what the images are for."""
    if applicable(components, state):
        return ""
    what = state.identity.name if state.identity is not None else "a platform that could not be read"
    images = "; ".join(sorted({c.target.describe() for c in components}))
    return f"not applicable: the node is {what}; the campaign's images are for {images}"


def pending(components: Sequence[Component], state: FirmwareState) -> list[Component]:
    """Components that apply to the node and whose reported version differs from the catalog's (and can be
    ordered against it: one that cannot is a problem of the node's plan, never an update)."""
    return [c for c in applicable(components, state) if state.versions.get(c.component) != c.version
            and c.component not in state.incomparable]


def mismatches(components: Sequence[Component], state: FirmwareState) -> list[str]:
    return [
        f"{c.component} is {state.versions.get(c.component) or 'missing'}, expected {c.version}"
        for c in applicable(components, state)
        if state.versions.get(c.component) != c.version
    ]


def observe_settled(ctx: NodeContext, target: Target) -> FirmwareState:
    """Observe, waiting while an update task (perhaps started before a crash) still runs."""
    deadline = time.monotonic() + ctx.busy_timeout_s
    components = ctx.catalog.ordered()
    while True:
        state = ctx.updater.observe(target, components)
        if not state.busy:
            return state
        if time.monotonic() > deadline:
            raise UpdateFailed(f"{target.name}: {_still_running(state)} after {ctx.busy_timeout_s:g} s")
        time.sleep(ctx.poll_s)


def _still_running(state: FirmwareState) -> str:
    """What keeps a node busy, for the wait's message: each component's running task where known."""
    if not state.running:
        return "an update task is still running"
    return "update task still running: " + ", ".join(f"{c} (task {t})" for c, t in sorted(state.running.items()))


def process_node(ctx: NodeContext, target: Target) -> NodeState:
    """Run one node's turn under its lease; record the outcome in the journal; never raises ProvisionError.

    A node whose lease another run holds (a bring-up on it) is refused: failed, naming the holder. A turn
    that fenced itself (its lease stale or lost before a side effect) returns ACTIVE: abandoned, journaled,
    the node left to its next holder."""
    if ctx.locks is None:
        return _turn(ctx, target)
    try:
        with ctx.locks.hold([target.name], owner=f"campaign {ctx.catalog.name}"):
            return _turn(ctx, target)
    except NodeLocked as exc:
        ctx.store.node_started(ctx.catalog.name, target.name, {})
        ctx.store.node_finished(ctx.catalog.name, target.name, NodeState.FAILED, {}, f"refused: {exc}")
        return NodeState.FAILED


def _turn(ctx: NodeContext, target: Target) -> NodeState:
    name = ctx.catalog.name
    try:
        before = observe_settled(ctx, target)
    except ProvisionError as exc:
        ctx.store.node_started(name, target.name, {})
        ctx.store.node_finished(name, target.name, NodeState.FAILED, {}, f"cannot read firmware: {exc}")
        return NodeState.FAILED
    ctx.store.node_started(name, target.name, before.versions)
    unfit = not_applicable(ctx.catalog.ordered(), before)
    if unfit:  # never touched: no drain, no update, no reset
        ctx.store.node_finished(name, target.name, NodeState.DONE, before.versions, unfit)
        return NodeState.DONE
    blocked = sorted({c.component for c in applicable(ctx.catalog.ordered(), before)} & set(before.incomparable))
    if blocked:  # nothing says whether an image is older or newer than what runs: nothing is sent
        why = "; ".join(before.incomparable[c] for c in blocked)
        ctx.store.node_finished(name, target.name, NodeState.FAILED, before.versions, f"nothing sent: {why}")
        return NodeState.FAILED
    todo = pending(ctx.catalog.ordered(), before)
    if not todo:
        ctx.store.node_finished(name, target.name, NodeState.DONE, before.versions)
        return NodeState.DONE
    try:
        error = _take_and_flash(ctx, target, todo, before)
    except Refused as exc:
        _abandoned(ctx, target, str(exc))
        return NodeState.ACTIVE
    after = _observe_quietly(ctx, target)
    if not error and after is not None:
        problems = mismatches(ctx.catalog.ordered(), after)
        error = "after the update: " + "; ".join(problems) if problems else ""
    if not error:
        error = _hook(ctx, "undrain", ctx.catalog.policy.hooks.undrain, target.name)
    state = NodeState.FAILED if error or after is None else NodeState.DONE
    if after is None and not error:
        error = "cannot read firmware after the update"
    ctx.store.node_finished(name, target.name, state, after.versions if after else {}, error)
    return state


def _take_and_flash(ctx: NodeContext, target: Target, todo: list[Component], before: FirmwareState) -> str:
    """Drain, then flash what is not already staged; returns an error text or ''. Refused when the turn's
    lease is stale or lost before a side effect (the firmware-update action is then journaled abandoned)."""
    guard = _guard(ctx, target.name)
    guard("the drain hook")
    error = _hook(ctx, "drain", ctx.catalog.policy.hooks.drain, target.name)
    if error:
        return error
    flash = [c for c in todo if before.staged.get(c.component) != c.version]
    reset = any(c.needs_host_reset for c in todo)
    journal = ctx.store.journal
    label = ",".join(f"{c.component}={c.version}" for c in flash) or "(staged only: reset)"
    action = journal.action_started(ctx.run_id, target.name, "campaign", "firmware-update", label)
    ctx.store.node_flashing(ctx.catalog.name, target.name, [c.component for c in flash])
    try:
        ctx.updater.update(target, flash, reset, guard)
    except Refused as exc:
        journal.action_finished(action, "abandoned", str(exc))
        raise
    except ProvisionError as exc:
        journal.action_finished(action, "failed", str(exc))
        return f"update failed: {exc}"
    journal.action_finished(action, "ok")
    return ""


def _guard(ctx: NodeContext, node: str) -> Guard:
    """Right before each side effect: the node's lease is still this turn's, and fresh (NodeLocks.check)."""
    locks = ctx.locks
    if locks is None:
        return unguarded

    def guard(what: str) -> None:
        try:
            locks.check(node, what)
        except NodeLocked as exc:
            raise Refused(str(exc)) from None
    return guard


def _abandoned(ctx: NodeContext, target: Target, why: str) -> None:
    """Journal the abandoned turn (one line naming the node and why); the node stays active."""
    action = ctx.store.journal.action_started(ctx.run_id, target.name, "campaign", "turn-abandoned", why)
    ctx.store.journal.action_finished(action, "abandoned", why)
    ctx.store.node_abandoned(ctx.catalog.name, target.name, why)


def _observe_quietly(ctx: NodeContext, target: Target) -> FirmwareState | None:
    try:
        return observe_settled(ctx, target)
    except ProvisionError:
        return None


def _hook(ctx: NodeContext, kind: str, template: str | None, node: str) -> str:
    if not template:
        return ""
    hooks = ctx.catalog.policy.hooks
    action = ctx.store.journal.action_started(ctx.run_id, node, "campaign", kind, scrub(template))
    result = ctx.run_hook(template, node, ctx.catalog.name, hooks.timeout_s, env_allow=hooks.env_allow)
    ctx.store.journal.action_finished(action, "ok" if result.ok else "failed", scrub(result.describe()))
    return "" if result.ok else f"{kind} hook failed ({result.describe()})"
