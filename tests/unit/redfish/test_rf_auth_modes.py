"""How the connector logs in: session, basic or auto (from the service root), the basic fallback after
a 401 on the session login, empty credentials refused before anything is sent, provision_bmc_auth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import SecretStr
from rf_fakebmc import FakeBmc, Served
from rf_support import connect, options, tree

from provision.cli import main as cli_main
from provision.errors import InventoryError
from provision.redfish.connector import SESSIONS, Connector, login_modes, session_uri
from provision.redfish.errors import RedfishAuthError
from provision.redfish.ops.session import options_for
from provision.spec.fleet import BmcEndpoint

ROOT = "/redfish/v1"
LINKED = {"Links": {"Sessions": {"@odata.id": "/redfish/v1/SessionService/Sessions"}}}
SERVICE_ONLY = {"SessionService": {"@odata.id": "/redfish/v1/SessionService"}}
SUSHY = {"Systems": {"@odata.id": "/redfish/v1/Systems"}}  # sushy-tools' emulator: no SessionService at all


@pytest.mark.parametrize(("auth", "root", "modes"), [
    ("auto", LINKED, ["session", "basic"]),
    ("auto", SERVICE_ONLY, ["session", "basic"]),
    ("auto", SUSHY, ["basic"]),
    ("auto", None, ["session", "basic"]),  # the root itself wanted credentials: what it offers is unknown
    ("session", SUSHY, ["session"]),
    ("session", LINKED, ["session"]),
    ("basic", LINKED, ["basic"]),
    ("basic", SUSHY, ["basic"]),
])
def test_login_modes(auth: Any, root: dict[str, Any] | None, modes: list[str]) -> None:
    assert login_modes(auth, root) == modes


@pytest.mark.parametrize(("root", "uri"), [
    ({"Links": {"Sessions": {"@odata.id": "/redfish/v1/Sess"}}}, "/redfish/v1/Sess"),
    (SERVICE_ONLY, SESSIONS),
    (SUSHY, None),
    ({"Links": {"Sessions": "not a link"}}, None),
])
def test_session_uri(root: dict[str, Any], uri: str | None) -> None:
    assert session_uri(root) == uri


def _sushy_like() -> FakeBmc:
    t = tree("supermicro")
    root = {k: v for k, v in t[ROOT].items() if k not in ("Links", "SessionService")}
    t[ROOT] = root
    return FakeBmc(tree=t, sessions=False)


def _posts(bmc: FakeBmc) -> int:
    return sum(1 for s in bmc.seen if s.method == "POST")


def test_auto_on_a_bmc_without_session_service_is_basic_without_trying_a_session() -> None:
    bmc = _sushy_like()
    with Served(bmc) as srv:
        conn = connect(srv)
        assert conn.get(f"{ROOT}/Systems/1")["Id"] == "1"
    assert _posts(bmc) == 0
    assert bmc.seen[-1].headers["authorization"].startswith("Basic ")


def test_auto_with_session_service_uses_a_session() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        conn = connect(srv)
        conn.get(f"{ROOT}/Systems/1")
    assert _posts(bmc) == 1
    assert "x-auth-token" in bmc.seen[-1].headers and "authorization" not in bmc.seen[-1].headers


def test_session_only_on_a_bmc_without_sessions_cannot_log_in() -> None:
    bmc = _sushy_like()
    with Served(bmc) as srv, pytest.raises(RedfishAuthError, match=r"cannot log in \(session\): HTTP 405") as err:
        connect(srv, auth="session")
    assert "\n" not in str(err.value)


def test_basic_is_never_a_session() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        connect(srv, auth="basic").get(f"{ROOT}/Systems/1")
    assert _posts(bmc) == 0


def test_a_401_on_the_session_login_retries_basic_once() -> None:
    bmc = FakeBmc(tree=tree("supermicro"), session_401=True)
    with Served(bmc) as srv:
        conn = connect(srv)
        assert conn.get(f"{ROOT}/Systems/1")["Id"] == "1"
    assert _posts(bmc) == 1
    assert bmc.seen[-1].headers["authorization"].startswith("Basic ")


def test_wrong_credentials_are_refused_after_one_basic_try() -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv, pytest.raises(RedfishAuthError, match=r"'admin' refused \(basic auth\)"):
        connect(srv, password="wrong-one")
    assert _posts(bmc) == 1
    assert sum(1 for s in bmc.seen if "authorization" in s.headers) == 1


def test_session_mode_does_not_fall_back_to_basic() -> None:
    bmc = FakeBmc(tree=tree("supermicro"), session_401=True)
    with Served(bmc) as srv, pytest.raises(RedfishAuthError, match=r"refused \(session auth\)"):
        connect(srv, auth="session")
    assert not any("authorization" in s.headers for s in bmc.seen)


@pytest.mark.parametrize(("user", "password"), [("", "s3cret-Pa55"), ("admin", ""), ("", "")])
def test_empty_credentials_are_refused_before_anything_is_sent(user: str, password: str) -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        with pytest.raises(RedfishAuthError, match="no BMC username/password configured"):
            Connector(options(srv.address, username=user, password=password)).open()
        endpoint = BmcEndpoint(address=srv.address, username=user, password=SecretStr(password),
                               insecure_http=True)
        with pytest.raises(InventoryError, match=r"host node07: provision_bmc_\w+.* not set.*PROVISION_BMC_USERNAME"):
            options_for("node07", endpoint)
    assert bmc.seen == []


def test_options_carry_the_auth_setting() -> None:
    endpoint = BmcEndpoint(address="https://b.example.net", username="u", password=SecretStr("p"), auth="basic")
    assert options_for("n", endpoint).auth == "basic"


def _set(inventory: Path, host: str, **values: object) -> None:
    hv = inventory.parent / "host_vars" / f"{host}.yml"
    data = yaml.safe_load(hv.read_text()) if hv.exists() else {}
    data.update(values)
    hv.write_text(yaml.safe_dump(data))


def test_provision_bmc_auth_per_host_and_group(inventory_copy: Path) -> None:
    from provision.spec import load_fleet

    group = inventory_copy.parent / "group_vars" / "all" / "bmc_auth.yml"
    group.write_text("---\nprovision_bmc_auth: session\n")
    _set(inventory_copy, "node02", provision_bmc_auth="basic")
    hosts = load_fleet(inventory_copy).hosts
    assert hosts["node01"].bmc.auth == "session" and hosts["node02"].bmc.auth == "basic"


def test_provision_bmc_auth_defaults_to_auto(inventory_copy: Path) -> None:
    from provision.spec import load_fleet

    assert {h.bmc.auth for h in load_fleet(inventory_copy).hosts.values()} == {"auto"}


def test_a_bad_provision_bmc_auth_is_one_line_naming_host_and_key(inventory_copy: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _set(inventory_copy, "node03", provision_bmc_auth="digest")
    assert cli_main(["spec", "validate", "-i", str(inventory_copy)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "node03" in err and "provision_bmc_auth" in err and "'digest'" in err


def test_cli_without_credentials_is_one_line_and_sends_nothing(inventory_copy: Path,
                                                              capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROVISION_BMC_USERNAME", raising=False)
    monkeypatch.delenv("PROVISION_BMC_PASSWORD", raising=False)
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        _set(inventory_copy, "node01", provision_bmc_address=srv.address, provision_bmc_insecure_http=True)
        code = cli_main(["power", "node01", "status", "-i", str(inventory_copy)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "node01" in err and "provision_bmc_username" in err
    assert bmc.seen == []
