"""The one host reset: applies every staged firmware image and pending BIOS value, then verifies both.

observe reads FirmwareInventory, the BIOS (current and pending) and, from the journal, what was staged
since the last completed reset. A staged image whose component already runs the baseline needs no reset:
the reset happened (e.g. the controller was killed after asking for it), so it is not asked for twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from provision.bringup.model import Action, StagePlan
from provision.bringup.stage import StageContext
from provision.bringup.stages.bmc_session import BmcStage, bmc
from provision.bringup.stages.firmware import target_of
from provision.bringup.stages.staged import RESET_KIND, staged_since_reset
from provision.redfish.ops import bios as bios_ops
from provision.redfish.ops import firmware as fw
from provision.redfish.ops import power
from provision.redfish.ops.converge import ConvergeOptions, ConvergePlan, verify_after_reset
from provision.redfish.vendors import VendorPlugin
from provision.spec import HostEntry


@dataclass(frozen=True)
class ResetObserved:
    firmware: fw.FirmwareState
    bios: bios_ops.BiosState
    vendor: VendorPlugin
    staged: frozenset[str] = frozenset()


class HostReset(Action):
    """The reset, with what to verify after it: the staged steps and the pending BIOS changes."""

    firmware: tuple[fw.FirmwareStep, ...] = ()
    bios: bios_ops.BiosPlan | None = None


def plan_reset(host: HostEntry, observed: ResetObserved, fplan: fw.FirmwarePlan,
               bplan: bios_ops.BiosPlan) -> StagePlan:
    """Pure: one reset when a staged image is still behind or a BIOS value is pending, else nothing."""
    staged = tuple(s for s in fplan.steps if target_of(s) in observed.staged)
    pending = [c for c in bplan.changes if c.pending]
    if not staged and not pending:
        return StagePlan(stage="reset", node=host.name, note="nothing staged")
    what = sorted(target_of(s) for s in staged) + [f"bios {c.attribute}" for c in pending]
    action = HostReset(kind=RESET_KIND, target="host", after="applies " + "; ".join(what), firmware=staged,
                       bios=bplan.model_copy(update={"changes": pending}) if pending else None)
    return StagePlan(stage="reset", node=host.name, actions=(action,))


class ResetStage(BmcStage):
    """One host reset for everything staged (firmware and BIOS), then verify both took."""

    name = "reset"

    def observe(self, ctx: StageContext) -> ResetObserved:
        with bmc(ctx, self.opts) as node:
            firmware, bios = fw.observe(node.conn), bios_ops.observe(node)
            vendor = node.vendor
        return ResetObserved(firmware=firmware, bios=bios, vendor=vendor,
                             staged=frozenset(staged_since_reset(ctx.journal, ctx.host.name)))

    def plan(self, host: HostEntry, observed: ResetObserved) -> StagePlan:
        spec = host.spec
        fplan = fw.plan(spec.firmware, observed.firmware, observed.vendor,
                        allow_downgrade=self.opts.allow_downgrade)
        return plan_reset(host, observed, fplan, bios_ops.plan(spec.bios, observed.bios, observed.vendor))

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        for action in plan.actions:
            if not isinstance(action, HostReset):
                raise TypeError(f"the reset stage cannot apply {action.kind} {action.target}")
            with bmc(ctx, self.opts) as node:
                ctx.side_effect(self.name, action, partial(power.host_reset, node, self.clock, 900))
                verify = ConvergePlan(firmware=fw.FirmwarePlan(steps=list(action.firmware)), bios=action.bios)
                verify_after_reset(node, ctx.host.spec, verify, ConvergeOptions(), self.clock)
