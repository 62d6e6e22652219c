"""`campaign plan`: observe every target (read-only), then decide per node and wave (pure)."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from provision.campaign.catalog import Catalog
from provision.campaign.node import applicable, not_applicable, pending
from provision.campaign.updater import FirmwareState, NodeUpdater, Target
from provision.campaign.waves import plan_waves
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
    return CampaignPlan(
        campaign=catalog.name, nodes=plans, waves=plan_waves(busy, catalog.policy.waves),
        at_baseline=[p.node for p in plans if not p.needs_work and not p.not_applicable],
        not_applicable=[p.node for p in plans if p.not_applicable], retired=sorted(retired),
    )


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
