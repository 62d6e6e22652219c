"""A factory account through the real connector on a loopback BMC: a BMC answering every request 403
`PasswordChangeRequired` is that named verdict (with the account it names), its password is changed as DSP0266
says (a PATCH of the account's Password), and no password reaches a log line or an error."""

from __future__ import annotations

import logging

import pytest
from pydantic import SecretStr

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
