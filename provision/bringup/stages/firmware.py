"""The firmware stage: immediate images flashed and verified now, host-reset images staged for one reset.

observe reads FirmwareInventory, the BMC's update tasks (as the campaign reads them: campaign.evidence) and,
from the journal, what was staged since the last host reset and which immediate flashes were started and never
finished; plan is a pure function of that; apply sends exactly the planned steps and re-reads the BMC only to
follow each task and verify its effect. A component whose update task still runs is never sent again.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from functools import partial

from provision.bringup.model import Action, StagePlan
from provision.bringup.stage import StageContext
from provision.bringup.stages.bmc_session import BmcStage, bmc
from provision.bringup.stages.staged import FLASH_KIND, STAGE_KIND, open_flashes, staged_since_reset
from provision.campaign.evidence import Evidence, update_evidence
from provision.errors import CheckFailed, ChecksIncomplete
from provision.redfish.connector import ROOT
from provision.redfish.image_server import ImageServer
from provision.redfish.ops import firmware as fw
from provision.redfish.ops.converge import ConvergeOptions, send_step
from provision.redfish.ops.session import Node
from provision.redfish.resources import Task
from provision.redfish.vendors import VendorPlugin
from provision.spec import HostEntry
from provision.spec.firmware import FirmwareComponent

TASKS = f"{ROOT}/TaskService/Tasks"


@dataclass(frozen=True)
class FirmwareObserved:
    """What the firmware stage plans from."""

    firmware: fw.FirmwareState
    vendor: VendorPlugin
    staged: frozenset[str] = frozenset()
    """Targets ("component version") sent for the next host reset since the last one (interrupted sends too)."""
    interrupted: frozenset[str] = frozenset()
    """Immediate flashes whose intent is journaled and whose outcome never was (the process died)."""
    evidence: Evidence = field(default_factory=Evidence)
    """What the BMC's update tasks say: a component's task still running, an image awaiting the reset."""


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
    if fplan.incomparable:  # not known to be older: never flashed, and the bring-up stops here, saying why
        raise ChecksIncomplete(f"{host.name}: nothing sent: " + "; ".join(fplan.incomparable.values()))
    running = {c: t for c, t in observed.evidence.running.items() if c in {s.component for s in fplan.steps}}
    if running:  # sent before (by a run that died, or another controller), outlived its wait: never sent again
        raise CheckFailed(f"{host.name}: update task still running: {_tasks(running)}; nothing sent, "
                          "run again once it ends")
    staged = observed.staged | {f"{c} {v}" for c, v in observed.evidence.staged.items()}
    versions = {s.component: ",".join(sorted({e.version or "?" for e in s.entries}))
               for s in fw.status(host.spec.firmware, observed.firmware, observed.vendor)}
    actions = tuple(
        FirmwareAction(kind=_kind(s), target=target_of(s), before=versions.get(s.component, ""), after=s.version,
                       needs_host_reset=s.needs_host_reset, step=s, state=observed.firmware)
        for s in fplan.steps if target_of(s) not in staged
    )
    notes = []
    waiting = sorted(staged & {target_of(s) for s in fplan.steps})
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
            state, tasks = self._settled(ctx, node)
            vendor = node.vendor
        flashes = frozenset(a.target for a in open_flashes(ctx.journal, ctx.host.name))
        return FirmwareObserved(firmware=state, vendor=vendor,
                                staged=frozenset(staged_since_reset(ctx.journal, ctx.host.name)),
                                interrupted=flashes,
                                evidence=task_evidence(tasks, ctx.host.spec.firmware, state, vendor))

    def _settled(self, ctx: StageContext, node: Node) -> tuple[fw.FirmwareState, list[Task]]:
        """FirmwareInventory and the update tasks, once no baseline component's task still runs: a task a run
        that died (or another controller) started is waited for, within that component's task timeout, as a
        campaign waits for it; plan refuses a component whose task outlived that, and never sends it again."""
        baseline = ctx.host.spec.firmware
        state, tasks = _read(node)
        running = task_evidence(tasks, baseline, state, node.vendor).running
        if not running:
            return state, tasks
        bound = max(fw.TASK_TIMEOUT_S.get(c, fw.DEFAULT_TASK_TIMEOUT_S) for c in running)
        ctx.say(self.name, f"waiting up to {bound:g} s for the update tasks already running: {_tasks(running)}")
        deadline = self.clock.now() + bound
        with node.conn.waiting(bound):
            while running and self.clock.now() < deadline:
                self.clock.sleep(self.clock.poll_s)
                state, tasks = _read(node)
                running = task_evidence(tasks, baseline, state, node.vendor).running
        return state, tasks

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


def _read(node: Node) -> tuple[fw.FirmwareState, list[Task]]:
    """The update tasks, then FirmwareInventory: a task seen ended has its effect in the inventory read after."""
    tasks = [Task.parse(t) for t in node.conn.members(TASKS)]
    return fw.observe(node.conn), tasks


def _tasks(running: dict[str, str]) -> str:
    return ", ".join(f"{c} (task {t})" for c, t in sorted(running.items()))


def task_evidence(tasks: list[Task], baseline: tuple[FirmwareComponent, ...], state: fw.FirmwareState,
                  vendor: VendorPlugin) -> Evidence:
    """Pure: the campaign's reading of the update tasks (campaign.evidence), for the baseline's components."""
    rows = fw.status(baseline, state, vendor)
    versions: dict[str, str | None] = {r.component: r.target if r.verdict == "ok" else None for r in rows}
    entries = {r.component: [e.uri for e in r.entries] for r in rows}
    return update_evidence(tasks, [c for c in baseline if c.component in versions], versions, entries)


def _firmware_action(action: Action) -> FirmwareAction:
    if not isinstance(action, FirmwareAction):
        raise TypeError(f"the firmware stage cannot apply {action.kind} {action.target}")
    return action
