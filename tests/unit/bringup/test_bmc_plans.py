"""The day-zero plans as tables: given the spec and what was observed, these actions (pure functions)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID
from pydantic import SecretStr

from provision.bringup.stages.bmc_accounts import (
    AccountsObserved,
    InitialState,
    PasswordObserved,
    plan_accounts,
    plan_password,
)
from provision.bringup.stages.bmc_setup import BmcObserved, plan_bmc
from provision.errors import CheckFailed, InputError
from provision.redfish.ops import certificates as certs
from provision.redfish.ops.accounts import BmcAccount, LoginVerdict, change_required_account
from provision.redfish.ops.manager_settings import ManagerSettings, parse
from provision.spec import HostEntry, load_fleet
from provision.spec.bmc_setup import BmcSetup
from tests.conftest import EXAMPLE_INVENTORY
from tests.unit.bringup.bmcfake import key_pem, make_ca, pem

BASE: dict[str, HostEntry] = {}
U = "/redfish/v1/AccountService/Accounts"
SETUP = {"initial": {"user": "ADMIN", "password": {"env": "F"}, "rotate_to": {"env": "R"}},
         "accounts": [{"user": "provision", "password": {"inventory": True}},
                      {"user": "ro", "role": "ReadOnly", "password": {"env": "RO"}}],
         "ntp": ["10.0.0.1"], "hostname": "{node}-bmc", "dns": ["10.0.0.53", "10.0.0.54"],
         "protocols": {"ssdp": False}}


def host(**over: object) -> HostEntry:
    if not BASE:
        BASE["h"] = load_fleet(EXAMPLE_INVENTORY / "hosts.yml").select(["node01"])[0]
    base = BASE["h"]
    setup = BmcSetup.model_validate({**SETUP, **over})
    endpoint = base.bmc.model_copy(update={"address": "https://10.1.2.3", "password": SecretStr("x-y-z")})
    return base.model_copy(update={"spec": base.spec.model_copy(update={"bmc": setup}), "bmc": endpoint})


# state, the interrupted rotation's record -> actions (described), note
PASSWORD = [
    (InitialState.ROTATED, None, [], "account ADMIN: rotated"),
    (InitialState.ROTATED, 7, ["rotation-resolved account ADMIN: the new password works"],
     "a rotation was interrupted; the new password works (it took)"),
    (InitialState.FACTORY, None, ["rotate-password account ADMIN factory password -> rotated"],
     "account ADMIN: factory password"),
    (InitialState.CHANGE_REQUIRED, None,
     ["rotate-password account ADMIN factory password, change required -> rotated"],
     "account ADMIN: factory password, change required"),
    (InitialState.FACTORY, 7, ["rotation-resolved account ADMIN: the old password works",
                               "rotate-password account ADMIN factory password -> rotated"],
     "a rotation was interrupted; the old password still works: rotating again"),
]


@pytest.mark.parametrize(("state", "interrupted", "actions", "note"), PASSWORD)
def test_password_plan(state: InitialState, interrupted: int | None, actions: list[str], note: str) -> None:
    plan = plan_password(host(), PasswordObserved(state=state, account_uri=f"{U}/2", interrupted=interrupted))
    assert [a.describe() for a in plan.actions] == actions
    assert plan.note == note
    assert [getattr(a, "record", None) for a in plan.actions if a.kind == "rotation-resolved"] == \
        ([interrupted] if interrupted else [])
    assert plan.converged is (state is InitialState.ROTATED)


def test_password_plan_refuses_when_neither_password_works_or_the_account_is_unnamed() -> None:
    with pytest.raises(CheckFailed, match=r"neither its new password \(environment variable R\) nor its factory"):
        plan_password(host(), PasswordObserved(state=InitialState.NEITHER))
    with pytest.raises(CheckFailed, match="names no account URI"):
        plan_password(host(), PasswordObserved(state=InitialState.FACTORY))
    assert plan_password(host(initial=None), PasswordObserved(state=InitialState.NOT_MANAGED)).actions == ()


def acct(user: str, role: str = "Administrator", enabled: bool = True, n: int = 1) -> BmcAccount:
    return BmcAccount(uri=f"{U}/{n}", user=user, role=role, enabled=enabled)


OK, NO = LoginVerdict.OK, LoginVerdict.REFUSED
# accounts, password verdicts, spec overrides -> actions
ACCOUNTS = [
    ((acct("ADMIN"),), {}, {}, ["create-account account provision: Administrator", "create-account account ro: ReadOnly"]),
    ((acct("ADMIN"), acct("provision", n=2), acct("ro", "ReadOnly", n=3)), {"provision": OK, "ro": OK}, {}, []),
    ((acct("provision", "Operator", n=2), acct("ro", "ReadOnly", False, 3)), {"provision": OK, "ro": NO}, {},
     ["set-role account provision Operator -> Administrator", "enable-account account ro",
      "set-password account ro refused -> spec's"]),
    ((acct("provision", n=2), acct("ro", "ReadOnly", n=3), acct("svc", n=4)), {"provision": OK, "ro": OK},
     {"remove_unnamed": True}, ["remove-account account svc"]),
    ((acct("provision", n=2), acct("ro", "ReadOnly", n=3), acct("svc", n=4)), {"provision": OK, "ro": OK}, {}, []),
]


@pytest.mark.parametrize(("found", "passwords", "over", "actions"), ACCOUNTS)
def test_accounts_plan(found: tuple[BmcAccount, ...], passwords: dict[str, LoginVerdict], over: dict[str, object],
                       actions: list[str]) -> None:
    observed = AccountsObserved(acting="provision", collection=U, accounts=found, passwords=passwords)
    plan = plan_accounts(host(**over), observed)
    assert [a.describe() for a in plan.actions] == actions


def test_the_acting_account_and_the_initial_one_are_never_removed() -> None:
    found = (acct("ADMIN"), acct("provision", n=2), acct("ro", "ReadOnly", n=3), acct("root", n=5))
    observed = AccountsObserved(acting="root", collection=U, accounts=found, passwords={"provision": OK, "ro": OK})
    assert plan_accounts(host(remove_unnamed=True), observed).actions == ()


FACTORY = ManagerSettings(protocol_uri="/p", ntp_servers=(), ntp_enabled=False, ssdp=True, ipmi=True,
                          ethernet_uri="/e", hostname="x", dns=())
DONE = FACTORY.model_copy(update={"ntp_servers": ("10.0.0.1",), "ntp_enabled": True, "ssdp": False,
                                  "hostname": "node01-bmc", "dns": ("10.0.0.53", "10.0.0.54")})
SETTINGS = [
    (FACTORY, ["set-ntp NTP.NTPServers (none) -> 10.0.0.1", "set-ntp NTP.ProtocolEnabled False -> True",
               "set-hostname HostName x -> node01-bmc", "set-dns StaticNameServers (none) -> 10.0.0.53,10.0.0.54",
               "set-protocol SSDP.ProtocolEnabled True -> False"]),
    (DONE, []),
    (DONE.model_copy(update={"dns": ("10.0.0.54", "10.0.0.53")}),  # order is the resolver's order
     ["set-dns StaticNameServers 10.0.0.54,10.0.0.53 -> 10.0.0.53,10.0.0.54"]),
]


@pytest.mark.parametrize(("got", "actions"), SETTINGS)
def test_settings_plan(got: ManagerSettings, actions: list[str]) -> None:
    plan = plan_bmc(host(), BmcObserved(settings=got))
    assert [a.describe() for a in plan.actions] == actions


def test_a_setting_the_bmc_does_not_offer_is_refused_naming_it() -> None:
    with pytest.raises(CheckFailed, match=r"node01: the BMC offers no HostName \(the manager's EthernetInterface\)"):
        plan_bmc(host(), BmcObserved(settings=DONE.model_copy(update={"hostname": None})))


def test_settings_parse_drops_padding_and_reads_absent_as_none() -> None:
    got = parse({"NTP": {"NTPServers": ["a", "", ""], "ProtocolEnabled": True}, "SSDP": {}}, "/p",
                {"HostName": "h", "StaticNameServers": ["", "1.1.1.1"]}, "/e")
    assert (got.ntp_servers, got.ntp_enabled, got.ssdp, got.ipmi, got.hostname, got.dns) == \
        (("a",), True, None, None, "h", ("1.1.1.1",))
    assert parse(None, "/p", None, None) == ManagerSettings()
    unset = parse({"NTP": {"NTPServers": None}}, "/p", {"HostName": None, "StaticNameServers": None}, "/e")
    assert (unset.ntp_servers, unset.hostname, unset.dns) == ((), "", ())  # null: offered and not set


CERT = certs.CertObserved(csr_target="/csr", replace_target="/rep", collection="/c", cert_uri="/c/1", pem="x")
CERTS = [
    (CERT, certs.CertVerdict.SITE, [], "certificate issued by the site CA"),
    (CERT, certs.CertVerdict.OTHER_ISSUER, ["replace-certificate HTTPS certificate not issued by the site CA -> "
                                            "issued by the site CA"], "settings as the spec says"),
    (CERT, certs.CertVerdict.EXPIRING, ["replace-certificate HTTPS certificate ends soon -> issued by the site CA"],
     "settings as the spec says"),
    (CERT.model_copy(update={"csr_target": None}), certs.CertVerdict.OTHER_ISSUER, [],
     "certificate not issued by the site CA, left as it is: the BMC offers no GenerateCSR"),
    (CERT.model_copy(update={"replace_target": None}), certs.CertVerdict.OTHER_ISSUER, [],
     "certificate not issued by the site CA, left as it is: the BMC offers no ReplaceCertificate"),
]


@pytest.mark.parametrize(("cert", "verdict", "actions", "note"), CERTS)
def test_certificate_plan(cert: certs.CertObserved, verdict: certs.CertVerdict, actions: list[str], note: str) -> None:
    plan = plan_bmc(host(), BmcObserved(settings=DONE, cert=cert, verdict=verdict))
    assert [a.describe() for a in plan.actions] == actions
    assert plan.note == note


def test_judge_table(tmp_path: Path) -> None:
    ca, key = make_ca()
    other, _ = make_ca("Other")
    (tmp_path / "k").write_bytes(key_pem(key))
    now = datetime.datetime.now(datetime.UTC)
    csr = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bmc")]))
           .sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM).decode())
    signed = certs.sign_with_key(csr, ca, tmp_path / "k", 100, now, ["10.1.2.3", "bmc.example"])
    assert certs.judge(signed, ca, {"10.1.2.3", "bmc.example"}, 30, now) is certs.CertVerdict.SITE
    assert certs.judge(signed, ca, {"10.1.2.4"}, 30, now) is certs.CertVerdict.NAMES
    assert certs.judge(signed, ca, {"10.1.2.3"}, 30, now + datetime.timedelta(days=80)) is certs.CertVerdict.EXPIRING
    assert certs.judge(signed, other, {"10.1.2.3"}, 30, now) is certs.CertVerdict.OTHER_ISSUER
    assert certs.judge(pem(other), ca, set(), 30, now) is certs.CertVerdict.OTHER_ISSUER
    assert certs.judge(None, ca, set(), 30, now) is certs.CertVerdict.NONE
    assert certs.judge("not pem", ca, set(), 30, now) is certs.CertVerdict.NONE


def test_the_account_a_password_change_required_message_names() -> None:
    body = {"error": {"@Message.ExtendedInfo": [
        {"MessageId": "Base.1.8.1.PasswordChangeRequired", "MessageArgs": [f"{U}/2"]}]}}
    assert change_required_account(body) == f"{U}/2"
    assert change_required_account({"@Message.ExtendedInfo": [{"MessageId": "Base.1.0.Success"}]}) is None
    assert change_required_account("html") is None


def test_a_role_the_bmc_cannot_give_is_refused_before_any_account_is_touched() -> None:
    """iLO gives three roles (its plugin says which): a spec asking another is refused at plan time, naming the
    account and the role, with no action planned, even for the accounts listed before it."""
    found = (acct("ADMIN"),)
    offered = AccountsObserved(acting="provision", collection=U, accounts=found, passwords={},
                               roles=("Administrator", "Operator", "ReadOnly"))
    assert [a.kind for a in plan_accounts(host(), offered).actions] == ["create-account", "create-account"]
    narrow = offered.model_copy(update={"roles": ("Administrator", "Operator")})
    with pytest.raises(InputError, match=r"host node01: bmc.accounts ro: role 'ReadOnly' is not one this BMC offers"):
        plan_accounts(host(), narrow)


def test_the_hpe_plugin_names_the_roles_it_can_give_and_the_standard_fixes_none() -> None:
    from provision.redfish.vendors.base import VendorPlugin
    from provision.redfish.vendors.hpe import HpePlugin

    assert HpePlugin.account_roles == tuple(HpePlugin.ilo_privileges)  # the roles its privilege map makes
    assert VendorPlugin.account_roles is None
