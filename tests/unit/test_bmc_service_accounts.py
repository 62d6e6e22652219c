"""The BMC's own accounts (a host-interface bootstrap account, one the BMC does not allow removing, one its vendor
plugin lists) are never planned for removal, by a clean or retirement (clean.bmc_reduce) or by the bmc-accounts
stage with remove_unnamed, and each kept one is reported. Plans as tables over the accounts of the real captures
in tests/fixtures/redfish/full (read from their files, the vendor plugin detected from each capture's root)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from provision.bringup.stages.bmc_accounts import AccountsObserved, plan_accounts
from provision.clean.bmc_reduce import AccountsSeen, plan_reduce_accounts
from provision.redfish.ops.accounts import BmcAccount, LoginVerdict, never_removed, parse_account, read_deletable
from provision.redfish.resources import ServiceRoot
from provision.redfish.vendors.base import VendorPlugin
from provision.redfish.vendors.dell import DellPlugin
from provision.redfish.vendors.registry import detect
from provision.redfish.vendors.service_accounts import ServiceAccount
from provision.spec import HostEntry, load_fleet
from provision.spec.bmc_setup import BmcSetup
from tests.conftest import EXAMPLE_INVENTORY

FULL = Path(__file__).resolve().parents[1] / "fixtures" / "redfish" / "full"
U = "/redfish/v1/AccountService/Accounts"
# the spec names two site accounts; this run logs in as root (each capture's login account)
SETUP = {"accounts": [{"user": "provision", "password": {"env": "P"}}], "remove_unnamed": True}


def _capture(name: str) -> tuple[tuple[BmcAccount, ...], tuple[ServiceAccount, ...], str]:
    """The capture's accounts as read from its files, its plugin's service accounts, and the plugin's name."""
    v1 = FULL / name / "redfish" / "v1"
    raw = [json.loads(p.read_text()) for p in sorted((v1 / "AccountService" / "Accounts").glob("*/index.json"))]
    accounts = tuple(a for a in (parse_account(r) for r in raw) if a is not None)
    plugin = detect(ServiceRoot.parse(json.loads((v1 / "index.json").read_text())), None)
    return accounts, plugin.service_accounts, plugin.name


def _host(setup: dict[str, Any] | None = None) -> HostEntry:
    base = load_fleet(EXAMPLE_INVENTORY / "hosts.yml").select(["node01"])[0]
    bmc = BmcSetup.model_validate(setup or SETUP)
    return base.model_copy(update={"spec": base.spec.model_copy(update={"bmc": bmc})})


HOST = _host()


def _clean(accounts: tuple[BmcAccount, ...], service: tuple[ServiceAccount, ...]) -> tuple[list[str], list[str], str]:
    assert HOST.spec.bmc is not None
    seen = AccountsSeen(acting="root", accounts=accounts, named=HOST.spec.bmc.named_accounts, service=service)
    plan = plan_reduce_accounts(HOST, seen)
    removed = [a.target.split()[-1] for a in plan.actions if a.kind == "remove-account"]
    kept = [a.target.split()[-1] for a in plan.actions if a.kind == "keep-account"]
    assert all(not a.changes_node for a in plan.actions if a.kind == "keep-account")
    return removed, kept, plan.note


def _bringup(accounts: tuple[BmcAccount, ...], service: tuple[ServiceAccount, ...]) -> tuple[list[str], str]:
    observed = AccountsObserved(acting="root", collection=U, accounts=accounts, service=service,
                                passwords={a.user: LoginVerdict.OK for a in accounts})
    plan = plan_accounts(HOST, observed)
    return [a.target.split()[-1] for a in plan.actions if a.kind == "remove-account"], plan.note


# capture -> plugin, accounts removed, accounts kept as the BMC's own (the spec names `provision`; root logs in)
CAPTURES = [
    ("nvidia_dpu", "nvidia_hgx", [], ["NvBluefieldUefi0", "NvBluefieldUefi1"]),
    ("nvidia_gh200", "nvidia_hgx", [], ["G1ZgR8ufrlnPjwJg", "coJhloVjcKVlTeiz", "fwupd"]),
    ("nvidia_gbswitch", "nvidia_hgx", ["admin", "colossus"], []),  # NVIDIA too: its site accounts go
    ("supermicro", "supermicro", ["tests_admin"], []),  # HostBootstrapAccount false: no mark
    ("lenovo", "lenovo", [], []),
    ("hpe", "hpe", ["tests_admin"], []),
]


@pytest.mark.parametrize(("name", "plugin", "removed", "kept"), CAPTURES)
def test_the_captures_accounts_are_reduced_but_the_bmc_s_own(name: str, plugin: str, removed: list[str],
                                                             kept: list[str]) -> None:
    accounts, service, detected = _capture(name)
    assert detected == plugin
    got_removed, got_kept, note = _clean(accounts, service)
    assert (sorted(got_removed), sorted(got_kept)) == (removed, kept)
    assert all(user in note for user in kept)
    bringup_removed, bringup_note = _bringup(accounts, service)
    assert sorted(bringup_removed) == removed
    assert all(user in bringup_note for user in kept)


def test_each_kept_account_says_why() -> None:
    accounts, service, _ = _capture("nvidia_gh200")
    why = {a.user: never_removed(a, service) for a in accounts}
    assert why["root"] is None
    assert "bootstrap" in str(why["G1ZgR8ufrlnPjwJg"]) and "bootstrap" in str(why["coJhloVjcKVlTeiz"])
    assert "firmware-update" in str(why["fwupd"])
    dpu, dpu_service, _ = _capture("nvidia_dpu")
    assert all("UEFI" in str(never_removed(a, dpu_service)) for a in dpu if a.user != "root")


def _like(account: BmcAccount, user: str, types: tuple[str, ...]) -> BmcAccount:
    return account.model_copy(update={"user": user, "uri": f"{U}/{user}", "account_types": types})


def test_a_tenant_account_on_the_same_bmc_is_still_removed() -> None:
    """The vendor list is no loophole by name alone: a 16-character account with more than the host interface's
    account types, and names near the BlueField's, are removed."""
    accounts, service, _ = _capture("nvidia_gh200")
    root = next(a for a in accounts if a.user == "root")
    tenants = (_like(root, "tenantaccount016", root.account_types), _like(root, "NvBluefieldUefiX", ("Redfish",)),
               _like(root, "fwupd2", root.account_types), _like(root, "tenant", ("Redfish", "WebUI")))
    removed, kept, _ = _clean(accounts + tenants, service)
    assert sorted(removed) == sorted(t.user for t in tenants)
    assert sorted(kept) == ["G1ZgR8ufrlnPjwJg", "coJhloVjcKVlTeiz", "fwupd"]


@pytest.mark.parametrize("name", [c[0] for c in CAPTURES])
def test_no_bootstrap_account_is_ever_planned_for_removal(name: str) -> None:
    """Every account of every capture, marked HostBootstrapAccount in turn (as a BMC of ManagerAccount v1_8_0 or
    later does), is kept by both plans, whatever its vendor (no plugin list: the standard's mark alone)."""
    accounts, _, _ = _capture(name)
    for i, account in enumerate(accounts):
        if account.user == "root":
            continue
        marked = (*accounts[:i], account.model_copy(update={"bootstrap": True}), *accounts[i + 1:])
        removed, kept, note = _clean(marked, ())
        assert account.user not in removed and account.user in kept, (name, account.user)
        assert "bootstrap" in note
        assert account.user not in _bringup(marked, ())[0]


def test_the_bootstrap_mark_is_read_from_the_account() -> None:
    raw = {"@odata.id": f"{U}/9", "UserName": "x9Kq", "RoleId": "Administrator", "HostBootstrapAccount": True,
           "AccountTypes": ["Redfish"]}
    parsed = parse_account(raw)
    assert parsed is not None and parsed.bootstrap and parsed.account_types == ("Redfish",)
    assert parse_account({**raw, "HostBootstrapAccount": False}).bootstrap is False  # type: ignore[union-attr]
    assert parse_account({k: v for k, v in raw.items() if k != "HostBootstrapAccount"}).bootstrap is False  # type: ignore[union-attr]


class _Answers:
    """A connector whose GET of each account answers the Allow header given (None: no header)."""

    def __init__(self, allow: dict[str, str | None]) -> None:
        self.allow = allow

    def request(self, method: str, uri: str) -> Any:
        headers = {} if self.allow[uri] is None else {"allow": self.allow[uri]}

        class R:
            def header(self, name: str) -> str | None:
                return headers.get(name.lower())
        return R()


def test_an_account_the_bmc_does_not_allow_deleting_is_kept() -> None:
    accounts = tuple(BmcAccount(uri=f"{U}/{u}", user=u, role="Administrator", enabled=True)
                     for u in ("root", "svc", "tenant", "quiet"))
    conn = _Answers({f"{U}/root": None, f"{U}/svc": "GET, PATCH", f"{U}/tenant": "GET,PATCH,DELETE",
                     f"{U}/quiet": None})
    read = read_deletable(conn, accounts, VendorPlugin())  # type: ignore[arg-type]
    assert [a.deletable for a in read] == [True, False, True, True]
    removed, kept, note = _clean(read, ())
    assert (sorted(removed), kept) == (["quiet", "tenant"], ["svc"])
    assert "does not allow removing" in note


def test_a_fixed_slot_bmc_s_account_is_removable_where_patch_is_allowed() -> None:
    """iDRAC's accounts are slots: removal empties one with PATCH, never DELETE, so an Allow of GET and PATCH
    leaves a tenant's slot removable there (on a DELETE BMC the same header keeps the account)."""
    tenant = (BmcAccount(uri=f"{U}/3", user="tenant", role="Administrator", enabled=True),)
    conn = _Answers({f"{U}/3": "GET, PATCH"})
    assert [a.deletable for a in read_deletable(conn, tenant, DellPlugin())] == [True]  # type: ignore[arg-type]
    assert [a.deletable for a in read_deletable(conn, tenant, VendorPlugin())] == [False]  # type: ignore[arg-type]
    assert [a.deletable for a in read_deletable(_Answers({f"{U}/3": "GET"}), tenant,  # type: ignore[arg-type]
                                                DellPlugin())] == [False]
