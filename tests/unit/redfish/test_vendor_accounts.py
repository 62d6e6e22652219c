"""How an account is made or removed, per vendor plugin (provision/redfish/vendors/), as tables, and through the
real connector on a loopback BMC.

- DSP0266 default (Supermicro, Lenovo, the lab): POST to the Accounts collection, DELETE to remove.
- Dell iDRAC: fixed slots. No iDRAC AccountService capture exists in tests/fixtures or the shared captures, so
  DELL_SLOTS below is SYNTHETIC, written from Dell's documentation (iDRAC Redfish API guide, ManagerAccount;
  Dell's CreateIdracUserPasswordREDFISH scripts): Accounts/1..16 always listed, an unused slot with UserName "",
  slot 1 the reserved anonymous user, slot 2 root; a user is made by PATCHing a free slot, removed by disabling it
  then emptying its UserName.
- HPE iLO 5: POST with Oem.Hpe (LoginName, Privileges), checked against the real capture
  tests/fixtures/redfish/full/hpe (iLO 5 2.72): its root account's privilege names.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import SecretStr

from provision.errors import CheckFailed, InputError
from provision.redfish.ops import accounts as acc
from provision.redfish.resources import ServiceRoot
from provision.redfish.vendors.base import AccountRequest, AccountSlot
from provision.redfish.vendors.dell import DellPlugin
from provision.redfish.vendors.generic import GenericPlugin
from provision.redfish.vendors.hpe import HpePlugin
from provision.redfish.vendors.registry import detect
from tests.unit.redfish.full_captures import full_tree
from tests.unit.redfish.rf_fakebmc import FakeBmc, Served
from tests.unit.redfish.rf_support import options

ROOT = "/redfish/v1"
COLL = f"{ROOT}/AccountService/Accounts"
PW = "Site-acc0unt-Pw"


def slots(users: dict[int, str], count: int = 16) -> list[AccountSlot]:
    return [AccountSlot(uri=f"{COLL}/{i}", id=str(i), user=users.get(i, "")) for i in range(1, count + 1)]


@pytest.mark.parametrize(("users", "count", "picked"), [
    ({2: "root"}, 16, "3"),  # slot 1 is reserved (anonymous) though empty
    ({2: "root", 3: "ops", 4: "old-disabled"}, 16, "5"),  # occupied slots, enabled or not, are never taken
    ({i: f"u{i}" for i in range(2, 10)}, 16, "10"),  # numeric order: 10 after 9, not after 1
    ({i: f"u{i}" for i in range(2, 32)}, 32, "32"),  # iDRAC10: 32 slots
])
def test_dell_makes_an_account_by_patching_the_lowest_free_slot(users: dict[int, str], count: int,
                                                                 picked: str) -> None:
    listed = slots(users, count)
    listed.reverse()  # whatever order the BMC lists them in
    how = DellPlugin().create_account(COLL, listed, "provision", "Administrator")
    assert how == AccountRequest(method="PATCH", uri=f"{COLL}/{picked}", body={
        "UserName": "provision", "RoleId": "Administrator", "Enabled": True})


@pytest.mark.parametrize("users", [{i: f"u{i}" for i in range(1, 17)}, {i: f"u{i}" for i in range(2, 17)}])
def test_dell_with_no_free_slot_fails_in_one_line_naming_the_collection(users: dict[int, str]) -> None:
    with pytest.raises(CheckFailed, match=rf"^{COLL}: no free account slot for provision \(all 16 listed"):
        DellPlugin().create_account(COLL, slots(users), "provision", "Administrator")


def test_the_standard_posts_to_the_collection_and_deletes() -> None:
    assert GenericPlugin().create_account(COLL, (), "provision", "Operator") == AccountRequest(
        method="POST", uri=COLL, body={"UserName": "provision", "RoleId": "Operator", "Enabled": True})
    assert GenericPlugin().remove_account(f"{COLL}/5") == (AccountRequest(method="DELETE", uri=f"{COLL}/5"),)
    assert DellPlugin().remove_account(f"{COLL}/5") == (
        AccountRequest(method="PATCH", uri=f"{COLL}/5", body={"Enabled": False, "RoleId": "None"}),
        AccountRequest(method="PATCH", uri=f"{COLL}/5", body={"UserName": ""}))


def test_hpe_posts_with_the_privileges_of_the_role_named_as_the_capture_names_them() -> None:
    tree = full_tree("hpe")
    assert isinstance(detect(ServiceRoot.parse(tree[ROOT]), None), HpePlugin)  # by the captured root alone
    captured = tree[f"{COLL}/1"]["Oem"]["Hpe"]["Privileges"]  # the factory root account: every privilege
    admin = HpePlugin().create_account(COLL, (), "provision", "Administrator")
    assert (admin.method, admin.uri) == ("POST", COLL) and "Enabled" not in admin.body
    hpe = admin.body["Oem"]["Hpe"]
    assert hpe["LoginName"] == "provision" and admin.body["UserName"] == "provision"
    assert set(hpe["Privileges"]) == set(captured)  # every privilege iLO lists is named, none invented
    assert {p for p, on in hpe["Privileges"].items() if not on} == {"SystemRecoveryConfigPriv"}
    ro = HpePlugin().create_account(COLL, (), "viewer", "ReadOnly").body["Oem"]["Hpe"]["Privileges"]
    assert {p for p, on in ro.items() if on} == {"LoginPriv"}
    op = HpePlugin().create_account(COLL, (), "op", "Operator").body["Oem"]["Hpe"]["Privileges"]
    assert not op["UserConfigPriv"] and not op["iLOConfigPriv"] and op["VirtualPowerAndResetPriv"]
    with pytest.raises(InputError, match="role 'Auditor' is not one iLO defines"):
        HpePlugin().create_account(COLL, (), "x", "Auditor")


def _dell_tree() -> dict[str, Any]:
    """SYNTHETIC (module docstring): an iDRAC9 root (Vendor Dell, Oem.Dell) and 16 slots, 2 root, 3 taken."""
    tree: dict[str, Any] = {
        ROOT: {"@odata.id": ROOT, "RedfishVersion": "1.17.0", "Vendor": "Dell", "Oem": {"Dell": {}},
               "AccountService": {"@odata.id": f"{ROOT}/AccountService"},
               "SessionService": {"@odata.id": f"{ROOT}/SessionService"}},
        f"{ROOT}/AccountService": {"@odata.id": f"{ROOT}/AccountService", "Accounts": {"@odata.id": COLL}},
        COLL: {"@odata.id": COLL, "Members": [{"@odata.id": f"{COLL}/{i}"} for i in range(1, 17)],
               "Members@odata.count": 16},
    }
    for i in range(1, 17):
        user = {2: "admin", 3: "ops"}.get(i, "")
        tree[f"{COLL}/{i}"] = {"@odata.id": f"{COLL}/{i}", "Id": str(i), "UserName": user,
                               "RoleId": "Administrator" if user else "None", "Enabled": bool(user),
                               "Password": None}
    return tree


@pytest.mark.parametrize("kind", ["dell", "hpe"])
def test_through_the_connector_the_plugin_the_root_names_decides(kind: str) -> None:
    bmc = FakeBmc(tree=_dell_tree() if kind == "dell" else full_tree("hpe"))
    with Served(bmc) as srv, acc.open_as(options(srv.address), "admin", SecretStr("s3cret-Pa55")) as conn:
        bmc.seen.clear()
        made = acc.create_account(conn, COLL, "provision", "Administrator", SecretStr(PW))
        acc.delete_account(conn, f"{COLL}/3" if kind == "dell" else f"{COLL}/2")
    changes = [(s.method, s.path, json.loads(s.body or b"{}")) for s in bmc.seen if s.method != "GET"]
    if kind == "dell":
        assert made == f"{COLL}/4"
        assert changes == [
            ("PATCH", f"{COLL}/4", {"UserName": "provision", "RoleId": "Administrator", "Enabled": True,
                                    "Password": PW}),
            ("PATCH", f"{COLL}/3", {"Enabled": False, "RoleId": "None"}), ("PATCH", f"{COLL}/3", {"UserName": ""})]
    else:
        [(method, path, body), delete] = changes
        assert (method, path, body["Password"], body["Oem"]["Hpe"]["LoginName"]) == ("POST", COLL, PW, "provision")
        assert delete == ("DELETE", f"{COLL}/2", {})
