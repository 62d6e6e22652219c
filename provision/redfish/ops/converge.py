"""Converge firmware and BIOS with ONE host reset: immediate updates (BMC) first and waited out,
host-reset firmware and BIOS values staged, one reset, then everything verified."""

from __future__ import annotations

import contextlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from provision.redfish.errors import RedfishError, RedfishOperationFailed, RedfishTimeout
from provision.redfish.image_server import ImageServer
from provision.redfish.ops import bios as bios_ops
from provision.redfish.ops import firmware as fw
from provision.redfish.ops import identity as platform_identity
from provision.redfish.ops import power
from provision.redfish.ops.session import Node
from provision.redfish.ops.waiting import Clock, wait_for
from provision.spec.firmware import FirmwareComponent
from provision.spec.model import NodeSpec
from provision.spec.platforms import AppliesTo, EntrySelector, PlatformIdentity, literal


class ConvergeOptions(BaseModel):
    model_config = ConfigDict(frozen=True)

    allow_downgrade: bool = False
    bios: bool = True
    firmware: bool = True
    reset: bool = True
    image_bind: str = "127.0.0.1"
    image_advertise: str | None = None
    bmc_reset_timeout_s: float = 900
    bmc_down_window_s: float = 10
    host_reset_timeout_s: float = 900
    verify_timeout_s: float = 300


class ConvergePlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    firmware: fw.FirmwarePlan
    bios: bios_ops.BiosPlan | None = None

    @property
    def host_reset(self) -> bool:
        return self.firmware.host_reset or bool(self.bios and self.bios.needs_reset)

    @property
    def empty(self) -> bool:
        return not self.firmware.steps and not (self.bios and self.bios.changes)


class ConvergeResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    firmware_sent: list[str] = Field(default_factory=list)
    bios_written: list[str] = Field(default_factory=list)
    host_resets: int = 0
    verified: bool = False


def make_plan(node: Node, spec: NodeSpec, inventory_dir: Path | None = None,
              opts: ConvergeOptions | None = None, known: PlatformIdentity | None = None) -> ConvergePlan:
    """Observe and plan firmware and BIOS; a spec from load_fleet needs no `inventory_dir` (its images are
    absolute)."""
    opts = opts or ConvergeOptions()
    known = platform_identity.check(node.conn, spec, known)  # a node the profile does not describe: refused
    fplan = fw.FirmwarePlan()
    if opts.firmware:
        fplan = fw.plan(spec.firmware, fw.observe(node.conn, known), node.vendor, inventory_dir,
                        opts.allow_downgrade)
    bplan = None
    if opts.bios:
        bplan = bios_ops.plan(spec.bios, bios_ops.observe(node), node.vendor)
    return ConvergePlan(firmware=fplan, bios=bplan)


def apply(node: Node, spec: NodeSpec, cplan: ConvergePlan, opts: ConvergeOptions, clock: Clock) -> ConvergeResult:
    """Carry out a plan; refuses (sending nothing) when a downgrade or a BIOS value is refused, or a running
    version cannot be compared with the baseline's."""
    where = node.conn.opts.where
    if cplan.firmware.refused or cplan.firmware.incomparable:  # an image not known to be newer is never sent
        raise RedfishOperationFailed(
            f"{where}: nothing sent: " + "; ".join(cplan.firmware.refused + list(cplan.firmware.incomparable.values())))
    if cplan.bios and cplan.bios.invalid:
        bios_ops.apply(node, cplan.bios)  # raises BiosValidationError naming every refused value
    for step in cplan.firmware.steps:
        fw.check_image(step)  # every image checked before anything is sent
    sent = _firmware(node, cplan.firmware, opts, clock)
    written = bios_ops.apply(node, cplan.bios) if cplan.bios else []
    resets = 0
    if cplan.host_reset and opts.reset:
        power.host_reset(node, clock, opts.host_reset_timeout_s)
        resets = 1
        verify_after_reset(node, spec, cplan, opts, clock)
    return ConvergeResult(firmware_sent=sent, bios_written=written, host_resets=resets,
                          verified=resets == 1 or not cplan.host_reset)


def _firmware(node: Node, fplan: fw.FirmwarePlan, opts: ConvergeOptions, clock: Clock) -> list[str]:
    if not fplan.steps:
        return []
    needs_server = any(s.method == "simple" for s in fplan.steps)
    server = ImageServer(bind=opts.image_bind, advertise=opts.image_advertise) if needs_server else None
    sent: list[str] = []
    with server if server is not None else contextlib.nullcontext():
        for step in fplan.steps:
            send_step(node, step, server, opts, clock)
            sent.append(step.component)
    return sent


def send_step(node: Node, step: fw.FirmwareStep, server: ImageServer | None, opts: ConvergeOptions,
              clock: Clock, state: fw.FirmwareState | None = None) -> None:
    """Send one update and follow its task; an Immediate image (BMC) is waited out and verified now.

    `state` is the FirmwareState the step was planned from (read again when not given). The step is bounded
    by its own waits (task, BMC reset, verify) rather than by the command's deadline, which it holds: a
    multi-component update on a slow BMC is not cut short by the reads' deadline, and each request still is."""
    bound = step.timeout_s + opts.bmc_down_window_s + opts.bmc_reset_timeout_s + opts.verify_timeout_s
    with node.conn.waiting(bound):
        resp = fw.send(node, step, state if state is not None else fw.observe(node.conn), server)
        uri = fw.task_uri(resp)
        if uri:
            fw.monitor(node, uri, step.timeout_s, clock)
        if not step.needs_host_reset and step.apply_time == "Immediate":
            if step.component == "bmc":
                wait_bmc_reset(node, opts, clock)
            fw.verify(node, [step], _baseline_of(node, step), clock, opts.verify_timeout_s)


def _baseline_of(node: Node, step: fw.FirmwareStep) -> tuple[FirmwareComponent, ...]:
    """The step as a baseline line for verify(): the very entries it was planned for, by their Id."""
    entries = tuple(EntrySelector(id=literal(i)) for i in step.entries)
    return (FirmwareComponent(component=step.component, version=step.version, image=str(step.image),
                              sha256=step.sha256, applies_to=AppliesTo(any_platform=True, entries=entries)),)


def wait_bmc_reset(node: Node, opts: ConvergeOptions, clock: Clock) -> None:
    """A BMC image reboots the BMC: wait briefly to see it go away (it may already have been and come
    back while the task was polled), then for it to answer; verify() then polls for the new version."""
    conn = node.conn

    def down() -> bool | None:
        try:
            conn.request("GET", "/redfish/v1/", auth=False, attempts=1, timeout=5)
            return None
        except RedfishError:
            return True

    with contextlib.suppress(RedfishTimeout), conn.waiting(opts.bmc_down_window_s):
        wait_for(down, opts.bmc_down_window_s, "BMC going down", clock)
    fw.wait_bmc(conn, opts.bmc_reset_timeout_s, clock)


def verify_after_reset(node: Node, spec: NodeSpec, cplan: ConvergePlan, opts: ConvergeOptions,
                        clock: Clock) -> None:
    staged = [s for s in cplan.firmware.steps if s.needs_host_reset or s.apply_time == "OnReset"]
    if staged:
        fw.verify(node, staged, spec.firmware, clock, opts.verify_timeout_s)
    if cplan.bios and cplan.bios.changes:
        bplan = cplan.bios

        def probe() -> bool | None:
            try:
                bios_ops.verify(node, bplan)
                return True
            except RedfishOperationFailed:
                return None

        try:
            with node.conn.waiting(opts.verify_timeout_s):
                wait_for(probe, opts.verify_timeout_s, "BIOS settings applied", clock)
        except RedfishTimeout:
            bios_ops.verify(node, bplan)  # raises, naming the attributes still pending
