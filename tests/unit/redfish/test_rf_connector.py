"""Connector against a real loopback HTTP(S) server: auth, retries, re-login, TLS, expand, redaction."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

import pytest
from rf_fakebmc import FakeBmc, Served, make_cert
from rf_support import connect, options, tree

from provision.redfish import transport_warnings
from provision.redfish.connector import Connector
from provision.redfish.errors import (
    RedfishAuthError,
    RedfishPasswordChangeRequired,
    RedfishTlsError,
    RedfishUnavailable,
)
from provision.redfish.ops.inventory import observe

SYS = "/redfish/v1/Systems/1"


def test_session_login_and_logout() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        conn = connect(srv)
        assert conn.get(SYS)["Model"] == "SYS-821GE-TNHR"
        assert any(s.method == "POST" and s.path.endswith("/Sessions") for s in bmc.seen)
        assert "x-auth-token" in bmc.seen[-1].headers
        conn.close()
    assert not bmc.tokens


def test_basic_fallback_when_no_session_service() -> None:
    bmc = FakeBmc(tree=tree("supermicro"), sessions=False)
    with Served(bmc) as srv:
        conn = connect(srv)
        conn.get(SYS)
        assert bmc.seen[-1].headers["authorization"].startswith("Basic ")


def test_wrong_password_is_auth_error() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv, pytest.raises(RedfishAuthError, match="refused"):
        connect(srv, password="wrong-one")


def test_a_bmc_that_wants_a_new_password_is_an_auth_error_naming_the_user() -> None:
    bmc = FakeBmc(tree=tree("supermicro"), password_change=True)
    with Served(bmc) as srv, pytest.raises(RedfishAuthError, match=r"'admin'.*password change"):
        connect(srv)


def test_a_bmc_that_answers_every_request_403_password_change_required_says_so() -> None:
    """Not "no ComputerSystem" (the Systems collection read as merely unreadable), and for basic auth too."""
    from provision.redfish.ops.session import open_node

    for sessions in (True, False):
        bmc = FakeBmc(tree=tree("supermicro"), change_first=True, sessions=sessions)
        with Served(bmc) as srv, pytest.raises(RedfishPasswordChangeRequired) as err:
            open_node(options(srv.address))
        assert "PasswordChangeRequired" in str(err.value) and "ComputerSystem" not in str(err.value)


def test_a_login_answered_password_change_required_is_that_error() -> None:
    bmc = FakeBmc(tree=tree("supermicro"), password_change=True)
    with Served(bmc) as srv, pytest.raises(RedfishPasswordChangeRequired):
        connect(srv)


def test_one_relogin_on_401() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        conn = connect(srv)
        bmc.tokens.clear()  # the BMC forgot every session (reset, timeout)
        assert conn.get(SYS)["Id"] == "1"
        assert conn.stats.relogins == 1


def test_persistent_401_fails_after_one_relogin() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        conn = connect(srv)
        bmc.fail(SYS, 401, times=5)
        with pytest.raises(RedfishAuthError):
            conn.get(SYS)
        assert conn.stats.relogins == 1


def test_retries_5xx_and_honours_retry_after() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    slept: list[float] = []
    with Served(bmc) as srv:
        conn = Connector(options(srv.address), sleep=slept.append)
        conn.open()
        bmc.fail(SYS, 503, times=1, headers={"Retry-After": "7"})
        bmc.fail(SYS, 500, times=1)
        assert conn.get(SYS)["Id"] == "1"
    assert slept[0] == 7.0
    assert len(slept) == 2


def test_gives_up_after_attempts() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        conn = connect(srv)
        bmc.fail(SYS, 503, times=10)
        with pytest.raises(RedfishUnavailable, match="503"):
            conn.get(SYS)
        assert len([s for s in bmc.seen if s.path == SYS]) == 3


def test_post_not_resent_after_500() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    target = f"{SYS}/Actions/ComputerSystem.Reset"
    with Served(bmc) as srv:
        conn = connect(srv)
        bmc.fail(target, 500, times=1)
        with pytest.raises(RedfishUnavailable):
            conn.post(target, {"ResetType": "On"})
        assert len([s for s in bmc.seen if s.path == target]) == 1


def test_connection_drop_is_retried() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        conn = connect(srv)
        bmc.drop[SYS] = 1
        assert conn.get(SYS)["Id"] == "1"
        assert conn.stats.retries >= 1


def test_unreachable_bmc_is_clear_error() -> None:
    conn = Connector(options("http://127.0.0.1:9"), sleep=lambda s: None)
    with pytest.raises(RedfishUnavailable, match="node01 BMC"):
        conn.open()


def test_patch_sends_if_match() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    uri = f"{SYS}/Bios/SD"
    with Served(bmc) as srv:
        conn = connect(srv)
        conn.patch(uri, {"Attributes": {"TurboMode_3D06": "Enable"}})
    sent = next(s for s in bmc.seen if s.method == "PATCH")
    assert sent.headers["if-match"] == tree("supermicro")[uri]["@odata.etag"]


def test_expand_used_when_advertised_and_cuts_requests() -> None:
    with Served(FakeBmc(tree=tree("supermicro"))) as srv:
        with_expand = connect(srv)
        observe(with_expand)
        assert any("$expand=.($levels=" in s.query for s in srv.bmc.seen)
    with Served(FakeBmc(tree=tree("supermicro"))) as srv:
        without = connect(srv, use_expand=False)
        inv = observe(without)
        assert not any("$expand" in s.query for s in srv.bmc.seen)
    assert with_expand.stats.requests < without.stats.requests
    assert len(inv.gpus) == 8


def test_expand_ignored_by_server_still_complete() -> None:
    bmc = FakeBmc(tree=tree("supermicro"), expand=False)
    with Served(bmc) as srv:
        inv = observe(connect(srv))
    assert len(inv.gpus) == 8 and len(inv.cpus) == 2


@pytest.mark.parametrize("status", [400, 404, 405, 501])
def test_expand_advertised_then_refused_reads_without_it_and_stops_asking(status: int) -> None:
    """sushy-static answers 404 to `?$expand=` (it looks the query up as a path); real BMCs answer
    400/405/501 where ExpandQuery outruns the firmware: the same URI is read again without the query,
    and no later collection is asked with `$expand` again."""
    bmc = FakeBmc(tree=tree("supermicro"), refuse_expand=status)
    with Served(bmc) as srv:
        conn = connect(srv)
        inv = observe(conn)
    with Served(FakeBmc(tree=tree("supermicro"))) as srv:
        plain = connect(srv, use_expand=False)
        want = observe(plain)
    assert len(inv.gpus) == 8 and len(inv.cpus) == 2 and inv.system.model == "SYS-821GE-TNHR"
    same = {"requests": 0, "missing": sorted(want.missing)}  # `missing` in the order parallel reads ended
    assert inv.model_copy(update=same) == want.model_copy(update=same) and sorted(inv.missing) == same["missing"]
    assert inv.requests == want.requests + 1  # the one refused read, and nothing more
    assert len([s for s in bmc.seen if "$expand" in s.query]) == 1


def test_a_missing_collection_does_not_turn_expand_off() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        conn = connect(srv)
        assert conn.get_optional_expanded("/redfish/v1/Systems/1/NoSuchCollection") is None
        assert conn.members("/redfish/v1/Systems")[0]["Id"] == "1"
    assert "$expand" in bmc.seen[-1].query and conn.stats.missing == ["/redfish/v1/Systems/1/NoSuchCollection"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return make_cert(tmp_path_factory.mktemp("tls"))


def test_tls_verified_by_default(certs: tuple[Path, Path, Path]) -> None:
    ca, cert, key = certs
    with Served(FakeBmc(tree=tree("supermicro")), tls=(cert, key)) as srv:
        conn = Connector(options(srv.address), sleep=lambda s: None)
        with pytest.raises(RedfishTlsError, match="TLS verification failed"):
            conn.open()
        ok = Connector(options(srv.address, ca_file=ca), sleep=lambda s: None)
        ok.open()
        assert ok.get(SYS)["Id"] == "1"


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_insecure_is_explicit_and_warns_once(certs: tuple[Path, Path, Path], caplog: pytest.LogCaptureFixture) -> None:
    _, cert, key = certs
    with Served(FakeBmc(tree=tree("supermicro")), tls=(cert, key)) as srv:
        transport_warnings.reset()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            conn = Connector(options(srv.address, verify_tls=False), sleep=lambda s: None)
            Connector(options(srv.address, verify_tls=False), sleep=lambda s: None).close()  # same BMC, same command
        said = [str(w.message) for w in caught if "verification is OFF" in str(w.message)]
        said += [r.getMessage() for r in caplog.records if "verification is OFF" in r.getMessage()]
        assert len(said) == 1, said
        conn.open()
        assert conn.get(SYS)["Id"] == "1"


def test_secrets_never_logged_or_in_errors(caplog: pytest.LogCaptureFixture) -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    caplog.set_level(logging.DEBUG)
    errors: list[str] = []
    with Served(bmc) as srv:
        conn = connect(srv)
        conn.get(SYS)
        bmc.tokens.clear()
        conn.get(SYS)  # re-login: a second token
        bmc.fail(SYS, 503, times=5)
        try:
            conn.get(SYS)
        except RedfishUnavailable as exc:
            errors.append(str(exc))
        conn.patch(f"{SYS}/Bios/SD", {"Attributes": {"Password": "s3cret-Pa55"}})
        # a redirect, followed on the same pool (the token goes with it: the same BMC)
        bmc.redirects[f"{SYS}/Moved"] = SYS
        assert conn.get(f"{SYS}/Moved")["Id"] == "1"
        conn.close()
        try:
            connect(srv, password="other-Secret-9")
        except RedfishAuthError as exc:
            errors.append(str(exc))
    issued = [s.headers.get("x-auth-token") for s in bmc.seen if s.headers.get("x-auth-token")]
    assert issued, "the test must see tokens in use"
    text = caplog.text + "\n".join(errors)
    assert "HTTP REQUEST" in caplog.text, "DEBUG logging of each request must be captured"
    for secret in ["s3cret-Pa55", "other-Secret-9", *issued]:
        assert secret not in text
