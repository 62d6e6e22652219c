"""BMC accounts (AccountService, DSP0266 "Account service"): whether a password opens a BMC, the accounts a BMC
has, and the changes that make them what the site wants.

A password is checked by logging in with it (HTTP basic, one GET of the AccountService): a login answered
`PasswordChangeRequired` (the Base registry's message, a factory account on first use) is a named verdict, not
"no ComputerSystem". Such an account changes its password as the standard says: a PATCH of its own
ManagerAccount's `Password` (the account's URI is the message's first argument), which the BMC accepts before
anything else. Passwords travel only in request bodies; every one is registered for redaction first.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, SecretStr

from provision.redact import register_secret
from provision.redfish.connector import ROOT, Connector, ConnectorOptions, Json
from provision.redfish.errors import (
    RedfishAuthError,
    RedfishHttpError,
    RedfishPasswordChangeRequired,
    message_ids,
)
from provision.redfish.resources import ServiceRoot
from provision.redfish.vendors.base import AccountSlot, VendorPlugin
from provision.redfish.vendors.registry import detect
from provision.redfish.vendors.service_accounts import ServiceAccount, service_account

ACCOUNT_SERVICE = f"{ROOT}/AccountService"
ACCOUNTS = f"{ACCOUNT_SERVICE}/Accounts"


class LoginVerdict(StrEnum):
    """What a BMC said to one user name and password."""

    OK = "ok"
    REFUSED = "refused"
    CHANGE_REQUIRED = "password change required"


class LoginResult(BaseModel):
    """A login's verdict, and for CHANGE_REQUIRED the account whose password must change (the message's
    argument; None when the BMC did not name it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    verdict: LoginVerdict
    account_uri: str | None = None


Probe = Callable[[str, SecretStr], LoginResult]
"""Try a user name and password on the node's BMC (tests pass a table)."""


def as_user(opts: ConnectorOptions, user: str, password: SecretStr) -> ConnectorOptions:
    """The node's connector options with another account's credentials, HTTP basic: an account that must
    change its password has no usable session (DSP0266 lets it PATCH its password and nothing else). A host
    whose BMC takes sessions only (`provision_bmc_auth: session`) logs in with a session, kept even when the
    BMC answers PasswordChangeRequired, so that the account can PATCH its password through it."""
    register_secret(password.get_secret_value())
    if opts.auth == "session":
        return opts.model_copy(update={"username": user, "password": password, "change_password_session": True})
    return opts.model_copy(update={"username": user, "password": password, "auth": "basic"})


@contextmanager
def open_as(opts: ConnectorOptions, user: str, password: SecretStr) -> Iterator[Connector]:
    """A connector logged in as `user` (basic auth), within the options' deadline; closed at the end."""
    conn = Connector(as_user(opts, user, password))
    try:
        with conn.deadline():
            conn.open()
            yield conn
    finally:
        conn.close()


def probe_login(opts: ConnectorOptions) -> Probe:
    """A Probe on the BMC of `opts`: a login and a GET of the AccountService with the credentials given."""
    def probe(user: str, password: SecretStr) -> LoginResult:
        try:
            with open_as(opts, user, password) as conn:
                resp = conn.request("GET", ACCOUNT_SERVICE, allow_status=(403, 404))
        except RedfishPasswordChangeRequired:
            return LoginResult(verdict=LoginVerdict.CHANGE_REQUIRED)
        except RedfishAuthError:
            return LoginResult(verdict=LoginVerdict.REFUSED)
        if resp.status == 403:
            uri = change_required_account(resp.body)
            if uri is None and not any(m.endswith("PasswordChangeRequired") for m in message_ids(resp.body)):
                return LoginResult(verdict=LoginVerdict.OK)  # a role that may not read accounts: it logged in
            return LoginResult(verdict=LoginVerdict.CHANGE_REQUIRED, account_uri=uri)
        return LoginResult(verdict=LoginVerdict.OK)
    return probe


def change_required_account(body: object) -> str | None:
    """The account URI a `PasswordChangeRequired` message names (its first MessageArgs entry), if any."""
    if not isinstance(body, dict):
        return None
    for holder in (body, body.get("error")):
        infos = holder.get("@Message.ExtendedInfo") if isinstance(holder, dict) else None
        for info in infos if isinstance(infos, list) else []:
            if not isinstance(info, dict) or not str(info.get("MessageId", "")).endswith("PasswordChangeRequired"):
                continue
            args = info.get("MessageArgs")
            if isinstance(args, list) and args and isinstance(args[0], str) and args[0].startswith("/redfish/"):
                return args[0]
    return None


class BmcAccount(BaseModel):
    """One ManagerAccount as the BMC lists it (an empty slot, UserName "", is not an account)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    uri: str
    user: str
    role: str
    enabled: bool
    account_types: tuple[str, ...] = ()
    bootstrap: bool = False
    """HostBootstrapAccount: made by the Redfish host interface's credential bootstrapping (DSP0270)."""
    deletable: bool = True
    """False when the account's GET answered an Allow header without a method its removal needs (DELETE, or
    PATCH on a fixed-slot BMC, whose accounts are emptied, never deleted): read by `read_deletable`."""


def parse_account(raw: Json) -> BmcAccount | None:
    user = str(raw.get("UserName") or "")
    if not user:
        return None
    types = raw.get("AccountTypes")
    return BmcAccount(uri=str(raw.get("@odata.id", "")), user=user, role=str(raw.get("RoleId") or ""),
                      enabled=raw.get("Enabled") is not False, bootstrap=raw.get("HostBootstrapAccount") is True,
                      account_types=tuple(str(t) for t in types if t) if isinstance(types, list) else ())


def unnamed(accounts: Collection[BmcAccount], named: Collection[str] | None, acting: str) -> list[BmcAccount]:
    """The accounts a spec does not name (every one when it names none: None), but the one logged in as."""
    return [a for a in accounts if a.user != acting and (named is None or a.user not in named)]


def never_removed(account: BmcAccount, service: Collection[ServiceAccount]) -> str | None:
    """Pure: why the account must stay whatever the spec names, or None. The standard's marks first (a
    HostBootstrapAccount: the BMC deletes it itself at a host or service reset, DSP0270 9.2; an account the BMC
    does not allow removing), then the vendor plugin's list of the BMC's own accounts (vendors/)."""
    if account.bootstrap:
        return "a host-interface bootstrap account (HostBootstrapAccount; the BMC deletes it at a host reset)"
    if not account.deletable:
        return "the BMC does not allow removing it (its Allow header)"
    return service_account(service, account.user, account.account_types)


def read_deletable(conn: Connector, accounts: Collection[BmcAccount],
                   plugin: VendorPlugin | None = None) -> tuple[BmcAccount, ...]:
    """`accounts` with `deletable` as each one's GET says: an Allow header without a method the plugin's removal
    of it sends is the BMC saying it cannot be removed (DSP0266: the Allow header of a GET lists the methods the
    resource supports); no Allow header says nothing. One GET per account: callers pass only those they would
    remove."""
    plugin = plugin or plugin_of(conn)
    out = []
    for account in accounts:
        allow = conn.request("GET", account.uri).header("allow")
        methods = {m.strip().upper() for m in (allow or "").split(",") if m.strip()}
        needed = {step.method for step in plugin.remove_account(account.uri)}
        out.append(account.model_copy(update={"deletable": not methods or needed <= methods}))
    return tuple(out)


def collection_uri(conn: Connector) -> str:
    """The AccountService's Accounts collection (linked from the service; the standard's URI otherwise)."""
    service = conn.get_optional(ACCOUNT_SERVICE) or {}
    link = service.get("Accounts")
    return str(link.get("@odata.id")) if isinstance(link, dict) and link.get("@odata.id") else ACCOUNTS


def read_accounts(conn: Connector, collection: str) -> tuple[BmcAccount, ...]:
    """Every account the BMC has, by user name."""
    found = (parse_account(m) for m in conn.members(collection))
    return tuple(sorted((a for a in found if a is not None), key=lambda a: a.user))


def change_password(conn: Connector, account_uri: str, password: SecretStr) -> None:
    """PATCH the account's Password (DSP0266 "Password management": also how a PasswordChangeRequired account
    is answered). No If-Match read first: such an account may GET nothing but itself."""
    register_secret(password.get_secret_value())
    conn.request("PATCH", account_uri, body={"Password": password.get_secret_value()})


def plugin_of(conn: Connector) -> VendorPlugin:
    """The BMC's vendor plugin, by its service root (how accounts are made differs: vendors/)."""
    return detect(ServiceRoot.parse(conn.root), None)


def read_slots(conn: Connector, collection: str) -> tuple[AccountSlot, ...]:
    """Every member of the collection as listed, empty slots included."""
    return tuple(AccountSlot(uri=str(m.get("@odata.id", "")), id=str(m.get("Id") or str(m.get("@odata.id", ""))
                                                                     .rstrip("/").rsplit("/", 1)[-1]),
                             user=str(m.get("UserName") or "")) for m in conn.members(collection))


def create_account(conn: Connector, collection: str, user: str, role: str, password: SecretStr,
                   plugin: VendorPlugin | None = None) -> str:
    """Make a ManagerAccount as the BMC's plugin says (DSP0266: a POST to the collection; a fixed-slot BMC: a
    PATCH of a free slot); its URI (Location, or the body's @odata.id, or the slot's)."""
    register_secret(password.get_secret_value())
    plugin = plugin or plugin_of(conn)
    slots = read_slots(conn, collection) if plugin.account_slots else ()
    how = plugin.create_account(collection, slots, user, role)
    body = {**how.body, "Password": password.get_secret_value()}
    if how.method == "PATCH":
        conn.patch(how.uri, body)
        return how.uri
    resp = conn.post(how.uri, body)
    return resp.header("location") or str(resp.json.get("@odata.id") or "")


def patch_account(conn: Connector, uri: str, body: Json) -> None:
    conn.patch(uri, body)


def delete_account(conn: Connector, uri: str, plugin: VendorPlugin | None = None) -> None:
    """Remove the account at `uri` as the BMC's plugin says (a DELETE; a fixed-slot BMC: its slot emptied)."""
    for step in (plugin or plugin_of(conn)).remove_account(uri):
        if step.method == "DELETE":
            conn.delete(step.uri)
        else:
            conn.patch(step.uri, step.body)


def refused_text(exc: RedfishHttpError) -> str:
    """An account change's failure, as the BMC said it (one line, secrets masked by the connector)."""
    return exc.reason or str(exc)
