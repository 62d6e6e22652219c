"""Stages that talk to the BMC: preflight, firmware, bios, and the one host reset."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from provision.bringup.model import Action, StagePlan
from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.bringup.stages.staged import RESET_KIND, STAGE_KIND, staged_since_reset
from provision.errors import CheckFailed
from provision.redfish.image_server import ImageServer
from provision.redfish.ops import bios as bios_ops
from provision.redfish.ops import firmware as fw
from provision.redfish.ops import inventory as inv_ops
from provision.redfish.ops import power
from provision.redfish.ops.converge import ConvergeOptions, ConvergePlan, send_step, verify_after_reset
from provision.redfish.ops.session import Node, connect, node_facts, options_for
from provision.redfish.ops.waiting import Clock


@contextmanager
def bmc(ctx: StageContext, opts: BringupOptions) -> Iterator[Node]:
    """The node's BMC session: logged in once per run and shared by its stages (the connector logs in
    again by itself when a BMC reset ends the session)."""
    yield ctx.keep("bmc", lambda: _session(ctx, opts))


@contextmanager
def _session(ctx: StageContext, opts: BringupOptions) -> Iterator[Node]:
    with connect(options_for(ctx.host.name, ctx.host.bmc, insecure=opts.insecure)) as conn:
        yield node_facts(conn)


class _BmcStage:
    name = "bmc"

    def __init__(self, opts: BringupOptions) -> None:
        self.opts = opts
        self.clock = Clock(poll_s=opts.poll_s)

    @property
    def inventory_dir(self) -> Any:
        inv = self.opts.inventory
        return inv if inv.is_dir() else inv.parent


class PreflightStage(_BmcStage):
    """BMC reachable, credentials good, hardware matches the spec; else stop and show the drift."""

    name = "preflight"

    def observe(self, ctx: StageContext) -> inv_ops.DriftReport:
        with bmc(ctx, self.opts) as node:
            return inv_ops.drift(ctx.host.spec, inv_ops.observe(node.conn))

    def plan(self, ctx: StageContext, observed: inv_ops.DriftReport) -> StagePlan:
        bad = observed.drifted
        if bad:
            shown = "; ".join(f"{i.key}: expected {i.expected}, found {i.observed}" for i in bad[:6])
            raise CheckFailed(f"{ctx.host.name}: hardware does not match the spec: {shown}")
        return StagePlan(stage=self.name, node=ctx.host.name, note="hardware matches the spec")

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:  # preflight never changes anything
        return None


class FirmwareStage(_BmcStage):
    """Firmware to the baseline: immediate images flashed and verified, host-reset images staged."""

    name = "firmware"

    def observe(self, ctx: StageContext) -> tuple[fw.FirmwarePlan, dict[str, str]]:
        """The update plan, and the running version(s) of each baseline component."""
        with bmc(ctx, self.opts) as node:
            state = fw.observe(node.conn)
            running = {s.component: ",".join(sorted({e.version or "?" for e in s.entries}))
                       for s in fw.status(ctx.host.spec.firmware, state, node.vendor)}
            return fw.plan(ctx.host.spec.firmware, state, node.vendor, self.inventory_dir,
                           self.opts.allow_downgrade), running

    def plan(self, ctx: StageContext, observed: tuple[fw.FirmwarePlan, dict[str, str]]) -> StagePlan:
        fplan, running = observed
        if fplan.refused:
            raise CheckFailed(f"{ctx.host.name}: " + "; ".join(fplan.refused))
        staged = staged_since_reset(ctx.journal, ctx.host.name)
        actions = tuple(
            Action(kind=_kind(s), target=f"{s.component} {s.version}", before=running.get(s.component, ""),
                   after=s.version, needs_host_reset=s.needs_host_reset)
            for s in fplan.steps if f"{s.component} {s.version}" not in staged
        )
        note = f"staged, waiting for the host reset: {', '.join(sorted(staged))}" if staged else "at baseline"
        return StagePlan(stage=self.name, node=ctx.host.name, actions=actions, note=note)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        wanted = {a.target for a in plan.actions}
        with bmc(ctx, self.opts) as node:
            fplan = fw.plan(ctx.host.spec.firmware, fw.observe(node.conn), node.vendor, self.inventory_dir,
                            self.opts.allow_downgrade)
            steps = [s for s in fplan.steps if f"{s.component} {s.version}" in wanted]
            for step in steps:
                fw.check_image(step)  # every image checked before anything is sent
            server = ImageServer(bind=self.opts.image_bind, advertise=self.opts.image_advertise) \
                if any(s.method == "simple" for s in steps) else None
            with server if server is not None else contextlib.nullcontext():
                for step in steps:
                    action = next(a for a in plan.actions if a.target == f"{step.component} {step.version}")
                    ctx.say(self.name, action.describe())
                    ctx.side_effect(self.name, action, _bind(self._send, node, step, server))

    def _send(self, node: Node, step: fw.FirmwareStep, server: ImageServer | None) -> None:
        send_step(node, step, server, ConvergeOptions(), self.clock)


def _bind(fn: Callable[[Node, fw.FirmwareStep, ImageServer | None], None], node: Node, step: fw.FirmwareStep,
          server: ImageServer | None) -> Callable[[], None]:
    return lambda: fn(node, step, server)


def _kind(step: fw.FirmwareStep) -> str:
    return STAGE_KIND if step.needs_host_reset or step.apply_time == "OnReset" else "flash"


class BiosStage(_BmcStage):
    """BIOS attributes to the spec, validated against the registry, written to the pending resource."""

    name = "bios"

    def observe(self, ctx: StageContext) -> bios_ops.BiosPlan:
        with bmc(ctx, self.opts) as node:
            return bios_ops.plan(ctx.host.spec.bios, bios_ops.observe(node), node.vendor)

    def plan(self, ctx: StageContext, observed: bios_ops.BiosPlan) -> StagePlan:
        if observed.invalid:
            raise CheckFailed(f"{ctx.host.name}: BIOS values refused before sending: " + "; ".join(observed.invalid))
        waiting = [c.attribute for c in observed.changes if c.pending]
        actions = tuple(Action(kind="bios-set", target=c.attribute, before=str(c.current), after=str(c.target),
                               needs_host_reset=True) for c in observed.changes if not c.pending)
        note = f"pending until the host reset: {', '.join(waiting)}" if waiting else "BIOS matches the spec"
        return StagePlan(stage=self.name, node=ctx.host.name, actions=actions, note=note)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        with bmc(ctx, self.opts) as node:
            bplan = bios_ops.plan(ctx.host.spec.bios, bios_ops.observe(node), node.vendor)
            summary = Action(kind="bios-write", target=f"{len(bplan.writes)} attribute(s)",
                             after=", ".join(sorted(bplan.writes)), needs_host_reset=True)
            ctx.side_effect(self.name, summary, lambda: bios_ops.apply(node, bplan))


class ResetStage(_BmcStage):
    """One host reset for everything staged (firmware and BIOS), then verify both took."""

    name = "reset"

    def observe(self, ctx: StageContext) -> tuple[set[str], list[str]]:
        """Staged firmware still below the baseline, and BIOS values still pending.

        Staged images whose component already runs the baseline need no reset: the reset happened
        (e.g. the controller was killed after asking for it), so it is not asked for twice.
        """
        with bmc(ctx, self.opts) as node:
            spec = ctx.host.spec
            bplan = bios_ops.plan(spec.bios, bios_ops.observe(node), node.vendor)
            fplan = fw.plan(spec.firmware, fw.observe(node.conn), node.vendor, self.inventory_dir,
                            self.opts.allow_downgrade)
        behind = {f"{s.component} {s.version}" for s in fplan.steps}
        pending_bios = [c.attribute for c in bplan.changes if c.pending]
        return staged_since_reset(ctx.journal, ctx.host.name) & behind, pending_bios

    def plan(self, ctx: StageContext, observed: tuple[set[str], list[str]]) -> StagePlan:
        staged, pending_bios = observed
        if not staged and not pending_bios:
            return StagePlan(stage=self.name, node=ctx.host.name, note="nothing staged")
        what = sorted(staged) + [f"bios {a}" for a in pending_bios]
        return StagePlan(stage=self.name, node=ctx.host.name,
                         actions=(Action(kind=RESET_KIND, target="host", after="applies " + "; ".join(what)),))

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        with bmc(ctx, self.opts) as node:
            spec = ctx.host.spec
            before = ConvergePlan(
                firmware=fw.plan(spec.firmware, fw.observe(node.conn), node.vendor, self.inventory_dir,
                                 self.opts.allow_downgrade),
                bios=bios_ops.plan(spec.bios, bios_ops.observe(node), node.vendor),
            )
            ctx.side_effect(self.name, plan.actions[0], lambda: power.host_reset(node, self.clock, 900))
            verify_after_reset(node, spec, before, ConvergeOptions(), self.clock)
