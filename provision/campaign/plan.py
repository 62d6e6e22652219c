"""`campaign plan`: observe every target (read-only), then decide per node and wave (pure).

`campaign start` reads less before it starts: the targets in order until its canary wave is known (first_plan),
and the rest while the canary runs (Rest, later_plan); the waves are those build_plan gives for all of them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from provision.campaign.catalog import Catalog
from provision.campaign.node import applicable, not_applicable, pending
from provision.campaign.updater import FirmwareState, NodeUpdater, Target
from provision.campaign.waves import batch_size, canary_size, plan_waves
from provision.campaign.workers import Workers
from provision.errors import ProvisionError
from provision.redfish.ops.session import cause_of


class Update(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    component: str
    current: str | None
    target: str
    staged: bool = False


class NodePlan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    error: str = ""
    """Why the node's firmware could not be read (it could not look: never at baseline)."""
    problems: list[str] = []
    """Running versions that cannot be ordered against the catalog's, naming both: the node is not flashed."""
    not_applicable: str = ""
    """Why no image of the campaign fits the node (its platform): it is in no wave and never touched."""
    updates: list[Update] = []
    host_reset: bool = False

    @property
    def needs_work(self) -> bool:
        return bool(self.updates or self.error or self.problems)


class Unread(BaseModel):
    """Nodes whose firmware could not be read for one cause (the reason without the node's own name)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cause: str
    nodes: list[str]


class CampaignPlan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    campaign: str
    nodes: list[NodePlan]
    waves: list[list[str]]
    at_baseline: list[str]
    not_applicable: list[str] = []
    retired: list[str] = []
    """Targets the journal marks retired (`provision retire`): not read, in no wave, never touched."""

    @property
    def unread(self) -> list[Unread]:
        """The nodes that could not be read, grouped by cause, the most widely shared first: a cause every
        node shares (no credentials given, no route) is one entry, said once."""
        groups: dict[str, list[str]] = {}
        for p in self.nodes:
            if p.error:
                groups.setdefault(cause_of(p.node, p.error), []).append(p.node)
        return [Unread(cause=c, nodes=n) for c, n in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]

    @property
    def with_problems(self) -> list[str]:
        """Nodes read, with a running version that cannot be compared with the catalog's."""
        return [p.node for p in self.nodes if p.problems and not p.error]


def observe_all(
    targets: Sequence[Target], catalog: Catalog, updater: NodeUpdater, workers: int | None = None
) -> dict[str, FirmwareState | str]:
    """Every target's firmware, or the one-line reason it could not be read; `workers` BMCs at a time (default:
    the campaign's concurrency, as its waves), on threads all started before the first read."""
    components = catalog.ordered()

    def one(target: Target) -> FirmwareState | str:
        try:
            return updater.observe(target, components)
        except ProvisionError as exc:
            return str(exc)

    if not targets:
        return {}
    with Workers(min(workers or catalog.policy.concurrency, len(targets)), prefix="observe") as pool:
        futures = pool.submit(one, targets)
        return {t.name: f.result() for t, f in zip(targets, futures, strict=True)}  # type: ignore[misc]


def build_plan(catalog: Catalog, observed: dict[str, FirmwareState | str],
               retired: Sequence[str] = ()) -> CampaignPlan:
    """Per node the pending updates; waves over the nodes with work (unreadable ones included); `retired`
    targets (left out of `observed`) are listed as such and planned nowhere."""
    plans = [_node_plan(catalog, name, state) for name, state in observed.items() if name not in retired]
    busy = [p.node for p in plans if p.needs_work]
    return _plan(catalog, plans, plan_waves(busy, catalog.policy.waves, canary_of=len(plans)), retired)


def first_plan(catalog: Catalog, order: Sequence[str], observed: dict[str, FirmwareState | str],
               retired: Sequence[str] = ()) -> CampaignPlan | None:
    """The plan a campaign starts with, from the targets read so far (`observed`: the first of `order`, the
    targets in order, retired ones left out of both): the canary wave, once the first canary_size(all targets)
    nodes with work are among them; every wave once all are read; None while more must be read.
    Its canary is build_plan's over all targets, so first_plan + later_plan = build_plan (tested as tables)."""
    plans = [_node_plan(catalog, name, observed[name]) for name in order if name in observed]
    if len(plans) == len(order):
        return build_plan(catalog, {p: observed[p] for p in order}, retired)
    canary = canary_size(catalog.policy.waves, len(order))
    busy = [p.node for p in plans if p.needs_work]
    if canary == 0 or len(busy) < canary:
        return None
    return _plan(catalog, plans, [busy[:canary]], retired)


def to_read(catalog: Catalog, order: Sequence[str], observed: dict[str, FirmwareState | str]) -> list[str]:
    """The next targets of `order` to read before first_plan can say the canary: as many as the canary still
    lacks (all the rest when the policy has no canary)."""
    unread = [n for n in order if n not in observed]
    canary = canary_size(catalog.policy.waves, len(order))
    if not canary:
        return unread
    busy = sum(1 for n in order if n in observed and _node_plan(catalog, n, observed[n]).needs_work)
    return unread[: max(1, canary - busy)]


def later_plan(catalog: Catalog, planned: int, observed: dict[str, FirmwareState | str]) -> CampaignPlan:
    """The waves after the first (`planned` nodes in them) over the targets read since (in order): batches sized
    for every node with work (WavePolicy.budget), as build_plan's."""
    plans = [_node_plan(catalog, name, state) for name, state in observed.items()]
    busy = [p.node for p in plans if p.needs_work]
    size = batch_size(catalog.policy.waves, planned + len(busy))
    return _plan(catalog, plans, [busy[i: i + size] for i in range(0, len(busy), size)], ())


def _plan(catalog: Catalog, plans: list[NodePlan], waves: list[list[str]], retired: Sequence[str]) -> CampaignPlan:
    return CampaignPlan(
        campaign=catalog.name, nodes=plans, waves=waves,
        at_baseline=[p.node for p in plans if not p.needs_work and not p.not_applicable],
        not_applicable=[p.node for p in plans if p.not_applicable], retired=sorted(retired),
    )


@dataclass
class Started:
    """What `campaign start` read before it starts (its first waves), and the targets it reads as they run."""

    plan: CampaignPlan
    rest: list[Target]


def plan_start(targets: Sequence[Target], catalog: Catalog, updater: NodeUpdater,
               retired: Sequence[str] = ()) -> Started:
    """Read the targets in order, as many at a time as the canary still lacks (to_read), until first_plan says
    the canary; the rest are read while it runs (Rest)."""
    order = [t for t in targets if t.name not in retired]
    names = [t.name for t in order]
    by_name = {t.name: t for t in order}
    observed: dict[str, FirmwareState | str] = {}
    while (found := first_plan(catalog, names, observed, retired)) is None:
        observed.update(observe_all([by_name[n] for n in to_read(catalog, names, observed)], catalog, updater))
    return Started(found, [t for t in order if t.name not in observed])


@dataclass
class Rest:
    """The targets a campaign starts without having read (CampaignRecord.unplanned): read while its first waves
    run, with the campaign's concurrency, then planned into the waves after them (later_plan)."""

    catalog: Catalog
    targets: list[Target]
    updater: NodeUpdater
    report: Callable[[CampaignPlan], None] = field(default=lambda plan: None)
    """Told the plan of these targets (the CLI prints the nodes not applicable, as for the first ones)."""

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.targets]

    def waves(self, planned: int) -> list[list[str]]:
        """Read them and plan their waves, after the campaign's first `planned` nodes."""
        plan = later_plan(self.catalog, planned, observe_all(self.targets, self.catalog, self.updater))
        self.report(plan)
        return plan.waves


def _node_plan(catalog: Catalog, name: str, state: FirmwareState | str) -> NodePlan:
    if isinstance(state, str):
        return NodePlan(node=name, error=state)
    unfit = not_applicable(catalog.ordered(), state)
    if unfit:
        return NodePlan(node=name, not_applicable=unfit)
    todo = pending(catalog.ordered(), state)
    updates = [
        Update(component=c.component, current=state.versions.get(c.component), target=c.version,
               staged=state.staged.get(c.component) == c.version)
        for c in todo
    ]
    return NodePlan(node=name, updates=updates, host_reset=any(c.needs_host_reset for c in todo),
                    problems=[state.incomparable[c.component] for c in applicable(catalog.ordered(), state)
                              if c.component in state.incomparable])
