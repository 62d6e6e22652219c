"""`provision retire`: a node out of Slurm, out of campaigns and powered off, marked retired with its identity.

Stages (a run of kind `retire`, under the same node leases and journal as bring-up and clean):
- drain: drained in Slurm (reason `provision: retired`) when provision_slurm is set;
- then, with --clean, the clean's stages (its guard finds the node drained);
- retire: removed from every Slurm partition it is in, powered off, and marked retired in the journal with the
  serial and UUID its BMC reports (a campaign lists it `retired` and never flashes it; `unretire` reverses
  the mark only).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import partial

from provision.bringup.model import Action, StagePlan
from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.bringup.stages.bmc_session import BmcStage, bmc
from provision.clean import records
from provision.redfish.ops import identity as platform_identity
from provision.redfish.ops import power
from provision.redfish.ops.session import Node
from provision.scheduler.slurm import ActionKind, Scontrol, SlurmAction, apply_checked, parse_node
from provision.spec import HostEntry
from provision.spec.patterns import slurm_expand
from provision.spec.platforms import PlatformIdentity

REASON = "provision: retired"
_FIELD = "(?:^|\\s){}=(\\S*)"


def field(text: str, name: str) -> str:
    """One `Key=value` of an `scontrol -o show` line ('' when absent or (null))."""
    match = re.search(_FIELD.format(re.escape(name)), text)
    return "" if match is None or match[1] == "(null)" else match[1]


def expand(hostlist: str) -> list[str]:
    """A Slurm hostlist (`gpu[01-03],login1`) as names, in order."""
    names: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", hostlist):
        names += slurm_expand(part) or [part]
    return names


@dataclass(frozen=True)
class SlurmView:
    name: str
    drained: bool
    partitions: dict[str, tuple[str, ...]]
    """Each partition the node is in -> every node of it."""


class Scheduler:
    """scontrol for a retirement: the node's state and partitions, and the updates."""

    def __init__(self, tool: Scontrol) -> None:
        self.tool = tool

    def view(self, name: str) -> SlurmView:
        line = self.tool.run("-o", "show", "node", name)
        node = parse_node(name, line)
        parts = {}
        for p in filter(None, field(line, "Partitions").split(",")):
            text = self.tool.run("-o", "show", "partition", p)
            parts[p] = tuple(expand(field(text, "Nodes")))
        return SlurmView(name=name, drained=node.drained, partitions=parts)

    def drain(self, name: str) -> None:
        apply_checked(self.tool, SlurmAction(node=name, kind=ActionKind.DRAIN, reason=REASON, why="retired"))

    def set_nodes(self, partition: str, nodes: tuple[str, ...]) -> None:
        self.tool.run("update", f"partitionname={partition}", f"nodes={','.join(nodes)}")


def _scheduler(host: HostEntry) -> tuple[Scheduler, str] | None:
    if host.slurm is None:
        return None
    return Scheduler(Scontrol(host.slurm.scontrol, host.slurm.timeout_s)), host.slurm.node_name or host.name


class Drain(Action):
    slurm_name: str


def plan_drain(host: HostEntry, view: SlurmView | None) -> StagePlan:
    """Pure: a drain unless Slurm shows it drained (nothing without provision_slurm)."""
    if view is None:
        return StagePlan(stage="drain", node=host.name, note="no provision_slurm: Slurm not told")
    if view.drained:
        return StagePlan(stage="drain", node=host.name, note=f"drained in Slurm ({view.name})")
    return StagePlan(stage="drain", node=host.name, actions=(
        Drain(kind="slurm-drain", target=view.name, after=REASON, slurm_name=view.name),))


class DrainStage:
    name = "drain"

    def __init__(self, opts: BringupOptions) -> None:
        self.opts = opts

    def observe(self, ctx: StageContext) -> SlurmView | None:
        found = _scheduler(ctx.host)
        return None if found is None else found[0].view(found[1])

    def plan(self, host: HostEntry, observed: SlurmView | None) -> StagePlan:
        return plan_drain(host, observed)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        found = _scheduler(ctx.host)
        for action in plan.actions:
            if found is None or not isinstance(action, Drain):
                raise TypeError(f"the drain stage cannot apply {action.kind} {action.target}")
            ctx.side_effect(self.name, action, partial(found[0].drain, action.slurm_name))


@dataclass(frozen=True)
class RetireObserved:
    identity: PlatformIdentity
    power_state: str | None
    slurm: SlurmView | None
    retired: bool


class LeavePartition(Action):
    partition: str
    keep: tuple[str, ...]


class PowerOff(Action):
    pass


class MarkRetired(Action):
    serial: str | None
    uuid: str | None


def plan_retire(host: HostEntry, observed: RetireObserved) -> StagePlan:
    """Pure: out of each Slurm partition, powered off, marked retired (each only where not so already)."""
    actions: list[Action] = []
    slurm = observed.slurm
    if slurm is not None:
        actions += [LeavePartition(kind="slurm-partition-leave", target=p, before=",".join(nodes), partition=p,
                                   keep=tuple(n for n in nodes if n != slurm.name))
                    for p, nodes in sorted(slurm.partitions.items()) if slurm.name in nodes]
    if observed.power_state != "Off":
        actions.append(PowerOff(kind="power-off", target="host", before=observed.power_state or "?", after="Off"))
    serial, uuid = observed.identity.system.serial_number, observed.identity.system.uuid
    if not observed.retired:
        actions.append(MarkRetired(kind="mark-retired", target=host.name, after=f"serial {serial}, UUID {uuid}",
                                   serial=serial, uuid=uuid))
    return StagePlan(stage="retire", node=host.name, actions=tuple(actions),
                     note="retired" if observed.retired else "")


class RetireStage(BmcStage):
    name = "retire"

    def observe(self, ctx: StageContext) -> RetireObserved:
        with bmc(ctx, self.opts) as node:
            found = platform_identity.of_node(node)
            state = power.power_state(node.conn, node.system.uri)
        sched = _scheduler(ctx.host)
        retired = ctx.journal is not None and ctx.host.name in records.retired(ctx.journal)
        return RetireObserved(identity=found, power_state=state, retired=retired,
                              slurm=None if sched is None else sched[0].view(sched[1]))

    def plan(self, host: HostEntry, observed: RetireObserved) -> StagePlan:
        return plan_retire(host, observed)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        sched = _scheduler(ctx.host)
        for action in plan.actions:
            ctx.say(self.name, action.describe())
            if isinstance(action, LeavePartition) and sched is not None:
                ctx.side_effect(self.name, action, partial(sched[0].set_nodes, action.partition, action.keep))
            elif isinstance(action, PowerOff):
                with bmc(ctx, self.opts) as node:
                    ctx.side_effect(self.name, action, partial(self._off, node))
            elif isinstance(action, MarkRetired):
                if ctx.journal is not None:
                    records.mark(ctx.journal, ctx.host.name, True, action.serial, action.uuid, run_id=ctx.run_id)
            else:
                raise TypeError(f"the retire stage cannot apply {action.kind} {action.target}")

    def _off(self, node: Node) -> None:
        state = power.power_state(node.conn, node.system.uri)
        steps = power.plan("off", state, power.reset_types(node), node.conn.opts.where)
        power.apply(node, steps, self.clock, 300)
