"""The BMC side of a clean, and its guard.

- guard: the node is the one the inventory and the journal know (serial and UUID read from the BMC now) and,
  where provision_slurm is set, drained in Slurm; else nothing is done to it.
- staged-firmware, accounts: in provision.clean.bmc_reduce.
- bios-defaults: Bios.ResetBios, then a host reset so the defaults are what the BIOS runs (the spec's BIOS is
  then written by the bring-up `bios` stage and applied and verified by its `reset` stage).
- bmc-state: boot override cleared, virtual media ejected, the SEL saved to the journal then cleared.
- done: the node's clean is complete (`provision status` shows it), unless a stage journaled an item it could
  not check (records.NOT_CHECKED): then it fails naming each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial

from pydantic import BaseModel, ConfigDict

from provision.bringup.model import Action, StagePlan
from provision.bringup.stage import StageContext
from provision.bringup.stages.bmc_session import BmcStage, bmc
from provision.clean import records
from provision.clean.options import CleanOptions
from provision.clean.plan import KnownIdentity, check_drained, check_identity
from provision.errors import CheckFailed
from provision.journal.identities import identities
from provision.redfish.ops import identity as platform_identity
from provision.redfish.ops import power, sel
from provision.redfish.ops.session import Node
from provision.redfish.resources import LogEntry
from provision.scheduler.slurm import Scontrol
from provision.spec import HostEntry
from provision.spec.platforms import PlatformIdentity

BIOS_DEFAULTS = "bios-defaults"
SEL_CLEAR = "sel-clear"
SEL_SAVED = "sel-saved"


class CleanBmcStage(BmcStage):
    def __init__(self, opts: CleanOptions) -> None:
        super().__init__(opts.bringup)
        self.clean = opts


@dataclass(frozen=True)
class GuardObserved:
    now: PlatformIdentity
    known: tuple[KnownIdentity, ...]
    slurm_name: str
    drained: bool | None


class GuardStage(CleanBmcStage):
    """Refuse a node whose identity changed, or that Slurm does not show drained (provision_slurm set)."""

    name = "guard"

    def observe(self, ctx: StageContext) -> GuardObserved:
        host = ctx.host
        with bmc(ctx, self.opts) as node:
            now = platform_identity.of_node(node)
        known = [KnownIdentity(source="inventory (provision_bmc_identity)", serial=host.identity.serial,
                               uuid=host.identity.uuid)] if host.identity is not None else []
        readings = identities(ctx.journal, host.name) if ctx.journal is not None else []
        if readings:
            last = readings[-1]
            known.append(KnownIdentity(source=f"journal ({last.source} reading)",
                                       serial=last.identity.system.serial_number, uuid=last.identity.system.uuid))
        slurm_name, drained = host.name, None
        if host.slurm is not None:
            slurm_name = host.slurm.node_name or host.name
            drained = Scontrol(host.slurm.scontrol, host.slurm.timeout_s).show(slurm_name).drained
        return GuardObserved(now=now, known=tuple(known), slurm_name=slurm_name, drained=drained)

    def plan(self, host: HostEntry, observed: GuardObserved) -> StagePlan:
        said = [check_identity(host.name, observed.now, observed.known),
                check_drained(host.name, observed.slurm_name, observed.drained)]
        return StagePlan(stage=self.name, node=host.name, note="; ".join(said))

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:  # a guard changes nothing
        return None


class ResetBios(Action):
    target_uri: str


@dataclass(frozen=True)
class DefaultsObserved:
    done: bool
    action_uri: str


def plan_defaults(host: HostEntry, observed: DefaultsObserved) -> StagePlan:
    """Pure: ResetBios and a host reset, unless this clean did them already."""
    if observed.done:
        return StagePlan(stage=BIOS_DEFAULTS, node=host.name, note="BIOS reset to defaults earlier in this clean")
    action = ResetBios(kind=BIOS_DEFAULTS, target="host", after="Bios.ResetBios, then a host reset",
                       needs_host_reset=True, target_uri=observed.action_uri)
    return StagePlan(stage=BIOS_DEFAULTS, node=host.name, actions=(action,))


class BiosDefaultsStage(CleanBmcStage):
    name = BIOS_DEFAULTS

    def observe(self, ctx: StageContext) -> DefaultsObserved:
        done = ctx.journal is not None and records.done_in_cycle(ctx.journal, ctx.host.name, BIOS_DEFAULTS)
        with bmc(ctx, self.opts) as node:
            return DefaultsObserved(done=done, action_uri=_reset_bios_target(node))

    def plan(self, host: HostEntry, observed: DefaultsObserved) -> StagePlan:
        return plan_defaults(host, observed)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        for action in plan.actions:
            if not isinstance(action, ResetBios):
                raise TypeError(f"the {self.name} stage cannot apply {action.kind} {action.target}")
            with bmc(ctx, self.opts) as node:
                ctx.side_effect(self.name, action, partial(self._reset, node, action.target_uri))

    def _reset(self, node: Node, uri: str) -> None:
        node.conn.post(uri, {})
        power.host_reset(node, self.clock, 900)


def _reset_bios_target(node: Node) -> str:
    link = node.conn.get(node.system.uri).get("Bios") or {}
    bios_uri = str(link.get("@odata.id") or f"{node.system.uri}/Bios").rstrip("/")
    bios = node.conn.get_optional(bios_uri) or {}
    target = ((bios.get("Actions") or {}).get("#Bios.ResetBios") or {}).get("target")
    return str(target or f"{bios_uri}/Actions/Bios.ResetBios")


class BmcStateObserved(BaseModel):
    model_config = ConfigDict(frozen=True)

    override: str | None
    """Boot.BootSourceOverrideEnabled (None: not stated)."""
    media: tuple[power.MediaSlot, ...]
    sel_entries: tuple[LogEntry, ...]
    sel_cleared: bool
    """This clean saved and cleared the SEL already."""


class ClearOverride(Action):
    pass


class EjectMedia(Action):
    slot: power.MediaSlot


class ClearSel(Action):
    entries: tuple[LogEntry, ...]


def plan_bmc_state(host: HostEntry, observed: BmcStateObserved) -> StagePlan:
    """Pure: the boot override off, each inserted medium ejected, the SEL saved and cleared once per clean."""
    actions: list[Action] = []
    if observed.override in ("Once", "Continuous"):
        actions.append(ClearOverride(kind="boot-override-clear", target="host", before=observed.override,
                                     after="Disabled"))
    actions += [EjectMedia(kind="media-eject", target=s.uri, before=s.image or "inserted", slot=s)
                for s in observed.media if s.inserted]
    if not observed.sel_cleared:
        actions.append(ClearSel(kind=SEL_CLEAR, target="SEL", after=f"{len(observed.sel_entries)} entries saved to "
                                "the journal, then cleared", entries=observed.sel_entries))
    note = "SEL saved and cleared earlier in this clean" if observed.sel_cleared else ""
    return StagePlan(stage="bmc-state", node=host.name, actions=tuple(actions), note=note)


class BmcStateStage(CleanBmcStage):
    name = "bmc-state"

    def observe(self, ctx: StageContext) -> BmcStateObserved:
        cleared = ctx.journal is not None and records.done_in_cycle(ctx.journal, ctx.host.name, SEL_CLEAR)
        with bmc(ctx, self.opts) as node:
            boot = node.conn.get(node.system.uri).get("Boot") or {}
            override = boot.get("BootSourceOverrideEnabled") if isinstance(boot, dict) else None
            entries = () if cleared else tuple(sel.read(node))
            return BmcStateObserved(override=str(override) if override else None, media=tuple(power.media_slots(node)),
                                    sel_entries=entries, sel_cleared=cleared)

    def plan(self, host: HostEntry, observed: BmcStateObserved) -> StagePlan:
        return plan_bmc_state(host, observed)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        with bmc(ctx, self.opts) as node:
            for action in plan.actions:
                ctx.say(self.name, action.describe())
                if isinstance(action, ClearOverride):
                    body = {"Boot": {"BootSourceOverrideEnabled": "Disabled"}}
                    ctx.side_effect(self.name, action, partial(node.conn.patch, node.system.uri, body))
                elif isinstance(action, EjectMedia):
                    ctx.side_effect(self.name, action, partial(power.eject_media, node, action.slot))
                elif isinstance(action, ClearSel):
                    self._save(ctx, action.entries)
                    ctx.side_effect(self.name, action, partial(sel.clear, node))
                else:
                    raise TypeError(f"the {self.name} stage cannot apply {action.kind} {action.target}")

    def _save(self, ctx: StageContext, entries: tuple[LogEntry, ...]) -> None:
        if ctx.journal is None or ctx.run_id is None:
            return
        aid = ctx.journal.action_started(ctx.run_id, ctx.host.name, self.name, SEL_SAVED, f"{len(entries)} entries")
        ctx.journal.action_finished(aid, "ok", json.dumps([e.model_dump(mode="json") for e in entries]))


class DoneStage:
    """The node's clean is complete: this stage's row is what `provision status` reads."""

    name = records.DONE_STAGE

    def __init__(self, opts: CleanOptions) -> None:
        self.opts = opts

    def observe(self, ctx: StageContext) -> tuple[str, ...]:
        """What this clean could not check (journaled by its stages)."""
        return tuple(records.not_checked(ctx.journal, ctx.host.name)) if ctx.journal is not None else ()

    def plan(self, host: HostEntry, observed: tuple[str, ...]) -> StagePlan:
        """Pure: complete, unless an item could not be checked: then the clean fails naming each (not cleaned)."""
        if observed:
            raise CheckFailed(f"{host.name}: not cleaned: not checked: {'; '.join(observed)}")
        return StagePlan(stage=self.name, node=host.name, note=f"cleaned ({self.opts.level.value}) by {self.opts.by}")

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        return None
