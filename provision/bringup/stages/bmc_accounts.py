"""Day zero, accounts: the initial (factory) account's password rotated, then the site's accounts made.

Two stages, each observe -> plan (pure) -> apply, because a factory BMC that answers `PasswordChangeRequired`
shows nothing else until its password is changed: `bmc-password` rotates it, `bmc-accounts` then reads the
accounts (as the site account, or the rotated initial one) and plans from what it read.

Lockout safety: the rotation's intent is journaled first ("rotate-password", no secret in it), then the PATCH,
then its outcome (StageContext.side_effect, with failpoints `rotate-password:before` and `:after`). After a kill
between the two, the journal shows the rotation open: observe tries the new password, then the old, and the
plan says which worked (the new: done; the old: rotated again). The same order is used on every run, so a
converged BMC sees no refused login.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from enum import StrEnum
from functools import partial

from pydantic import BaseModel, ConfigDict, SecretStr

from provision.bringup.model import Action, StagePlan
from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.errors import CheckFailed, InputError
from provision.journal import Journal
from provision.redfish.connector import Connector
from provision.redfish.errors import RedfishHttpError
from provision.redfish.ops import accounts as acc
from provision.redfish.ops.certificates import check_ca
from provision.redfish.ops.session import options_for
from provision.redfish.vendors.service_accounts import ServiceAccount
from provision.spec import HostEntry
from provision.spec.bmc_setup import BmcSetup, SecretSource, read_secret

ROTATE = "rotate-password"
RESOLVED = "rotation-resolved"
READ_BACK = ("create-account", "set-password", "enable-account")
ProbeFactory = Callable[[HostEntry], acc.Probe]
Opener = Callable[[HostEntry, str, SecretStr], AbstractContextManager[Connector]]
"""Log in to the node's BMC as another account (tests pass a fake)."""


class InitialState(StrEnum):
    """The initial (factory) account as its two passwords show it."""

    NOT_MANAGED = "not managed"
    ROTATED = "rotated"
    FACTORY = "factory password"
    CHANGE_REQUIRED = "factory password, change required"
    NEITHER = "neither password accepted"


class PasswordObserved(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    state: InitialState
    account_uri: str | None = None
    interrupted: int | None = None
    """The journal's record of a rotation started and never finished (the process died in it): its id."""


class AccountAction(Action):
    """One account change; what apply needs besides the password (read from its source when applied)."""

    uri: str = ""
    user: str = ""
    role: str = ""
    record: int | None = None
    """RESOLVED: the interrupted rotation's journal record this closes."""


def secret(host: HostEntry, source: SecretSource, key: str) -> SecretStr:
    return read_secret(source, host.bmc.password, f"host {host.name}: bmc.{key}")


def setup_of(host: HostEntry) -> BmcSetup | None:
    return host.spec.bmc


def check_inputs(host: HostEntry) -> None:
    """Every password source readable (and private), the CA key the CA certificate's: InputError, one line,
    before anything is sent to any BMC."""
    setup = setup_of(host)
    if setup is None:
        return
    if setup.initial is not None:
        secret(host, setup.initial.password, "initial.password")
        secret(host, setup.initial.rotate_to, "initial.rotate_to")
    for account in setup.accounts:
        secret(host, account.password, f"accounts.{account.user}.password")
    if setup.certificate is not None:
        check_ca(setup.certificate.ca_cert, setup.certificate.ca_key)


def rotation_open(journal: Journal | None, node: str, user: str) -> int | None:
    """The record of the latest rotation of `user`'s password journaled for `node`, if it never finished."""
    if journal is None:
        return None
    rows = [a for a in journal.actions(node) if a.action == ROTATE and a.target == f"account {user}"]
    return rows[-1].id if rows and rows[-1].open else None


def _resolved(user: str, record: int, worked: str) -> AccountAction:
    """Bookkeeping: the interrupted rotation's record closed, saying which password worked after the restart."""
    return AccountAction(kind=RESOLVED, target=f"account {user}", after=f"{worked} password works", user=user,
                         record=record, changes_node=False)


def plan_password(host: HostEntry, observed: PasswordObserved) -> StagePlan:
    """Pure: rotate the initial account's password unless its new one already works."""
    setup = setup_of(host)
    plan = partial(StagePlan, stage="bmc-password", node=host.name)
    if setup is None or setup.initial is None or observed.state is InitialState.NOT_MANAGED:
        return plan(note="no initial account in the bmc: section")
    user = setup.initial.user
    if observed.state is InitialState.NEITHER:
        raise CheckFailed(f"{host.name}: initial account {user}: neither its new password "
                          f"({setup.initial.rotate_to.describe()}) nor its factory password "
                          f"({setup.initial.password.describe()}) is accepted; nothing sent")
    if observed.state is InitialState.ROTATED:
        if observed.interrupted is None:
            return plan(note=f"account {user}: rotated")
        return plan(actions=(_resolved(user, observed.interrupted, "the new"),),
                    note="a rotation was interrupted; the new password works (it took)")
    if observed.account_uri is None:
        raise CheckFailed(f"{host.name}: initial account {user}: the BMC names no account URI for it; nothing sent")
    action = AccountAction(kind=ROTATE, target=f"account {user}", before=observed.state.value, after="rotated",
                           uri=observed.account_uri, user=user)
    if observed.interrupted is None:
        return plan(actions=(action,), note=f"account {user}: {observed.state.value}")
    return plan(actions=(_resolved(user, observed.interrupted, "the old"), action),
                note="a rotation was interrupted; the old password still works: rotating again")


class AccountsObserved(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    acting: str
    """The user whose login read the accounts (and makes the changes)."""
    collection: str
    accounts: tuple[acc.BmcAccount, ...]
    passwords: dict[str, acc.LoginVerdict]
    """Per site account the BMC has: what its password from the spec got."""
    roles: tuple[str, ...] | None = None
    """The only roles this BMC's vendor lets an account have (its plugin's), or None when it does not fix them."""
    service: tuple[ServiceAccount, ...] = ()
    """The BMC's own accounts by its vendor plugin (never removed; vendors/service_accounts.py)."""


def plan_accounts(host: HostEntry, observed: AccountsObserved) -> StagePlan:
    """Pure: each site account made, given its role, enabled and its password set; the others listed (removed
    when the spec says remove_unnamed), but the BMC's own (ops.accounts.never_removed): never removed, listed
    with why."""
    setup = setup_of(host)
    if setup is None:
        return StagePlan(stage="bmc-accounts", node=host.name, note="no bmc: section")
    have = {a.user: a for a in observed.accounts}
    _refuse_roles_not_offered(host, setup, observed)
    actions: list[AccountAction] = []
    for want in setup.accounts:
        found = have.get(want.user)
        if found is None:
            actions.append(AccountAction(kind="create-account", target=f"account {want.user}", after=want.role,
                                         uri=observed.collection, user=want.user, role=want.role))
            continue
        if found.role != want.role:
            actions.append(AccountAction(kind="set-role", target=f"account {want.user}", before=found.role,
                                         after=want.role, uri=found.uri, user=want.user, role=want.role))
        if not found.enabled:
            actions.append(AccountAction(kind="enable-account", target=f"account {want.user}", uri=found.uri,
                                         user=want.user))
        if observed.passwords.get(want.user, acc.LoginVerdict.OK) is not acc.LoginVerdict.OK:
            actions.append(AccountAction(kind="set-password", target=f"account {want.user}",
                                         before=observed.passwords[want.user].value, after="spec's", uri=found.uri,
                                         user=want.user))
    unnamed = unnamed_accounts(setup, observed)
    own = {u: why for u in unnamed if (why := acc.never_removed(have[u], observed.service)) is not None}
    others = [u for u in unnamed if u not in own]
    notes = []
    if others and setup.remove_unnamed:
        actions += [AccountAction(kind="remove-account", target=f"account {u}", uri=have[u].uri, user=u)
                    for u in others]
    elif others:
        notes.append(f"accounts the spec does not name (kept; remove_unnamed: true removes them): {', '.join(others)}")
    if own:
        notes.append("kept, the BMC's own: " + "; ".join(f"{u} ({why})" for u, why in own.items()))
    return StagePlan(stage="bmc-accounts", node=host.name, actions=tuple(actions),
                     note="; ".join(notes) or "accounts as the spec says")


def unnamed_accounts(setup: BmcSetup, observed: AccountsObserved) -> list[str]:
    """The accounts the spec does not name, but the one logged in as, by user name."""
    return sorted(a.user for a in acc.unnamed(observed.accounts, setup.named_accounts, observed.acting))


def _probes(host: HostEntry, insecure: bool) -> acc.Probe:
    return acc.probe_login(options_for(host.name, host.bmc, insecure=insecure))


class _AccountStage:
    def __init__(self, opts: BringupOptions, probes: ProbeFactory | None = None,
                 opener: Opener | None = None) -> None:
        self.opts = opts
        self.probes: ProbeFactory = probes or (lambda host: _probes(host, opts.insecure))
        self.opener: Opener = opener or (lambda host, user, password: acc.open_as(
            options_for(host.name, host.bmc, insecure=opts.insecure), user, password))


class BmcPasswordStage(_AccountStage):
    """The initial account's password rotated (a PasswordChangeRequired BMC answered as the standard says)."""

    name = "bmc-password"

    def observe(self, ctx: StageContext) -> PasswordObserved:
        check_inputs(ctx.host)  # the first BMC stage: every input checked before anything is sent
        setup = setup_of(ctx.host)
        if setup is None or setup.initial is None:
            return PasswordObserved(state=InitialState.NOT_MANAGED)
        initial = setup.initial
        new = secret(ctx.host, initial.rotate_to, "initial.rotate_to")
        old = secret(ctx.host, initial.password, "initial.password")  # both read before anything is sent
        interrupted = rotation_open(ctx.journal, ctx.host.name, initial.user)
        probe = self.probes(ctx.host)
        if probe(initial.user, new).verdict is acc.LoginVerdict.OK:
            return PasswordObserved(state=InitialState.ROTATED, interrupted=interrupted)
        got = probe(initial.user, old)
        if got.verdict is acc.LoginVerdict.REFUSED:
            return PasswordObserved(state=InitialState.NEITHER, interrupted=interrupted)
        if got.verdict is acc.LoginVerdict.CHANGE_REQUIRED:
            return PasswordObserved(state=InitialState.CHANGE_REQUIRED, account_uri=got.account_uri,
                                    interrupted=interrupted)
        with self.opener(ctx.host, initial.user, old) as conn:
            found = acc.read_accounts(conn, acc.collection_uri(conn))
        uri = next((a.uri for a in found if a.user == initial.user), None)
        return PasswordObserved(state=InitialState.FACTORY, account_uri=uri, interrupted=interrupted)

    def plan(self, host: HostEntry, observed: PasswordObserved) -> StagePlan:
        return plan_password(host, observed)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        setup = setup_of(ctx.host)
        assert setup is not None and setup.initial is not None
        new = secret(ctx.host, setup.initial.rotate_to, "initial.rotate_to")
        old = secret(ctx.host, setup.initial.password, "initial.password")
        for action in plan.actions:
            assert isinstance(action, AccountAction)
            if action.kind == RESOLVED:  # bookkeeping: the dead run's record closed, nothing sent
                if ctx.journal is not None and action.record is not None:
                    outcome = "ok" if action.after.startswith("the new") else "failed"
                    ctx.journal.action_finished(action.record, outcome, f"after a restart: {action.after}")
                continue
            ctx.say(self.name, action.describe())
            ctx.side_effect(self.name, action, partial(self._rotate, ctx.host, action, old, new))

    def _rotate(self, host: HostEntry, action: AccountAction, old: SecretStr, new: SecretStr) -> None:
        """PATCH the new password; an error answer after which the new password works counts as done (a BMC
        that changed it and then failed to say so)."""
        try:
            with self.opener(host, action.user, old) as conn:
                acc.change_password(conn, action.uri, new)
        except RedfishHttpError as exc:
            if self.probes(host)(action.user, new).verdict is not acc.LoginVerdict.OK:
                raise CheckFailed(f"{host.name}: {action.target}: password change refused: "
                                  f"{acc.refused_text(exc)}") from None
        if self.probes(host)(action.user, new).verdict is not acc.LoginVerdict.OK:
            raise CheckFailed(f"{host.name}: {action.target}: the BMC took the password change, but the new "
                              "password does not log in")


def _refuse_roles_not_offered(host: HostEntry, setup: BmcSetup, observed: AccountsObserved) -> None:
    """A role the BMC cannot give is refused before any account is touched (never half the accounts made)."""
    if observed.roles is None:
        return
    for want in setup.accounts:
        if want.role not in observed.roles:
            raise InputError(f"host {host.name}: bmc.accounts {want.user}: role {want.role!r} is not one this BMC "
                             f"offers ({', '.join(observed.roles)}); nothing changed")


class BmcAccountsStage(_AccountStage):
    """The site's accounts made, with their roles and passwords; accounts the spec does not name listed."""

    name = "bmc-accounts"
    judges_changes = True  # in --plan, judged only when no rotation comes before it (a factory BMC shows nothing)

    def _acting(self, host: HostEntry, setup: BmcSetup, probe: acc.Probe) -> tuple[str, SecretStr]:
        """The login that reads and changes the accounts: the inventory's account, else the rotated initial."""
        if probe(host.bmc.username, host.bmc.password).verdict is acc.LoginVerdict.OK:
            return host.bmc.username, host.bmc.password
        if setup.initial is not None:
            new = secret(host, setup.initial.rotate_to, "initial.rotate_to")
            if probe(setup.initial.user, new).verdict is acc.LoginVerdict.OK:
                return setup.initial.user, new
        raise CheckFailed(f"{host.name}: neither provision_bmc_username {host.bmc.username!r} nor the rotated "
                          "initial account logs in to the BMC: the accounts cannot be read")

    def observe(self, ctx: StageContext) -> AccountsObserved | None:
        setup = setup_of(ctx.host)
        if setup is None or (not setup.accounts and not setup.remove_unnamed):
            return None
        wanted = {a.user: secret(ctx.host, a.password, f"accounts.{a.user}.password") for a in setup.accounts}
        probe = self.probes(ctx.host)
        user, password = self._acting(ctx.host, setup, probe)
        with self.opener(ctx.host, user, password) as conn:
            collection = acc.collection_uri(conn)
            found = acc.read_accounts(conn, collection)
            plugin = acc.plugin_of(conn)
            seen = AccountsObserved(acting=user, collection=collection, accounts=found, passwords={},
                                    roles=plugin.account_roles, service=plugin.service_accounts)
            if setup.remove_unnamed:  # the Allow header of each account it may remove
                unnamed = set(unnamed_accounts(setup, seen))
                checked = {a.uri: a for a in acc.read_deletable(conn, [a for a in found if a.user in unnamed], plugin)}
                found = tuple(checked.get(a.uri, a) for a in found)
        present = {a.user for a in found}
        passwords = {u: (acc.LoginVerdict.OK if u == user else probe(u, pw).verdict)
                     for u, pw in wanted.items() if u in present}
        return seen.model_copy(update={"accounts": found, "passwords": passwords})

    def plan(self, host: HostEntry, observed: AccountsObserved | None) -> StagePlan:
        if observed is None:
            return StagePlan(stage=self.name, node=host.name, note="no accounts in the bmc: section")
        return plan_accounts(host, observed)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        setup = setup_of(ctx.host)
        assert setup is not None
        probe = self.probes(ctx.host)
        user, password = self._acting(ctx.host, setup, probe)
        passwords = {a.user: secret(ctx.host, a.password, f"accounts.{a.user}.password") for a in setup.accounts}
        with self.opener(ctx.host, user, password) as conn:
            for action in plan.actions:
                assert isinstance(action, AccountAction)
                ctx.say(self.name, action.describe())
                ctx.side_effect(self.name, action, partial(_account_change, conn, action, passwords))
        checked = [a for a in plan.actions if isinstance(a, AccountAction) and a.kind in READ_BACK]
        for action in checked:  # read back: each account the stage made or set logs in with its password
            if probe(action.user, passwords[action.user]).verdict is not acc.LoginVerdict.OK:
                raise CheckFailed(f"{ctx.host.name}: {action.target}: set, but its password does not log in")


def _account_change(c: Connector, action: AccountAction, passwords: dict[str, SecretStr]) -> None:
    if action.kind == "create-account":
        acc.create_account(c, action.uri, action.user, action.role, passwords[action.user])
    elif action.kind == "set-role":
        acc.patch_account(c, action.uri, {"RoleId": action.role})
    elif action.kind == "enable-account":
        acc.patch_account(c, action.uri, {"Enabled": True})
    elif action.kind == "set-password":
        acc.change_password(c, action.uri, passwords[action.user])
    elif action.kind == "remove-account":
        acc.delete_account(c, action.uri)
    else:
        raise TypeError(f"the bmc-accounts stage cannot apply {action.kind}")
