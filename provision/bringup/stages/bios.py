"""The BIOS stage: attributes to the spec, validated against the registry, written to the pending resource.

observe reads current, pending and the registry; plan (pure) is one write carrying its attributes and
values; apply sends that write and nothing else (the reset stage verifies it after the host reset).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from provision.bringup.model import Action, StagePlan
from provision.bringup.stage import StageContext
from provision.bringup.stages.bmc_session import BmcStage, bmc
from provision.errors import CheckFailed
from provision.redfish.ops import bios as bios_ops
from provision.redfish.vendors import VendorPlugin
from provision.spec import HostEntry

WRITE_KIND = "bios-write"


@dataclass(frozen=True)
class BiosObserved:
    bios: bios_ops.BiosState
    vendor: VendorPlugin


class BiosWrite(Action):
    """One PATCH of the pending resource: the attributes and values in `plan.writes`."""

    plan: bios_ops.BiosPlan


def plan_bios(host: HostEntry, bplan: bios_ops.BiosPlan) -> StagePlan:
    """Pure: one write of every attribute that differs and is not already pending."""
    if bplan.invalid:
        raise CheckFailed(f"{host.name}: BIOS values refused before sending: " + "; ".join(bplan.invalid))
    waiting = [c.attribute for c in bplan.changes if c.pending]
    note = f"pending until the host reset: {', '.join(waiting)}" if waiting else "BIOS matches the spec"
    writes = [c for c in bplan.changes if not c.pending]
    if not writes:
        return StagePlan(stage="bios", node=host.name, note=note)
    what = "; ".join(f"{c.attribute} {c.current} -> {c.target}" for c in writes)
    action = BiosWrite(kind=WRITE_KIND, target=f"{len(writes)} attribute(s)", after=what, needs_host_reset=True,
                       plan=bplan)
    return StagePlan(stage="bios", node=host.name, actions=(action,), note=note if waiting else "")


class BiosStage(BmcStage):
    """BIOS attributes to the spec, validated against the registry, written to the pending resource."""

    name = "bios"

    def observe(self, ctx: StageContext) -> BiosObserved:
        with bmc(ctx, self.opts) as node:
            return BiosObserved(bios=bios_ops.observe(node), vendor=node.vendor)

    def plan(self, host: HostEntry, observed: BiosObserved) -> StagePlan:
        return plan_bios(host, bios_ops.plan(host.spec.bios, observed.bios, observed.vendor))

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        with bmc(ctx, self.opts) as node:
            for action in plan.actions:
                if not isinstance(action, BiosWrite):
                    raise TypeError(f"the BIOS stage cannot apply {action.kind} {action.target}")
                ctx.say(self.name, action.describe())
                ctx.side_effect(self.name, action, partial(bios_ops.apply, node, action.plan))
