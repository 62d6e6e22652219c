"""A factory account through the real connector on a loopback BMC: a BMC answering every request 403
`PasswordChangeRequired` is that named verdict (with the account it names), its password is changed as DSP0266
says (a PATCH of the account's Password), and no password reaches a log line or an error."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr

from provision.cli import main
from provision.redfish.ops import accounts as acc
from tests.unit.redfish.rf_fakebmc import FakeBmc, Served
from tests.unit.redfish.rf_support import options, tree

ACCOUNT = "/redfish/v1/AccountService/Accounts/2"
NEW = "N3w-rotated-Pw"


@pytest.mark.parametrize("sessions", [True, False])
def test_a_factory_account_is_named_then_rotated_and_no_password_is_logged(
        sessions: bool, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    bmc = FakeBmc(tree=tree("supermicro"), change_first=True, sessions=sessions)
    with Served(bmc) as srv:
        opts = options(srv.address)
        probe = acc.probe_login(opts)
        assert probe("admin", SecretStr("s3cret-Pa55")) == acc.LoginResult(
            verdict=acc.LoginVerdict.CHANGE_REQUIRED, account_uri=ACCOUNT)
        assert probe("admin", SecretStr("wrong-Pw-1")).verdict is acc.LoginVerdict.REFUSED
        with acc.open_as(opts, "admin", SecretStr("s3cret-Pa55")) as conn:
            acc.change_password(conn, ACCOUNT, SecretStr(NEW))
        assert bmc.patches == [(ACCOUNT, {"Password": NEW})]
        assert probe("admin", SecretStr(NEW)).verdict is acc.LoginVerdict.OK
        assert probe("admin", SecretStr("s3cret-Pa55")).verdict is acc.LoginVerdict.REFUSED
    assert "HTTP REQUEST" in caplog.text or "PATCH" in caplog.text, "the connector's debug log must be captured"
    for secret in ("s3cret-Pa55", NEW, "wrong-Pw-1"):
        assert secret not in caplog.text


def test_bmc_setup_plan_on_a_factory_bmc_names_the_rotation_and_sends_no_change(
        inventory_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    hv = inventory_copy.parent / "host_vars" / "node01.yml"
    bmc = FakeBmc(tree=tree("supermicro"), change_first=True)
    monkeypatch.setenv("T_FACTORY_PW", "s3cret-Pa55")
    with Served(bmc) as srv:
        data = yaml.safe_load(hv.read_text())
        data.update(provision_bmc_address=srv.address, provision_bmc_username="admin", provision_bmc_password=NEW,
                    provision_bmc_insecure_http=True, provision_bmc_setup={"initial": {
                        "user": "admin", "password": {"env": "T_FACTORY_PW"}, "rotate_to": {"inventory": True}}})
        hv.write_text(yaml.safe_dump(data))
        code = main(["bmc", "setup", "node01", "--plan", "--json", "-i", str(inventory_copy),
                     "--journal", str(tmp_path / "j.db")])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["plan_only"] is True and out["run_id"] is None
    stages = {s["stage"]: s for s in out["stages"]}
    assert stages["bmc-password"]["outcome"] == "planned"
    assert stages["bmc-password"]["actions"] == [
        "rotate-password account admin factory password, change required -> rotated"]
    assert (stages["bmc-accounts"]["outcome"], stages["bmc"]["outcome"]) == ("skipped", "skipped")
    assert bmc.patches == [] and not [s for s in bmc.seen if s.method in ("POST", "PATCH", "DELETE")
                                      and "/SessionService/" not in s.path]


def test_a_factory_account_on_a_bmc_that_refuses_basic_auth_is_rotated_through_its_session() -> None:
    """A BMC that takes sessions only (`provision_bmc_auth: session`) and whose factory account must change its
    password: the session login answered PasswordChangeRequired is kept, the account it names PATCHed through it
    (no request carries HTTP basic), then the new password logs in and the old does not. Over basic, the same
    factory password reads as refused: why the host's auth decides."""
    bmc = FakeBmc(tree=tree("supermicro"), change_first=True, password_change=True, basic=False)
    with Served(bmc) as srv:
        assert acc.probe_login(options(srv.address))("admin", SecretStr("s3cret-Pa55")).verdict \
            is acc.LoginVerdict.REFUSED  # basic: refused whatever the password
        opts = options(srv.address, auth="session")
        probe = acc.probe_login(opts)
        bmc.seen.clear()
        assert probe("admin", SecretStr("s3cret-Pa55")) == acc.LoginResult(
            verdict=acc.LoginVerdict.CHANGE_REQUIRED, account_uri=ACCOUNT)
        with acc.open_as(opts, "admin", SecretStr("s3cret-Pa55")) as conn:
            acc.change_password(conn, ACCOUNT, SecretStr(NEW))
        assert bmc.patches == [(ACCOUNT, {"Password": NEW})]
        assert probe("admin", SecretStr(NEW)).verdict is acc.LoginVerdict.OK
        assert probe("admin", SecretStr("s3cret-Pa55")).verdict is acc.LoginVerdict.REFUSED
        assert not [s for s in bmc.seen if s.headers.get("authorization", "").startswith("Basic")]
        patch = [s for s in bmc.seen if s.method == "PATCH"]
        assert len(patch) == 1 and patch[0].headers.get("x-auth-token")  # through the session


def test_bmc_setup_rotates_a_sessions_only_factory_bmc(inventory_copy: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """`bmc setup` of a host with provision_bmc_auth: session on a BMC that refuses basic: the rotation applied
    through the factory session, and a second run finds it converged (the new password logs in)."""
    hv = inventory_copy.parent / "host_vars" / "node01.yml"
    bmc = FakeBmc(tree=tree("supermicro"), change_first=True, password_change=True, basic=False)
    monkeypatch.setenv("T_FACTORY_PW", "s3cret-Pa55")
    with Served(bmc) as srv:
        data = yaml.safe_load(hv.read_text())
        data.update(provision_bmc_address=srv.address, provision_bmc_username="admin", provision_bmc_password=NEW,
                    provision_bmc_insecure_http=True, provision_bmc_auth="session", provision_bmc_setup={"initial": {
                        "user": "admin", "password": {"env": "T_FACTORY_PW"}, "rotate_to": {"inventory": True}}})
        hv.write_text(yaml.safe_dump(data))
        runs, outs = [], []
        for _ in range(2):
            runs.append(main(["bmc", "setup", "node01", "--json", "-i", str(inventory_copy), "--journal",
                              str(tmp_path / "j.db")]))
            outs.append(json.loads(capsys.readouterr().out))
        first, second = outs
    assert runs == [0, 0]
    assert {s["stage"]: s["outcome"] for s in first["stages"]}["bmc-password"] == "applied"
    assert {s["stage"]: s["outcome"] for s in second["stages"]}["bmc-password"] == "converged"
    assert bmc.patches == [(ACCOUNT, {"Password": NEW})] and bmc.password == NEW
