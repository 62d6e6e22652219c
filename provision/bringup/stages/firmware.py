"""The firmware stage: immediate images flashed and verified now, host-reset images staged for one reset.

observe reads FirmwareInventory and, from the journal, what was staged since the last host reset and
which immediate flashes were started and never finished; plan is a pure function of that; apply sends
exactly the planned steps and re-reads the BMC only to follow each task and verify its effect.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from functools import partial

from provision.bringup.model import Action, StagePlan
from provision.bringup.stage import StageContext
from provision.bringup.stages.bmc import BmcStage, bmc
from provision.bringup.stages.staged import FLASH_KIND, STAGE_KIND, open_flashes, staged_since_reset
from provision.errors import CheckFailed
from provision.redfish.image_server import ImageServer
from provision.redfish.ops import firmware as fw
from provision.redfish.ops.converge import ConvergeOptions, send_step
from provision.redfish.vendors import VendorPlugin
from provision.spec import HostEntry


@dataclass(frozen=True)
class FirmwareObserved:
    """What the firmware stage plans from."""

    firmware: fw.FirmwareState
    vendor: VendorPlugin
    staged: frozenset[str] = frozenset()
    """Targets ("component version") sent for the next host reset since the last one (interrupted sends too)."""
    interrupted: frozenset[str] = frozenset()
    """Immediate flashes whose intent is journaled and whose outcome never was (the process died)."""


class FirmwareAction(Action):
    """One update to send, with everything apply needs: the step and the state it was planned from."""

    step: fw.FirmwareStep
    state: fw.FirmwareState


def target_of(step: fw.FirmwareStep) -> str:
    return f"{step.component} {step.version}"


def _kind(step: fw.FirmwareStep) -> str:
    return STAGE_KIND if step.needs_host_reset or step.apply_time == "OnReset" else FLASH_KIND


def plan_firmware(host: HostEntry, observed: FirmwareObserved, fplan: fw.FirmwarePlan) -> StagePlan:
    """Pure: a step per component behind the baseline, except those already staged for the reset."""
    if fplan.refused:
        raise CheckFailed(f"{host.name}: " + "; ".join(fplan.refused))
    running = {s.component: ",".join(sorted({e.version or "?" for e in s.entries}))
               for s in fw.status(host.spec.firmware, observed.firmware, observed.vendor)}
    actions = tuple(
        FirmwareAction(kind=_kind(s), target=target_of(s), before=running.get(s.component, ""), after=s.version,
                       needs_host_reset=s.needs_host_reset, step=s, state=observed.firmware)
        for s in fplan.steps if target_of(s) not in observed.staged
    )
    notes = []
    waiting = sorted(observed.staged & {target_of(s) for s in fplan.steps})
    if waiting:
        notes.append(f"staged, waiting for the host reset: {', '.join(waiting)}")
    resent = sorted(observed.interrupted & {a.target for a in actions})
    if resent:  # the flash did not take (the component still runs the old version): it is sent again
        notes.append(f"sent again, a flash was interrupted: {', '.join(resent)}")
    return StagePlan(stage="firmware", node=host.name, actions=actions, note="; ".join(notes) or "at baseline")


class FirmwareStage(BmcStage):
    """Firmware to the baseline: immediate images flashed and verified, host-reset images staged."""

    name = "firmware"

    def observe(self, ctx: StageContext) -> FirmwareObserved:
        with bmc(ctx, self.opts) as node:
            state = fw.observe(node.conn)
            vendor = node.vendor
        flashes = frozenset(a.target for a in open_flashes(ctx.journal, ctx.host.name))
        return FirmwareObserved(firmware=state, vendor=vendor,
                                staged=frozenset(staged_since_reset(ctx.journal, ctx.host.name)),
                                interrupted=flashes)

    def plan(self, host: HostEntry, observed: FirmwareObserved) -> StagePlan:
        fplan = fw.plan(host.spec.firmware, observed.firmware, observed.vendor,
                        allow_downgrade=self.opts.allow_downgrade)
        return plan_firmware(host, observed, fplan)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        actions = [_firmware_action(a) for a in plan.actions]
        for action in actions:
            fw.check_image(action.step)  # every image checked before anything is sent
        server = ImageServer(bind=self.opts.image_bind, advertise=self.opts.image_advertise) \
            if any(a.step.method == "simple" for a in actions) else None
        with bmc(ctx, self.opts) as node, server if server is not None else contextlib.nullcontext():
            for action in actions:
                ctx.say(self.name, action.describe())
                ctx.side_effect(self.name, action, partial(send_step, node, action.step, server, ConvergeOptions(),
                                                           self.clock, state=action.state))


def _firmware_action(action: Action) -> FirmwareAction:
    if not isinstance(action, FirmwareAction):
        raise TypeError(f"the firmware stage cannot apply {action.kind} {action.target}")
    return action
