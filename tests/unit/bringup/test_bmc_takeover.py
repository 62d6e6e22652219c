"""The day-zero BMC stages end to end on an in-process BMC: from factory state one run converges and a second
plans nothing; a kill at each failpoint resumes without lockout; the BMC's own failures are one line each."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from provision.bringup import failpoint
from provision.bringup.engine import run_bringup
from provision.bringup.model import Outcome
from provision.bringup.options import BringupOptions
from provision.bringup.stages.bmc_accounts import BmcAccountsStage, BmcPasswordStage
from provision.bringup.stages.bmc_setup import BmcSetupStage
from provision.journal import Journal
from provision.redfish.ops import certificates as certs
from provision.redfish.ops.waiting import Clock
from provision.spec import HostEntry, load_fleet
from provision.spec.bmc_setup import BmcSetup, CertificateSpec
from tests.conftest import EXAMPLE_INVENTORY
from tests.unit.bringup.bmcfake import ACCOUNTS, MANAGER, Account, FakeBmc, FakeConn, key_pem, make_ca, pem

FACTORY, ROTATED, SITE, OPERATOR = "factory-pw", "Rotated-adm1n-pw", "Site-prov1sion-pw", "0perator-pw-x"
SECRETS = (FACTORY, ROTATED, SITE, OPERATOR)
BASE: dict[str, HostEntry] = {}


class Killed(BaseException):
    """What SIGKILL at a failpoint does to the run: nothing after it happens, the journal keeps what it had."""


class FastClock(Clock):
    def __init__(self) -> None:
        self.t = 0.0
        super().__init__(poll_s=1.0, sleep=self._sleep, now=lambda: self.t)

    def _sleep(self, s: float) -> None:
        self.t += s


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HostEntry:
    if not BASE:
        BASE["node01"] = load_fleet(EXAMPLE_INVENTORY / "hosts.yml").select(["node01"])[0]
    ca, key = make_ca()
    (tmp_path / "ca.pem").write_text(pem(ca))
    (tmp_path / "ca.key").write_bytes(key_pem(key))
    monkeypatch.setenv("T_FACTORY", FACTORY)
    monkeypatch.setenv("T_ROTATED", ROTATED)
    monkeypatch.setenv("T_OPERATOR", OPERATOR)
    setup = BmcSetup.model_validate({
        "initial": {"user": "ADMIN", "password": {"env": "T_FACTORY"}, "rotate_to": {"env": "T_ROTATED"}},
        "accounts": [{"user": "provision", "role": "Administrator", "password": {"inventory": True}},
                     {"user": "operator", "role": "Operator", "password": {"env": "T_OPERATOR"}}],
        "certificate": {"ca_cert": str(tmp_path / "ca.pem"), "ca_key": str(tmp_path / "ca.key"),
                        "sans": ["{node}-bmc.example"]},
        "ntp": ["10.0.0.1", "10.0.0.2"], "hostname": "{node}-bmc", "dns": ["10.0.0.53"],
        "protocols": {"ssdp": False, "ipmi": False}})
    base = BASE["node01"]
    endpoint = base.bmc.model_copy(update={"address": "https://127.0.0.1:8443", "username": "provision",
                                           "password": SecretStr(SITE), "ca_file": tmp_path / "ca.pem"})
    return base.model_copy(update={"spec": base.spec.model_copy(update={"bmc": setup}), "bmc": endpoint})


def _served(bmc: FakeBmc) -> Any:
    def served(host: HostEntry, cert: CertificateSpec) -> str | None:
        ca = certs.load_cert(cert.ca_cert.read_bytes(), "ca")
        ok = bmc.cert_pem and certs.issued_by(certs.load_cert(bmc.cert_pem, "served"), ca)
        return None if ok else "self-signed certificate"
    return served


def stages(bmc: FakeBmc, clock: Clock | None = None) -> list[Any]:
    opts = BringupOptions(inventory=Path("."), poll_s=0.0)

    @contextmanager
    def session(ctx: object) -> Iterator[tuple[FakeConn, str]]:
        yield FakeConn(bmc, "provision"), MANAGER

    fakes = {"probes": lambda h: bmc.login, "opener": bmc.opener}
    return [BmcPasswordStage(opts, **fakes), BmcAccountsStage(opts, **fakes),
            BmcSetupStage(opts, session=session, served=_served(bmc), clock=clock or FastClock())]


def run(host: HostEntry, bmc: FakeBmc, journal: Journal | None, plan: bool = False) -> dict[str, Any]:
    result = run_bringup([host], stages(bmc), journal=journal, plan_only=plan)
    return {s.stage: s for s in result.nodes[0].stages}


def _factory() -> FakeBmc:
    ca, _ = make_ca("Factory self-signed")
    return FakeBmc(cert_pem=pem(ca))


def _journal_text(journal: Journal) -> str:
    rows = journal.query("SELECT action, target, detail FROM actions") + \
        journal.query("SELECT stage, detail FROM node_stages")
    return "\n".join(" ".join(str(v) for v in tuple(r)) for r in rows)


def test_a_factory_bmc_is_taken_over_in_one_run_and_a_second_plans_nothing(host: HostEntry, tmp_path: Path) -> None:
    bmc = _factory()
    with Journal(tmp_path / "j.db") as jr:
        first = run(host, bmc, jr)
        assert [(s, r.outcome) for s, r in first.items()] == [
            ("bmc-password", Outcome.APPLIED), ("bmc-accounts", Outcome.APPLIED), ("bmc", Outcome.APPLIED)], \
            {s: r.error for s, r in first.items()}
        users = {a.user: a for a in bmc.accounts.values()}
        assert users["ADMIN"].password == ROTATED and not users["ADMIN"].change_required
        assert (users["provision"].password, users["provision"].role) == (SITE, "Administrator")
        assert (users["operator"].password, users["operator"].role) == (OPERATOR, "Operator")
        assert bmc.proto["NTP"] == {"ProtocolEnabled": True, "NTPServers": ["10.0.0.1", "10.0.0.2"]}
        assert (bmc.proto["SSDP"]["ProtocolEnabled"], bmc.proto["IPMI"]["ProtocolEnabled"]) == (False, False)
        assert (bmc.eth["HostName"], bmc.eth["StaticNameServers"]) == ("node01-bmc", ["10.0.0.53"])
        served = certs.load_cert(bmc.cert_pem, "served")
        assert certs.names_of(served) >= {"127.0.0.1", "node01-bmc.example"}
        kinds = [a.action for a in jr.actions("node01")]
        assert kinds == ["rotate-password", "create-account", "create-account", "set-ntp", "set-ntp", "set-hostname",
                         "set-dns", "set-protocol", "set-protocol", "replace-certificate"]
        assert all(a.outcome == "ok" for a in jr.actions("node01"))
        before = len(bmc.requests)
        second = run(host, bmc, jr)
        assert {s: (r.outcome, r.plan.actions) for s, r in second.items()} == {
            s: (Outcome.CONVERGED, ()) for s in ("bmc-password", "bmc-accounts", "bmc")}
        assert len(bmc.requests) == before  # nothing written
        text = _journal_text(jr)
    assert not [s for s in SECRETS if s in text], text


def test_plan_on_a_factory_bmc_shows_the_rotation_and_changes_nothing(host: HostEntry) -> None:
    bmc = _factory()
    got = run(host, bmc, None, plan=True)
    assert got["bmc-password"].outcome is Outcome.PLANNED
    assert [a.describe() for a in got["bmc-password"].plan.actions] == [
        "rotate-password account ADMIN factory password, change required -> rotated"]
    assert (got["bmc-accounts"].outcome, got["bmc"].outcome) == (Outcome.SKIPPED, Outcome.SKIPPED)
    assert bmc.requests == [] and bmc.accounts[f"{ACCOUNTS}/1"].password == FACTORY


# failpoint -> what the resumed run's bmc-password note says
KILLS = [
    ("rotate-password:before", "the old password still works: rotating again"),
    ("rotate-password:after", "the new password works (it took)"),
    ("create-account:before", "account ADMIN: rotated"),
    ("create-account:after", "account ADMIN: rotated"),
    ("set-ntp:after", "account ADMIN: rotated"),
    ("replace-certificate:csr", "account ADMIN: rotated"),
    ("replace-certificate:signed", "account ADMIN: rotated"),
    ("replace-certificate:after", "account ADMIN: rotated"),
]


@pytest.mark.parametrize(("point", "note"), KILLS)
def test_a_kill_at_each_failpoint_resumes_without_lockout(host: HostEntry, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch, point: str, note: str) -> None:
    bmc = _factory()

    def hit(action: str, when: str) -> None:
        if f"{action}:{when}" == point:
            raise Killed(point)

    with Journal(tmp_path / "j.db") as jr:
        monkeypatch.setattr(failpoint, "hit", hit)
        with pytest.raises(Killed):
            run(host, bmc, jr)
        monkeypatch.undo()
        monkeypatch.setenv("T_FACTORY", FACTORY)
        monkeypatch.setenv("T_ROTATED", ROTATED)
        monkeypatch.setenv("T_OPERATOR", OPERATOR)
        resumed = run(host, bmc, jr)
        assert all(r.outcome in (Outcome.APPLIED, Outcome.CONVERGED) for r in resumed.values()), \
            {s: r.error for s, r in resumed.items()}
        assert note in resumed["bmc-password"].plan.note
        again = run(host, bmc, jr)
        assert all(r.outcome is Outcome.CONVERGED and not r.plan.actions for r in again.values())
        # the dead run's rotation record is closed, saying which password worked (others stay as the kill left them)
        assert not [a for a in jr.open_actions("node01") if a.action == "rotate-password"]
        rotations = [(a.outcome, a.detail) for a in jr.actions("node01") if a.action == "rotate-password"]
        if point == "rotate-password:after":
            assert rotations == [("ok", "after a restart: the new password works")]
        elif point == "rotate-password:before":
            assert rotations[0] == ("failed", "after a restart: the old password works") and rotations[1][0] == "ok"
    users = {a.user: a.password for a in bmc.accounts.values()}
    assert users == {"ADMIN": ROTATED, "provision": SITE, "operator": OPERATOR}
    assert certs.issued_by(certs.load_cert(bmc.cert_pem, "served"),
                           certs.load_cert((tmp_path / "ca.pem").read_bytes(), "ca"))


def test_a_password_change_answered_500_after_it_took_counts_as_done(host: HostEntry, tmp_path: Path) -> None:
    bmc = _factory()
    bmc.password_500 = True
    with Journal(tmp_path / "j.db") as jr:
        got = run(host, bmc, jr)
        assert got["bmc-password"].outcome is Outcome.APPLIED, got["bmc-password"].error
        assert [a.outcome for a in jr.actions("node01") if a.action == "rotate-password"] == ["ok"]


def test_a_password_change_refused_is_one_line_and_stops_the_node(host: HostEntry) -> None:
    bmc = _factory()
    bmc.accounts[f"{ACCOUNTS}/1"] = Account("ADMIN", "someone-else-changed-it")
    got = run(host, bmc, None)
    assert got["bmc-password"].outcome is Outcome.FAILED and "bmc-accounts" not in got
    assert "neither its new password (environment variable T_ROTATED) nor its factory password" \
        in got["bmc-password"].error
    assert "\n" not in got["bmc-password"].error


def test_a_bmc_without_generate_csr_leaves_its_certificate_and_says_so(host: HostEntry) -> None:
    bmc = _factory()
    bmc.csr = "none"
    factory_cert = bmc.cert_pem
    got = run(host, bmc, None)
    assert got["bmc"].outcome is Outcome.APPLIED
    assert "left as it is: the BMC offers no GenerateCSR" in got["bmc"].plan.note
    assert bmc.cert_pem == factory_cert
    assert run(host, bmc, None)["bmc"].outcome is Outcome.CONVERGED


def test_a_csr_task_that_never_completes_fails_at_its_deadline(host: HostEntry) -> None:
    bmc = _factory()
    bmc.csr = "never"
    got = run(host, bmc, None)
    assert got["bmc"].outcome is Outcome.FAILED
    assert "did not complete within 120 s (bmc.certificate.csr_timeout_s)" in got["bmc"].error
    assert "Tasks/9" in got["bmc"].error


def test_a_csr_by_task_is_followed(host: HostEntry) -> None:
    bmc = _factory()
    bmc.csr = "task"
    done = {"n": 0}
    orig = FakeConn.request

    def request(self: FakeConn, method: str, uri: str, **kw: Any) -> Any:
        if uri.endswith("Tasks/9"):
            done["n"] += 1
            if done["n"] == 3:
                from provision.redfish.connector import Response
                return Response(200, {}, {"CSRString": bmc.make_csr({"CommonName": "127.0.0.1"})})
        return orig(self, method, uri, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(FakeConn, "request", request)
        got = run(host, bmc, None)
    assert got["bmc"].outcome is Outcome.APPLIED, got["bmc"].error
    assert done["n"] == 3


def test_a_setting_that_reads_otherwise_after_its_write_is_an_error_naming_it(host: HostEntry) -> None:
    bmc = _factory()
    bmc.ignore = {"NTP.NTPServers"}
    got = run(host, bmc, None)
    assert got["bmc"].outcome is Outcome.FAILED
    assert "NTP.NTPServers of /redfish/v1/Managers/1/NetworkProtocol reads [] after writing ['10.0.0.1', " \
        "'10.0.0.2']" in got["bmc"].error


def test_a_ca_key_of_another_ca_is_refused_before_anything_is_sent(host: HostEntry, tmp_path: Path) -> None:
    _, other = make_ca("Other CA")
    (tmp_path / "ca.key").write_bytes(key_pem(other))
    bmc = _factory()
    got = run(host, bmc, None)
    assert got["bmc-password"].outcome is Outcome.FAILED
    assert got["bmc-password"].error == (f"{tmp_path / 'ca.key'}: this CA key does not match the CA certificate "
                                         f"{tmp_path / 'ca.pem'}; nothing sent")
    assert bmc.requests == []


def test_unnamed_accounts_are_listed_and_removed_only_when_the_spec_says(host: HostEntry) -> None:
    bmc = _factory()
    bmc.accounts[f"{ACCOUNTS}/7"] = Account("vendor-svc", "x-y-z")
    got = run(host, bmc, None)
    assert "accounts the spec does not name (kept; remove_unnamed: true removes them): vendor-svc" \
        in got["bmc-accounts"].plan.note
    assert "vendor-svc" in {a.user for a in bmc.accounts.values()}
    assert host.spec.bmc is not None
    removing = host.model_copy(update={"spec": host.spec.model_copy(
        update={"bmc": host.spec.bmc.model_copy(update={"remove_unnamed": True})})})
    got = run(removing, bmc, None)
    assert [a.describe() for a in got["bmc-accounts"].plan.actions] == ["remove-account account vendor-svc"]
    assert "vendor-svc" not in {a.user for a in bmc.accounts.values()}


def test_a_site_certificate_near_its_end_is_replaced(host: HostEntry, tmp_path: Path) -> None:
    bmc = _factory()
    run(host, bmc, None)
    assert host.spec.bmc is not None and host.spec.bmc.certificate is not None
    ca = certs.load_cert((tmp_path / "ca.pem").read_bytes(), "ca")
    soon = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=host.spec.bmc.certificate.days - 1)
    assert certs.judge(bmc.cert_pem, ca, {"127.0.0.1"}, 30, datetime.datetime.now(datetime.UTC)) \
        is certs.CertVerdict.SITE
    assert certs.judge(bmc.cert_pem, ca, {"127.0.0.1"}, 30, soon) is certs.CertVerdict.EXPIRING


SIGNER = """
import datetime, os, sys
from pathlib import Path
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
here = Path(sys.argv[1])
Path(here / "seen-env").write_text("\\n".join(f"{k}={v}" for k, v in os.environ.items()))
csr = x509.load_pem_x509_csr(sys.stdin.read().encode())
ca = x509.load_pem_x509_certificate((here / "ca.pem").read_bytes())
key = serialization.load_pem_private_key((here / "ca.key").read_bytes(), None)
now = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder().subject_name(csr.subject).issuer_name(ca.subject).public_key(csr.public_key())
        .serial_number(7).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=90))
        .add_extension(csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value, critical=False)
        .sign(key, hashes.SHA256()))
sys.stdout.write(cert.public_bytes(serialization.Encoding.PEM).decode())
"""


def test_the_sites_signing_command_signs_with_no_secret_in_its_argv_or_environment(
        host: HostEntry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    (tmp_path / "signer.py").write_text(SIGNER)
    monkeypatch.setenv("PROVISION_BMC_PASSWORD", SITE)
    assert host.spec.bmc is not None and host.spec.bmc.certificate is not None
    cert = host.spec.bmc.certificate.model_copy(update={
        "ca_key": None, "sign_command": (sys.executable, str(tmp_path / "signer.py"), str(tmp_path))})
    signing = host.model_copy(update={"spec": host.spec.model_copy(update={
        "bmc": host.spec.bmc.model_copy(update={"certificate": cert})})})
    bmc = _factory()
    got = run(signing, bmc, None)
    assert got["bmc"].outcome is Outcome.APPLIED, got["bmc"].error
    assert certs.load_cert(bmc.cert_pem, "served").serial_number == 7
    seen = (tmp_path / "seen-env").read_text()
    assert "PROVISION_BMC_PASSWORD" not in seen and not [s for s in SECRETS if s in seen]


def test_a_signing_command_that_fails_is_one_line_and_nothing_is_installed(host: HostEntry) -> None:
    assert host.spec.bmc is not None and host.spec.bmc.certificate is not None
    cert = host.spec.bmc.certificate.model_copy(update={"ca_key": None, "sign_command": ("false",)})
    failing = host.model_copy(update={"spec": host.spec.model_copy(update={
        "bmc": host.spec.bmc.model_copy(update={"certificate": cert})})})
    bmc = _factory()
    before = bmc.cert_pem
    got = run(failing, bmc, None)
    assert got["bmc"].outcome is Outcome.FAILED and got["bmc"].error == "sign_command false exited 1"
    assert bmc.cert_pem == before


def test_ntp_servers_past_the_spec_are_removed_with_nulls(host: HostEntry) -> None:
    """A BMC listing more servers than the spec: the PATCH nulls the rest (DSP0266: items not named are kept)."""
    bmc = _factory()
    bmc.proto["NTP"]["NTPServers"] = ["0.pool.example", "1.pool.example", "2.pool.example"]
    got = run(host, bmc, None)
    assert got["bmc"].outcome is Outcome.APPLIED, got["bmc"].error
    assert bmc.proto["NTP"]["NTPServers"] == ["10.0.0.1", "10.0.0.2"]
    assert ("PATCH", "/redfish/v1/Managers/1/NetworkProtocol",
            {"NTP": {"NTPServers": ["10.0.0.1", "10.0.0.2", None]}}) in bmc.requests
