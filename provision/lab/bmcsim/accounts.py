"""AccountService: the BMC's local accounts, its three predefined roles, and the privileges they carry.

A BMC starts with one account (the lab's `username`/`password`). In factory state that account carries
`PasswordChangeRequired: true` (DSP0266 "Password change required handling"): until its password is
changed, a request authenticated as it may only read the account, PATCH its Password, and create or
delete its own session; anything else answers 403 with `Base.PasswordChangeRequired` (bmc.py).
Passwords are kept in memory only, never in a resource (`Password` reads as null) or an event.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from provision.lab.bmcsim import events
from provision.lab.bmcsim.messages import message
from provision.lab.bmcsim.reply import Reply, error
from provision.lab.bmcsim.tree import ROOT, Json, Resources, norm

ACCOUNT_SERVICE = f"{ROOT}/AccountService"
ACCOUNTS = f"{ACCOUNT_SERVICE}/Accounts"
ROLES = f"{ACCOUNT_SERVICE}/Roles"
MIN_PASSWORD = 8
MAX_PASSWORD = 20
MASK = "******"  # what an error message says in place of a refused password


class Privilege(StrEnum):
    """Redfish privileges (Privileges schema) the simulator checks."""

    LOGIN = "Login"
    CONFIGURE_MANAGER = "ConfigureManager"
    CONFIGURE_USERS = "ConfigureUsers"
    CONFIGURE_SELF = "ConfigureSelf"
    CONFIGURE_COMPONENTS = "ConfigureComponents"


ROLE_PRIVILEGES: dict[str, tuple[Privilege, ...]] = {
    "Administrator": tuple(Privilege),
    "Operator": (Privilege.LOGIN, Privilege.CONFIGURE_COMPONENTS, Privilege.CONFIGURE_SELF),
    "ReadOnly": (Privilege.LOGIN, Privilege.CONFIGURE_SELF),
}
WRITABLE = ("UserName", "Password", "RoleId", "Enabled")


def service_resources(accounts: str = ACCOUNTS, roles: str = ROLES, template: bool = True) -> dict[str, Json]:
    """AccountService, its Roles, and (when `template`) an Accounts collection with the account every BMC
    overwrites with its own at start (so the seed holds the ManagerAccount type for `$metadata`)."""
    out: dict[str, Json] = {
        ACCOUNT_SERVICE: {
            "@odata.id": ACCOUNT_SERVICE, "@odata.type": "#AccountService.v1_10_0.AccountService",
            "Id": "AccountService", "Name": "Account Service", "Description": "Local manager accounts",
            "Status": {"State": "Enabled", "Health": "OK"}, "ServiceEnabled": True,
            "MinPasswordLength": MIN_PASSWORD, "MaxPasswordLength": MAX_PASSWORD,
            "AccountLockoutThreshold": 0, "AccountLockoutDuration": 0, "AuthFailureLoggingThreshold": 3,
            "LocalAccountAuth": "Enabled",
            "Accounts": {"@odata.id": accounts}, "Roles": {"@odata.id": roles},
        },
        roles: {"@odata.id": roles, "@odata.type": "#RoleCollection.RoleCollection", "Name": "Roles",
                "Members": [{"@odata.id": f"{roles}/{r}"} for r in ROLE_PRIVILEGES],
                "Members@odata.count": len(ROLE_PRIVILEGES)},
    }
    for role, privs in ROLE_PRIVILEGES.items():
        out[f"{roles}/{role}"] = {
            "@odata.id": f"{roles}/{role}", "@odata.type": "#Role.v1_3_1.Role", "Id": role, "Name": f"{role} Role",
            "RoleId": role, "IsPredefined": True, "AssignedPrivileges": [p.value for p in privs], "OemPrivileges": [],
        }
    if template:
        first = f"{accounts}/1"
        out[accounts] = {"@odata.id": accounts, "@odata.type": "#ManagerAccountCollection.ManagerAccountCollection",
                         "Name": "Accounts", "Members": [{"@odata.id": first}], "Members@odata.count": 1}
        out[first] = _body(Account("1", first, "admin", "", "Administrator"), roles)
    return out


@dataclass(slots=True)
class Account:
    ident: str
    uri: str
    user: str
    password: str
    role: str
    enabled: bool = True
    change_required: bool = False

    def can(self, privilege: Privilege) -> bool:
        return privilege in ROLE_PRIVILEGES.get(self.role, ())


def _body(acct: Account, roles: str) -> Json:
    return {
        "@odata.id": acct.uri, "@odata.type": "#ManagerAccount.v1_7_0.ManagerAccount", "Id": acct.ident,
        "Name": "User Account", "UserName": acct.user, "Password": None, "RoleId": acct.role,
        "Enabled": acct.enabled, "Locked": False, "PasswordChangeRequired": acct.change_required,
        "AccountTypes": ["Redfish"], "Links": {"Role": {"@odata.id": f"{roles}/{acct.role}"}},
    }


class Accounts:
    """One BMC's local accounts (in memory) and their resources."""

    def __init__(self, node: str, res: Resources, user: str, password: str, change_required: bool,
                 collection: str = ACCOUNTS, own_first: bool = True) -> None:
        self._node = node
        self._res = res
        self.collection = collection
        service = res.get(ACCOUNT_SERVICE) or {}
        self.roles = norm(str((service.get("Roles") or {}).get("@odata.id", ROLES)))
        self._by_id: dict[str, Account] = {}
        self.on_gone: Callable[[Account], None] = lambda _acct: None
        ident = "1" if own_first else self._next_id()
        first = Account(ident, f"{collection}/{ident}", user, password, "Administrator", True, change_required)
        self._by_id[ident] = first
        self._render(first)
        if not own_first:
            res.add_member(collection, first.uri)

    # --- lookups ---------------------------------------------------------------------------
    def check(self, user: object, password: object) -> Account | None:
        """The enabled account these credentials name, or None."""
        if not isinstance(user, str) or not isinstance(password, str):
            return None
        for acct in self._by_id.values():
            same_user = hmac.compare_digest(user.encode(), acct.user.encode())
            if hmac.compare_digest(password.encode(), acct.password.encode()) and same_user and acct.enabled:
                return acct
        return None

    def get(self, ident: str) -> Account | None:
        return self._by_id.get(ident)

    def at(self, uri: str) -> Account | None:
        acct = self._by_id.get(uri.rsplit("/", 1)[-1])
        return acct if acct is not None and acct.uri == uri else None

    def change_required(self) -> bool:
        """Does any account still have to change its password (factory state)?"""
        return any(a.change_required for a in self._by_id.values())

    def owns(self, uri: str) -> bool:
        return uri == self.collection or self.at(uri) is not None

    def min_length(self) -> int:
        return int((self._res.get(ACCOUNT_SERVICE) or {}).get("MinPasswordLength") or MIN_PASSWORD)

    def max_length(self) -> int:
        return int((self._res.get(ACCOUNT_SERVICE) or {}).get("MaxPasswordLength") or MAX_PASSWORD)

    # --- writes ----------------------------------------------------------------------------
    def create(self, body: Json) -> Reply:
        for key in ("UserName", "Password", "RoleId"):
            if key not in body:
                return error(400, "CreateFailedMissingReqProperties", key, related=[f"/{key}"])
        unknown = [k for k in body if k not in WRITABLE and not k.startswith("@") and k != "AccountTypes"]
        if unknown:
            return error(400, "PropertyUnknown", unknown[0], related=[f"/{unknown[0]}"])
        errors = self._check(None, body)
        if errors:
            return _errors(errors)
        ident = self._next_id()
        acct = Account(ident, f"{self.collection}/{ident}", body["UserName"], body["Password"], body["RoleId"],
                       bool(body.get("Enabled", True)))
        self._by_id[ident] = acct
        self._render(acct)
        self._res.add_member(self.collection, acct.uri)
        events.record(self._node, "account.created", account=ident, user=acct.user, role=acct.role)
        reply = Reply(201, self._res.get(acct.uri), {"Location": acct.uri})
        return reply

    def patch(self, acct: Account, body: Json) -> list[Json]:
        """Checked, then applied whole (nothing applied on any error). Returns the errors."""
        errors = self._check(acct, body)
        for key in body:
            if key.startswith("@") or key in WRITABLE:
                continue
            known = key in (self._res.get(acct.uri) or {})
            errors.append(message("PropertyNotWritable" if known else "PropertyUnknown", key, related=[f"/{key}"]))
        if errors:
            return errors
        if "Password" in body:
            acct.password = body["Password"]
            acct.change_required = False
        if "UserName" in body:
            acct.user = body["UserName"]
        if "RoleId" in body:
            acct.role = body["RoleId"]
        if "Enabled" in body:
            acct.enabled = body["Enabled"]
        self._render(acct)
        events.record(self._node, "account.changed", account=acct.ident, keys=sorted(k for k in body if k in WRITABLE))
        if not acct.enabled:
            self.on_gone(acct)
        return []

    def delete(self, acct: Account) -> Reply:
        if self._last_admin(acct):
            return error(400, "ResourceCannotBeDeleted")
        del self._by_id[acct.ident]
        self._res.delete(acct.uri)
        self._res.remove_member(self.collection, acct.uri)
        events.record(self._node, "account.deleted", account=acct.ident)
        self.on_gone(acct)
        return Reply(204)

    # --- checks ----------------------------------------------------------------------------
    def _check(self, acct: Account | None, body: Json) -> list[Json]:
        errors: list[Json] = []
        if "UserName" in body:
            name = body["UserName"]
            if not isinstance(name, str):
                errors.append(message("PropertyValueTypeError", name, "UserName", related=["/UserName"]))
            elif not 1 <= len(name) <= 16 or not all(c.isalnum() or c in "._-" for c in name):
                errors.append(message("PropertyValueFormatError", name, "UserName", related=["/UserName"]))
            elif any(a.user == name and a is not acct for a in self._by_id.values()):
                errors.append(message("ResourceAlreadyExists", "ManagerAccount", "UserName", name,
                                      related=["/UserName"]))
        if "Password" in body:
            errors += self._check_password(acct, body["Password"])
        if "RoleId" in body and body["RoleId"] not in ROLE_PRIVILEGES:
            errors.append(message("PropertyValueNotInList", body["RoleId"], "RoleId", related=["/RoleId"]))
        if "Enabled" in body and not isinstance(body["Enabled"], bool):
            errors.append(message("PropertyValueTypeError", body["Enabled"], "Enabled", related=["/Enabled"]))
        if acct is not None and self._last_admin(acct) and (
                body.get("Enabled") is False or body.get("RoleId", "Administrator") != "Administrator"):
            errors.append(message("PropertyValueNotInList", body.get("RoleId", body.get("Enabled")),
                                  "RoleId" if "RoleId" in body else "Enabled",
                                  resolution="The last enabled Administrator account must stay one."))
        return errors

    def _check_password(self, acct: Account | None, value: object) -> list[Json]:
        if not isinstance(value, str):
            return [message("PropertyValueTypeError", MASK, "Password", related=["/Password"])]
        lo, hi = self.min_length(), self.max_length()
        if not lo <= len(value) <= hi:
            return [message("PropertyValueFormatError", MASK, "Password", related=["/Password"],
                            resolution=f"A password has {lo} to {hi} characters.")]
        if acct is not None and acct.change_required and hmac.compare_digest(value.encode(), acct.password.encode()):
            return [message("PropertyValueFormatError", MASK, "Password", related=["/Password"],
                            resolution="The new password must differ from the factory password.")]
        return []

    def _last_admin(self, acct: Account) -> bool:
        admins = [a for a in self._by_id.values() if a.enabled and a.role == "Administrator"]
        return admins == [acct]

    def _next_id(self) -> str:
        coll = self._res.get(self.collection) or {}
        taken = {str(m.get("@odata.id", "")).rstrip("/").rsplit("/", 1)[-1] for m in coll.get("Members") or []}
        taken |= set(self._by_id)
        n = 1
        while str(n) in taken:
            n += 1
        return str(n)

    def _render(self, acct: Account) -> None:
        self._res.put(acct.uri, _body(acct, self.roles))


def _errors(errors: list[Json]) -> Reply:
    return Reply(400, {"error": {"code": errors[0]["MessageId"], "message": errors[0]["Message"],
                                 "@Message.ExtendedInfo": errors}})
