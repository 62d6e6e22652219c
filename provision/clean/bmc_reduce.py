"""What a tenant may have left on the BMC besides settings: firmware staged for the next host reset, and
accounts the spec does not name. Two stages of a clean (and of a retirement), each observe -> plan (pure,
tested as tables in tests/unit/test_clean_bmc_reduce.py) -> apply, then read back.

- staged-firmware: an update task that finished with the Update registry's AwaitToActivate (an image flashed
  OnReset, waiting for the next host reset) whose image no FirmwareInventory entry runs yet is cancelled by a
  DELETE of the task (DSP0266: a task is cancelled by deleting it). It runs before the clean's first host
  reset, which would otherwise activate it. Read back: the task no longer lists as staged; a BMC that refuses
  the DELETE or keeps the task fails the clean naming the image (it would apply at the next reset). A BMC with
  no TaskService shows nothing staged nor that nothing is: the item is journaled `not-checked` and the clean,
  having done the rest, fails at its `done` stage naming it (could-not-check is never a pass).
- accounts: with a `bmc:` section in the spec, every account it does not name (site accounts, the initial
  account) is deleted, except the account this run logs in as (provision_bmc_username) and the BMC's own
  accounts (a host-interface bootstrap account, one the BMC does not allow removing, one its vendor plugin lists:
  ops.accounts.never_removed), each of which is kept and journaled as a `keep-account` record saying why.
  Without a `bmc:` section the spec names no accounts: they are listed and kept (deleting every account but one
  on a site that does not manage accounts here would lock its operators out). Read back: the accounts are read
  again and none of the removed is left.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from pydantic import BaseModel, ConfigDict

from provision.bringup.model import Action, StagePlan
from provision.bringup.stage import StageContext
from provision.bringup.stages.bmc_session import BmcStage, bmc
from provision.clean import records
from provision.errors import CheckFailed
from provision.redfish.connector import ROOT, Connector
from provision.redfish.errors import RedfishError
from provision.redfish.ops import accounts as acc
from provision.redfish.ops.adopt import TASKS
from provision.redfish.resources import Task
from provision.redfish.vendors.service_accounts import ServiceAccount
from provision.spec import HostEntry

STAGED = "staged-firmware"
ACCOUNTS = "accounts"
INVENTORY = f"{ROOT}/UpdateService/FirmwareInventory"


class StagedImage(BaseModel):
    """One image a finished update task says awaits activation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task_uri: str
    image: str
    """AwaitToActivate's first argument: the image (a version, or the image's name)."""
    device: str = ""


def staged_images(tasks: Sequence[Task], running: Sequence[str]) -> tuple[StagedImage, ...]:
    """Pure: the finished update tasks whose AwaitToActivate image is not what an inventory entry runs
    (`running`: every FirmwareInventory Version). An activated image's old task is not staged."""
    have = {v.strip().lower() for v in running}
    out = []
    for task in tasks:
        if not task.ok:
            continue
        for msg in task.messages:
            if str(msg.get("MessageId", "")).rsplit(".", 1)[-1] != "AwaitToActivate":
                continue
            args = [str(a) for a in msg.get("MessageArgs") or []]
            image = args[0] if args else ""
            if image.strip().lower() in have:
                continue
            out.append(StagedImage(task_uri=task.uri, image=image or "(unnamed image)",
                                   device=args[1] if len(args) > 1 else ""))
            break
    return tuple(out)


class StagedObserved(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    staged: tuple[StagedImage, ...]
    tasks_readable: bool = True
    """The BMC has a TaskService to read (none: what is staged cannot be read there: not checked)."""


class CancelStaged(Action):
    task_uri: str


class NotChecked(Action):
    """Bookkeeping: an item of the clean that could not be checked. Journaled (records.NOT_CHECKED); the clean's
    done stage then fails naming it, so the node is never called cleaned with it unchecked."""


NO_TASKS = ("the BMC has no TaskService: firmware staged for the next host reset cannot be read there, so none "
            "can be shown absent (nothing cancelled)")


def plan_staged(host: HostEntry, observed: StagedObserved) -> StagePlan:
    """Pure: each staged image's task cancelled (DELETE); a BMC without a TaskService: a not-checked record (the
    clean goes on, and fails at its end naming it: could-not-check is never a pass)."""
    if not observed.tasks_readable:
        return StagePlan(stage=STAGED, node=host.name, note=f"not checked: {NO_TASKS}",
                         actions=(NotChecked(kind=records.NOT_CHECKED, target="staged firmware", after=NO_TASKS,
                                             changes_node=False),))
    actions = tuple(CancelStaged(kind="staged-cancel", target=s.task_uri, before=f"{s.image} on {s.device or '?'} "
                                 "awaits the next host reset", after="cancelled", task_uri=s.task_uri)
                    for s in observed.staged)
    return StagePlan(stage=STAGED, node=host.name, actions=actions, note="" if actions else "no firmware staged")


def read_staged(conn: Connector) -> StagedObserved:
    if conn.get_optional(f"{ROOT}/TaskService") is None:
        return StagedObserved(staged=(), tasks_readable=False)
    tasks = [Task.parse(t) for t in conn.members(TASKS)]
    running = [str(e.get("Version") or "") for e in conn.members(INVENTORY)]
    return StagedObserved(staged=staged_images(tasks, running))


class StagedFirmwareStage(BmcStage):
    """Firmware staged for the next host reset cancelled (before the clean's first reset would apply it)."""

    name = STAGED

    def observe(self, ctx: StageContext) -> StagedObserved:
        with bmc(ctx, self.opts) as node:
            return read_staged(node.conn)

    def plan(self, host: HostEntry, observed: StagedObserved) -> StagePlan:
        return plan_staged(host, observed)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        for unchecked in (a for a in plan.actions if isinstance(a, NotChecked)):
            if ctx.journal is None or ctx.run_id is None:  # no record for the done stage to read: fail here
                raise CheckFailed(f"{ctx.host.name}: {unchecked.target} not checked: {unchecked.after}")
            ctx.say(self.name, f"NOT CHECKED: {unchecked.target}: {unchecked.after}")
            ctx.side_effect(self.name, unchecked, lambda: None)
        cancels = [a for a in plan.actions if not isinstance(a, NotChecked)]
        if not cancels:
            return
        with bmc(ctx, self.opts) as node:
            for action in cancels:
                if not isinstance(action, CancelStaged):
                    raise TypeError(f"the {self.name} stage cannot apply {action.kind} {action.target}")
                ctx.say(self.name, action.describe())
                try:
                    ctx.side_effect(self.name, action, partial(node.conn.delete, action.task_uri))
                except RedfishError as exc:
                    raise CheckFailed(f"{ctx.host.name}: {action.before}: the BMC refused to cancel its task "
                                      f"{action.task_uri} ({exc}); it would apply at the next host reset") from None
            left = [s for s in read_staged(node.conn).staged if s.task_uri in {a.target for a in cancels}]
        if left:
            raise CheckFailed(f"{ctx.host.name}: still staged after the cancel: "
                              + ", ".join(f"{s.image} ({s.task_uri})" for s in left))


class AccountsSeen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    acting: str
    """The account this run logs in as (never removed)."""
    accounts: tuple[acc.BmcAccount, ...]
    named: frozenset[str] | None
    """The accounts the spec's bmc: section names (site accounts, the initial one); None: no bmc: section."""
    service: tuple[ServiceAccount, ...] = ()
    """The BMC's own accounts by its vendor plugin (never removed; vendors/service_accounts.py)."""


class RemoveAccount(Action):
    uri: str


class KeepAccount(Action):
    """Bookkeeping: an account the spec does not name, kept as the BMC's own (journaled, nothing sent)."""


def spec_accounts(host: HostEntry) -> frozenset[str] | None:
    return host.spec.bmc.named_accounts if host.spec.bmc is not None else None


def _unnamed(observed: AccountsSeen) -> list[acc.BmcAccount]:
    return acc.unnamed(observed.accounts, observed.named, observed.acting)


def plan_reduce_accounts(host: HostEntry, observed: AccountsSeen) -> StagePlan:
    """Pure: every account the spec does not name removed, but the one logged in as and the BMC's own (a
    host-interface bootstrap account, one the BMC does not allow removing, one its vendor plugin lists): those
    are kept and each is a `keep-account` record saying why (journaled: the clean's evidence names them).
    Nothing removed (listed) when the spec has no bmc: section."""
    unnamed = _unnamed(observed)
    if observed.named is None:
        note = "the spec has no bmc: section naming accounts: kept"
        if unnamed:
            note += f" ({', '.join(a.user for a in unnamed)})"
        return StagePlan(stage=ACCOUNTS, node=host.name, note=note)
    own = {a.user: why for a in unnamed if (why := acc.never_removed(a, observed.service)) is not None}
    actions = tuple(RemoveAccount(kind="remove-account", target=f"account {a.user}", before=a.role or "account",
                                  after="removed", uri=a.uri) for a in unnamed if a.user not in own)
    kept = tuple(KeepAccount(kind="keep-account", target=f"account {user}", after=why, changes_node=False)
                 for user, why in own.items())
    note = "only the accounts the spec names" if not actions and not kept else ""
    if kept:
        note = "kept, the BMC's own: " + "; ".join(f"{user} ({why})" for user, why in own.items())
    return StagePlan(stage=ACCOUNTS, node=host.name, actions=actions + kept, note=note)


class ReduceAccountsStage(BmcStage):
    """BMC accounts reduced to the spec's (and the one this run logs in as)."""

    name = ACCOUNTS

    def observe(self, ctx: StageContext) -> AccountsSeen:
        named = spec_accounts(ctx.host)
        with bmc(ctx, self.opts) as node:
            found = acc.read_accounts(node.conn, acc.collection_uri(node.conn))
            plugin = acc.plugin_of(node.conn)
            seen = AccountsSeen(acting=ctx.host.bmc.username, accounts=found, named=named,
                                service=plugin.service_accounts)
            if named is None:
                return seen
            # the Allow header of only those it may remove
            checked = {a.uri: a for a in acc.read_deletable(node.conn, _unnamed(seen), plugin)}
        return seen.model_copy(update={"accounts": tuple(checked.get(a.uri, a) for a in found)})

    def plan(self, host: HostEntry, observed: AccountsSeen) -> StagePlan:
        return plan_reduce_accounts(host, observed)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        for kept in (a for a in plan.actions if isinstance(a, KeepAccount)):  # the evidence of what was kept
            ctx.say(self.name, kept.describe())
            ctx.side_effect(self.name, kept, lambda: None)
        removed = [a for a in plan.actions if isinstance(a, RemoveAccount)]
        if not removed:
            return
        with bmc(ctx, self.opts) as node:
            for action in removed:
                ctx.say(self.name, action.describe())
                try:
                    ctx.side_effect(self.name, action, partial(acc.delete_account, node.conn, action.uri))
                except RedfishError as exc:
                    raise CheckFailed(f"{ctx.host.name}: {action.target}: the BMC refused to remove it "
                                      f"({exc})") from None
            left = {a.uri for a in acc.read_accounts(node.conn, acc.collection_uri(node.conn))}
        still = [a.target for a in removed if a.uri in left]
        if still:
            raise CheckFailed(f"{ctx.host.name}: removed, but the BMC still lists: {', '.join(still)}")
