"""The simulator's AccountService in process: accounts, roles, PasswordChangeRequired (factory state)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from provision.lab.bmcsim.bmc import Bmc
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.config import TREES_DIR, BmcConfig, SimConfig
from provision.lab.bmcsim.reply import Reply
from provision.lab.bmcsim.request import Request
from provision.lab.bmcsim.seed import get_seed

ACCOUNTS = "/redfish/v1/AccountService/Accounts"
ADMIN = f"{ACCOUNTS}/1"
SESSIONS = "/redfish/v1/SessionService/Sessions"
FACTORY_PW = "factory-pw1"


def make_bmc(tmp: Path, factory: bool = False, tree: str = "supermicro", as_captured: bool = False) -> Bmc:
    node = BmcConfig(name="node01", index=1, password=SecretStr(FACTORY_PW), tree=TREES_DIR / tree,
                     factory=factory, as_captured=as_captured)
    cfg = SimConfig(lab_dir=tmp, nodes=[node], control_token=SecretStr("t"), ready_file=tmp / "r.json",
                    log_file=tmp / "log")
    return Bmc(node, cfg, get_seed(node.tree, as_captured, cfg.parts), SimClock(cfg.speed))


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def call(bmc: Bmc, method: str, path: str, body: Any = None, auth: dict[str, str] | None = None) -> Reply:
    raw = json.dumps(body).encode() if body is not None else b""
    return bmc.handle(Request(method, path, auth if auth is not None else basic("admin", FACTORY_PW), raw))


def body(reply: Reply) -> dict[str, Any]:
    return json.loads(reply.raw) if reply.raw is not None else dict(reply.body or {})


def msg_ids(reply: Reply) -> list[str]:
    data = body(reply)
    infos = data["error"]["@Message.ExtendedInfo"] if "error" in data else data.get("@Message.ExtendedInfo", [])
    return [m["MessageId"].split(".", 1)[0] + "." + m["MessageId"].rsplit(".", 1)[1] for m in infos]


def login(bmc: Bmc, user: str, password: str) -> tuple[Reply, dict[str, str]]:
    reply = call(bmc, "POST", SESSIONS, {"UserName": user, "Password": password}, auth={})
    return reply, {"X-Auth-Token": reply.headers.get("X-Auth-Token", "")}


# --- the service -------------------------------------------------------------------------------
def test_account_service_roles_and_the_first_account(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    svc = body(call(bmc, "GET", "/redfish/v1/AccountService"))
    assert svc["MinPasswordLength"] == 8 and svc["MaxPasswordLength"] == 20
    roles = body(call(bmc, "GET", "/redfish/v1/AccountService/Roles"))
    assert sorted(m["@odata.id"].rsplit("/", 1)[1] for m in roles["Members"]) == ["Administrator", "Operator",
                                                                                  "ReadOnly"]
    ro = body(call(bmc, "GET", "/redfish/v1/AccountService/Roles/ReadOnly"))
    assert ro["AssignedPrivileges"] == ["Login", "ConfigureSelf"]
    acct = body(call(bmc, "GET", ADMIN))
    assert acct["UserName"] == "admin" and acct["RoleId"] == "Administrator"
    assert acct["Password"] is None and acct["PasswordChangeRequired"] is False
    assert FACTORY_PW not in json.dumps(acct)


def test_create_patch_delete_an_account(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    made = call(bmc, "POST", ACCOUNTS, {"UserName": "ops", "Password": "ops-pass-1", "RoleId": "Operator"})
    assert made.status == 201
    uri = made.headers["Location"]
    assert uri in [m["@odata.id"] for m in body(call(bmc, "GET", ACCOUNTS))["Members"]]
    assert call(bmc, "GET", "/redfish/v1/Systems", auth=basic("ops", "ops-pass-1")).status == 200
    assert call(bmc, "PATCH", uri, {"RoleId": "ReadOnly", "Password": "ops-pass-2"}).status == 200
    assert body(call(bmc, "GET", uri))["RoleId"] == "ReadOnly"
    assert call(bmc, "GET", "/redfish/v1/Systems", auth=basic("ops", "ops-pass-1")).status == 401
    assert call(bmc, "PATCH", uri, {"Enabled": False}).status == 200
    assert call(bmc, "GET", "/redfish/v1/Systems", auth=basic("ops", "ops-pass-2")).status == 401
    assert call(bmc, "DELETE", uri).status == 204
    assert call(bmc, "GET", uri).status == 404
    assert uri not in json.dumps(body(call(bmc, "GET", ACCOUNTS)))


@pytest.mark.parametrize(("new", "want"), [
    ({"UserName": "ops", "RoleId": "Operator"}, "Base.CreateFailedMissingReqProperties"),
    ({"UserName": "ops", "Password": "short", "RoleId": "Operator"}, "Base.PropertyValueFormatError"),
    ({"UserName": "ops", "Password": "x" * 21, "RoleId": "Operator"}, "Base.PropertyValueFormatError"),
    ({"UserName": "ops", "Password": "long-enough", "RoleId": "Wizard"}, "Base.PropertyValueNotInList"),
    ({"UserName": "admin", "Password": "long-enough", "RoleId": "Operator"}, "Base.ResourceAlreadyExists"),
    ({"UserName": "bad name!", "Password": "long-enough", "RoleId": "Operator"}, "Base.PropertyValueFormatError"),
    ({"UserName": "ops", "Password": "long-enough", "RoleId": "Operator", "Colour": 1}, "Base.PropertyUnknown"),
])
def test_bad_account_creates_are_400_and_make_nothing(tmp_path: Path, new: dict[str, Any], want: str) -> None:
    bmc = make_bmc(tmp_path)
    reply = call(bmc, "POST", ACCOUNTS, new)
    assert reply.status == 400 and msg_ids(reply)[0] == want
    assert body(call(bmc, "GET", ACCOUNTS))["Members@odata.count"] == 1
    assert "long-enough" not in json.dumps(body(reply))  # a refused password is never echoed


def test_bad_patch_applies_nothing_and_the_last_admin_stays(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    reply = call(bmc, "PATCH", ADMIN, {"Password": "new-password-1", "RoleId": "Nope"})
    assert reply.status == 400
    assert call(bmc, "GET", "/redfish/v1/Systems").status == 200  # the old password still works
    assert call(bmc, "PATCH", ADMIN, {"Locked": True}).status == 400
    assert call(bmc, "PATCH", ADMIN, {"RoleId": "ReadOnly"}).status == 400
    assert call(bmc, "PATCH", ADMIN, {"Enabled": False}).status == 400
    assert call(bmc, "DELETE", ADMIN).status == 400
    assert body(call(bmc, "GET", ADMIN))["RoleId"] == "Administrator"


def test_roles_limit_what_an_account_may_do(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    for user, role in (("ro", "ReadOnly"), ("op", "Operator")):
        assert call(bmc, "POST", ACCOUNTS, {"UserName": user, "Password": f"{user}-pass-1", "RoleId": role}).status \
            == 201
    ro, op = basic("ro", "ro-pass-1"), basic("op", "op-pass-1")
    system = "/redfish/v1/Systems/1"
    assert call(bmc, "GET", system, auth=ro).status == 200
    denied = call(bmc, "PATCH", system, {"AssetTag": "x"}, auth=ro)
    assert denied.status == 403 and msg_ids(denied) == ["Base.InsufficientPrivilege"]
    assert call(bmc, "PATCH", system, {"AssetTag": "x"}, auth=op).status == 200
    for who in (ro, op):  # accounts and the manager need ConfigureUsers / ConfigureManager
        assert call(bmc, "POST", ACCOUNTS, {"UserName": "x1", "Password": "x-pass-12", "RoleId": "ReadOnly"},
                    auth=who).status == 403
        assert call(bmc, "PATCH", "/redfish/v1/Managers/1/NetworkProtocol", {"HostName": "x"}, auth=who).status \
            == 403
    own = "/redfish/v1/AccountService/Accounts/2"
    assert call(bmc, "PATCH", own, {"Password": "ro-pass-2"}, auth=ro).status == 200  # ConfigureSelf
    assert call(bmc, "PATCH", own, {"RoleId": "Administrator"}, auth=basic("ro", "ro-pass-2")).status == 403


# --- factory state: PasswordChangeRequired ----------------------------------------------------
def test_factory_account_must_change_its_password_first(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path, factory=True)
    assert body(call(bmc, "GET", ADMIN))["PasswordChangeRequired"] is True  # GET of itself is allowed
    assert bmc.status()["password_change_required"] is True
    for method, path, req in (("GET", "/redfish/v1/Systems", None), ("GET", "/redfish/v1/AccountService", None),
                              ("PATCH", "/redfish/v1/Systems/1", {"AssetTag": "x"}),
                              ("PATCH", ADMIN, {"Password": "new-password-1", "RoleId": "Operator"}),
                              ("POST", ACCOUNTS, {"UserName": "a", "Password": "b" * 9, "RoleId": "ReadOnly"})):
        reply = call(bmc, method, path, req)
        assert reply.status == 403, (method, path)
        assert msg_ids(reply) == ["Base.PasswordChangeRequired"]
        assert body(reply)["error"]["@Message.ExtendedInfo"][0]["MessageArgs"] == [ADMIN]
    assert body(call(bmc, "GET", ACCOUNTS + "/1"))["RoleId"] == "Administrator"  # the refused PATCH did nothing

    made, token = login(bmc, "admin", FACTORY_PW)  # the session is made and carries the message
    assert made.status == 201 and msg_ids(made) == ["Base.PasswordChangeRequired"]
    assert call(bmc, "GET", "/redfish/v1/Systems", auth=token).status == 403
    same = call(bmc, "PATCH", ADMIN, {"Password": FACTORY_PW}, auth=token)
    assert same.status == 400  # the factory password again is no change
    assert call(bmc, "PATCH", ADMIN, {"Password": "site-password-1"}, auth=token).status == 200
    assert call(bmc, "GET", "/redfish/v1/Systems", auth=token).status == 200  # the same session, now free
    assert body(call(bmc, "GET", ADMIN, auth=token))["PasswordChangeRequired"] is False
    assert bmc.status()["password_change_required"] is False
    assert call(bmc, "GET", "/redfish/v1/Systems").status == 401  # the factory password stops working
    assert login(bmc, "admin", FACTORY_PW)[0].status == 401
    assert call(bmc, "GET", "/redfish/v1/Systems", auth=basic("admin", "site-password-1")).status == 200
    fresh, _ = login(bmc, "admin", "site-password-1")
    assert fresh.status == 201 and "@Message.ExtendedInfo" not in body(fresh)


def test_factory_session_may_log_itself_out(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path, factory=True)
    made, token = login(bmc, "admin", FACTORY_PW)
    other, _ = login(bmc, "admin", FACTORY_PW)
    assert call(bmc, "DELETE", other.headers["Location"], auth=token).status == 403
    assert call(bmc, "DELETE", made.headers["Location"], auth=token).status == 204
    assert call(bmc, "GET", ADMIN, auth=token).status == 401


def test_factory_password_change_over_basic_auth(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path, factory=True)
    assert call(bmc, "PATCH", ADMIN, {"Password": "site-password-1"}).status == 200
    assert call(bmc, "GET", "/redfish/v1/Systems").status == 401
    assert call(bmc, "GET", "/redfish/v1/Systems", auth=basic("admin", "site-password-1")).status == 200


def test_password_change_500_after_effect_fault(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path, factory=True)
    bmc.faults.set("password-change-500-after-effect")
    reply = call(bmc, "PATCH", ADMIN, {"Password": "site-password-1"})
    assert reply.status == 500 and msg_ids(reply) == ["Base.InternalError"]
    new = basic("admin", "site-password-1")
    assert call(bmc, "GET", "/redfish/v1/Systems", auth=new).status == 200  # it took effect
    assert call(bmc, "GET", "/redfish/v1/Systems").status == 401
    assert bmc.faults.get("password-change-500-after-effect") is None  # one use, then cleared
    assert call(bmc, "PATCH", ADMIN, {"Password": "site-password-2"}, auth=new).status == 200


def test_deleting_an_account_ends_its_sessions(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    uri = call(bmc, "POST", ACCOUNTS, {"UserName": "ops", "Password": "ops-pass-1", "RoleId": "Operator"}) \
        .headers["Location"]
    _, token = login(bmc, "ops", "ops-pass-1")
    assert call(bmc, "GET", "/redfish/v1/Systems", auth=token).status == 200
    assert call(bmc, "DELETE", uri).status == 204
    assert call(bmc, "GET", "/redfish/v1/Systems", auth=token).status == 401


def test_as_captured_tree_gains_the_account_service(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path, factory=True, tree="dell", as_captured=True)
    assert msg_ids(call(bmc, "GET", ACCOUNTS)) == ["Base.PasswordChangeRequired"]
    assert body(call(bmc, "GET", ADMIN))["PasswordChangeRequired"] is True
    assert call(bmc, "PATCH", ADMIN, {"Password": "site-password-1"}).status == 200
    coll = body(call(bmc, "GET", ACCOUNTS, auth=basic("admin", "site-password-1")))
    assert [m["@odata.id"] for m in coll["Members"]] == [ADMIN]


def test_captured_account_service_is_kept_and_its_policy_honoured(tmp_path: Path) -> None:
    """As captured, the capture's AccountService stays; the simulator's account joins its collection under the
    next free Id, and the capture's MinPasswordLength (a BlueField BMC's: 12) is the rule."""
    tree = Path(__file__).resolve().parent.parent / "fixtures" / "redfish" / "full" / "nvidia_dpu"
    node = BmcConfig(name="node01", index=1, password=SecretStr(FACTORY_PW), tree=tree, factory=True, as_captured=True)
    cfg = SimConfig(lab_dir=tmp_path, nodes=[node], control_token=SecretStr("t"), ready_file=tmp_path / "r.json",
                    log_file=tmp_path / "log")
    bmc = Bmc(node, cfg, get_seed(tree, True, cfg.parts), SimClock(cfg.speed))
    mine = bmc.accounts.collection + "/1"
    assert bmc.accounts.at(mine) is not None  # "1" is free: the captured members are root and the UEFI ones
    assert body(call(bmc, "GET", "/redfish/v1/AccountService/Accounts/root", auth=basic("admin", FACTORY_PW))) \
        ["error"]["code"].endswith("PasswordChangeRequired")
    short = call(bmc, "PATCH", mine, {"Password": "eleven-char"})
    assert short.status == 400 and msg_ids(short) == ["Base.PropertyValueFormatError"]
    assert call(bmc, "PATCH", mine, {"Password": "twelve-chars"}).status == 200
    members = [m["@odata.id"] for m in body(call(bmc, "GET", ACCOUNTS, auth=basic("admin", "twelve-chars")))["Members"]]
    assert mine in members and "/redfish/v1/AccountService/Accounts/root" in members
    assert body(call(bmc, "GET", "/redfish/v1/AccountService/Accounts/root", auth=basic("admin", "twelve-chars"))) \
        ["UserName"] == "root"  # captured, served as captured
