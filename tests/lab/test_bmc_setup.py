"""`provision bmc setup` on a factory lab BMC (`lab up --factory`): a kill between the password change and its
journal write resumes without lockout; from factory state the password is rotated, the site account made, a
site-CA-signed certificate installed and NTP/host name set; a second run, without --insecure, verifies TLS
against the site CA and plans nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redfish
import yaml

from provision.conformance.model import Outcome
from provision.spec import load_fleet
from tests.unit.bringup.bmcfake import key_pem, make_ca, pem

pytestmark = pytest.mark.lab

CLI = [sys.executable, "-c", "from provision.cli import run; run()"]
SITE_PW, ROTATED_PW = "Site-prov1sion-pw", "Rotated-adm1n-pw"


@pytest.fixture(scope="module")
def factory(lab_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with lab_factory(tmp_path_factory.mktemp("bmcsetup"), nodes=1, factory=True) as lab:
        yield lab


def _take_over_inventory(lab: Any, tmp: Path, csr_timeout_s: float = 120.0) -> tuple[Path, dict[str, str]]:
    """node01 with a bmc: section: the lab's account is the initial one, `provision` the site's."""
    inv = lab.state.lab_dir / "inventory"
    hv_file = inv / "host_vars" / "node01.yml"
    hv = yaml.safe_load(hv_file.read_text())
    ca, key = make_ca("lab site CA")
    (tmp / "ca.pem").write_text(pem(ca))
    (tmp / "ca.key").write_bytes(key_pem(key))
    (tmp / "admin.pw").write_text(ROTATED_PW + "\n")
    os.chmod(tmp / "admin.pw", 0o600)
    env = {**os.environ, "LAB_FACTORY_PW": hv["provision_bmc_password"]}
    hv.pop("provision_bmc_ca_file", None)  # the site CA's, once the bmc: section names it
    hv.update({
        "provision_bmc_username": "provision", "provision_bmc_password": SITE_PW,
        "provision_bmc_setup": {
            "initial": {"user": hv["provision_bmc_username"], "password": {"env": "LAB_FACTORY_PW"},
                        "rotate_to": {"file": str(tmp / "admin.pw")}},
            "accounts": [{"user": "provision", "role": "Administrator", "password": {"inventory": True}}],
            "certificate": {"ca_cert": str(tmp / "ca.pem"), "ca_key": str(tmp / "ca.key"),
                            "sans": ["localhost"], "csr_timeout_s": csr_timeout_s},
            "ntp": ["192.0.2.10", "192.0.2.11"], "hostname": "{node}-bmc"}})
    hv_file.write_text("---\n" + yaml.safe_dump(hv, sort_keys=False))
    return inv / "hosts.yml", env


def _setup(inv: Path, env: dict[str, str], journal: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "bmc", "setup", "node01", "-i", str(inv), "--journal", str(journal), *extra],
                          capture_output=True, text=True, timeout=180, env=env, check=False)


def test_factory_bmc_taken_over_resumes_after_a_kill_and_converges(factory: Any, tmp_path: Path) -> None:
    inv, env = _take_over_inventory(factory, tmp_path)
    journal = tmp_path / "journal.db"
    plan = _setup(inv, env, journal, "--plan", "--insecure")
    assert plan.returncode == 0, plan.stderr
    assert "bmc-password: planned: rotate-password account admin factory password, change required" in plan.stdout

    killed = _setup(inv, {**env, "PROVISION_FAILPOINT": "rotate-password:after"}, journal, "--insecure")
    assert killed.returncode == -9, killed.stderr  # SIGKILL after the password change, before its journal write

    resumed = _setup(inv, env, journal, "--insecure")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "a rotation was interrupted; the new password works (it took)" in resumed.stdout
    assert "bmc-accounts: applied: create-account account provision: Administrator" in resumed.stdout
    assert "replace-certificate HTTPS certificate not issued by the site CA -> issued by the site CA" \
        in resumed.stdout

    again = _setup(inv, env, journal)  # no --insecure: TLS verified against the site CA
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.splitlines() == ["node01 bmc-password: converged: account admin: rotated",
                                         "node01 bmc-accounts: converged: accounts as the spec says",
                                         "node01 bmc: converged: certificate issued by the site CA"], again.stdout
    for secret in (SITE_PW, ROTATED_PW, env["LAB_FACTORY_PW"]):
        assert secret not in resumed.stdout + resumed.stderr + again.stdout + again.stderr

    hv = yaml.safe_load((inv.parent / "host_vars" / "node01.yml").read_text())
    client = redfish.redfish_client(base_url=hv["provision_bmc_address"], username="provision", password=SITE_PW,
                                    cafile=str(tmp_path / "ca.pem"), timeout=10)
    client.login(auth="session")
    try:
        proto = client.get("/redfish/v1/Managers/1/NetworkProtocol").dict
        assert proto["NTP"]["ProtocolEnabled"] is True
        assert [s for s in proto["NTP"]["NTPServers"] if s] == ["192.0.2.10", "192.0.2.11"]
        interfaces = client.get("/redfish/v1/Managers/1/EthernetInterfaces").dict["Members"]
        assert {client.get(m["@odata.id"]).dict["HostName"] for m in interfaces} == {"node01-bmc"}
        users = {m["UserName"]: m["RoleId"] for m in (
            client.get(m["@odata.id"]).dict for m in client.get("/redfish/v1/AccountService/Accounts").dict["Members"])}
        assert users.get("provision") == "Administrator" and "admin" in users
    finally:
        client.logout()


def test_a_500_after_the_password_took_a_csr_that_never_completes_then_bringup(lab_factory: Any, tmp_path: Path) -> None:
    """bmcsim's faults: the password change answered 500 after it took effect counts as done (the new password
    logs in); a CSR task that stays Running fails the bmc stage at its deadline, in one line, and the next run
    (the fault cleared) installs the certificate; `bringup --to bmc` then finds every day-zero stage converged."""
    from provision.lab import manager

    with lab_factory(tmp_path / "lab", nodes=1, factory=True) as lab:
        inv, env = _take_over_inventory(lab, tmp_path, csr_timeout_s=2.0)
        for kind in ("password-change-500-after-effect", "csr-never-completes"):
            manager.fault(lab.state.lab_dir, "node01", kind, False, None)
        journal = tmp_path / "journal.db"
        first = _setup(inv, env, journal, "--insecure")
        assert first.returncode == 1, first.stdout + first.stderr
        lines = first.stdout.splitlines()
        assert lines[0].startswith("node01 bmc-password: applied: rotate-password account admin"), lines
        assert lines[1].startswith("node01 bmc-accounts: applied: create-account account provision"), lines
        assert lines[2].startswith("node01 bmc: failed: ") and "did not complete within 2 s" in lines[2], lines
        events = (lab.state.lab_dir / manager.SIM_LOG).read_text()
        assert '"fault.password_500"' in events  # the BMC did answer the change 500
        manager.fault(lab.state.lab_dir, "node01", "csr-never-completes", True, None)
        second = _setup(inv, env, journal, "--insecure")
        assert second.returncode == 0, second.stdout + second.stderr
        assert "replace-certificate HTTPS certificate not issued by the site CA" in second.stdout
        # the same stages inside bring-up, without --insecure: preflight logs in as the site account over TLS
        # verified against the site CA, and every day-zero stage is converged
        bringup = subprocess.run([*CLI, "bringup", "node01", "--to", "bmc", "-i", str(inv), "--journal",
                                  str(journal), "--log-dir", str(tmp_path / "logs"), "--json"],
                                 capture_output=True, text=True, timeout=180, env=env, check=False)
        assert bringup.returncode == 0, bringup.stdout[-3000:] + bringup.stderr[-2000:]
        [node] = json.loads(bringup.stdout)["nodes"]
        assert [(s["stage"], s["outcome"], s["actions"]) for s in node["stages"]] == [
            ("bmc-password", "converged", []), ("bmc-accounts", "converged", []), ("preflight", "converged", []),
            ("bmc", "converged", [])], node


def _bmc_checks(host: Any, journal: str) -> dict[str, Any]:
    from provision.conformance.bmc_source import OwnSession, check_bmc
    from provision.conformance.checks._base import Context
    from provision.conformance.facts import NodeFacts
    from provision.conformance.model import Level
    from provision.conformance.since import last_bringup

    ctx = Context(node=host.name, spec=host.spec, facts=NodeFacts(node=host.name, sections={}), level=Level.FULL)
    since = last_bringup(host.name, Path(journal))  # the SEL since the last bring-up, as verify counts it
    assert since is not None
    check_bmc(ctx, host, OwnSession(), since)  # TLS checked against host.bmc.ca_file, as `provision verify` does
    return {r.id: r for r in ctx.results}


def test_enrolled_factory_bmc_brought_up_then_verified_against_the_site_ca(lab_factory: Any, tmp_path: Path) -> None:
    """The whole day zero of one BMC: the vendor's shipping list (CSV: address, serial) and the factory password
    find it (PasswordChangeRequired: only its service root answers), `enroll --write --profile` adds it under
    a new name with the file's serial; `bringup` of that host (the bmc: section in its group's vars) rotates
    the password, makes the site account, installs the site certificate and sets NTP, and a second run, without
    --insecure, plans nothing; then `verify` reads its BMC over TLS checked against the site CA (no --insecure)
    and `discover` with the site account finds it known under the enrolled name (the recorded serial is the
    BMC's). A BMC-only lab: the node-side checks of verify have no twin here and are not counted (tests/lab/
    test_verify.py runs `provision verify` itself after a factory takeover, on its twin)."""
    from provision.cli.spec import errors_of

    with lab_factory(tmp_path / "lab", nodes=1, factory=True, speed=600.0) as lab:
        inv_dir = lab.state.lab_dir / "inventory"
        old = yaml.safe_load((inv_dir / "host_vars" / "node01.yml").read_text())
        (inv_dir / "host_vars" / "node01.yml").unlink()  # the inventory knows no host yet
        hosts = inv_dir / "hosts.yml"
        hosts.write_text(hosts.read_text().replace("      hosts:\n        node01: null\n", ""))
        address, port = old["provision_bmc_address"], old["provision_bmc_address"].rsplit(":", 1)[1]
        ca, key = make_ca("lab site CA")
        (tmp_path / "ca.pem").write_text(pem(ca))
        (tmp_path / "ca.key").write_bytes(key_pem(key))
        (tmp_path / "admin.pw").write_text(ROTATED_PW + "\n")
        os.chmod(tmp_path / "admin.pw", 0o600)
        gv = inv_dir / "group_vars" / "ml_prod_v4.yml"
        group = yaml.safe_load(gv.read_text())
        group.update({
            "provision_bmc_username": "provision", "provision_bmc_password": SITE_PW,
            "provision_bmc_setup": {
                "initial": {"user": old["provision_bmc_username"], "password": {"env": "LAB_FACTORY_PW"},
                            "rotate_to": {"file": str(tmp_path / "admin.pw")}},
                "accounts": [{"user": "provision", "role": "Administrator", "password": {"inventory": True}}],
                "certificate": {"ca_cert": str(tmp_path / "ca.pem"), "ca_key": str(tmp_path / "ca.key"),
                                "sans": ["localhost"]},
                "ntp": ["192.0.2.10"], "hostname": "{node}-bmc"}})
        gv.write_text("---\n" + yaml.safe_dump(group, sort_keys=False))
        shipping = tmp_path / "shipping.csv"
        shipping.write_text("ip,serial\n127.0.0.1,LAB00001\n")  # the simulator's node01 serial
        env = {**os.environ, "LAB_FACTORY_PW": old["provision_bmc_password"], "XDG_STATE_HOME": str(tmp_path / "state")}
        factory_creds = {**env, "PROVISION_BMC_USERNAME": old["provision_bmc_username"],
                         "PROVISION_BMC_PASSWORD": old["provision_bmc_password"]}

        def cli(*args: str, insecure: bool = False, creds: dict[str, str] = env) -> subprocess.CompletedProcess[str]:
            return subprocess.run([*CLI, *args, "-i", str(inv_dir / "hosts.yml"), *(["--insecure"] * insecure)],
                                  capture_output=True, text=True, timeout=180, env=creds, check=False)

        enroll = cli("enroll", "--from-file", str(shipping), "--port", port, "--profile", "ml_prod_v4",
                     "--name", "gpu-{serial}", "--json", insecure=True, creds=factory_creds)
        assert enroll.returncode == 0, enroll.stdout + enroll.stderr
        assert [(h["host"], h["address"]) for h in json.loads(enroll.stdout)["hosts"]] == [("gpu-LAB00001", address)]
        assert errors_of(inv_dir / "hosts.yml", load_fleet(inv_dir / "hosts.yml")) == []  # as `spec validate`
        hv = yaml.safe_load((inv_dir / "host_vars" / "gpu-LAB00001.yml").read_text())
        assert "provision_bmc_ca_file" not in hv and hv["provision_bmc_identity"] == {"serial": "LAB00001"}

        journal, logs = str(tmp_path / "journal.db"), str(tmp_path / "logs")
        first = cli("bringup", "gpu-LAB00001", "--to", "reset", "--journal", journal, "--log-dir", logs, "--json",
                    "--poll-seconds", "0.2", insecure=True)  # the factory's self-signed certificate: the one run that needs it
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
        [node] = json.loads(first.stdout)["nodes"]
        done = {s["stage"]: (s["outcome"], " / ".join(s["actions"])) for s in node["stages"]}
        assert done["bmc-password"][0] == "applied" and "rotate-password account admin" in done["bmc-password"][1]
        assert done["bmc-accounts"][0] == "applied" and "create-account account provision" in done["bmc-accounts"][1]
        assert done["bmc"][0] == "applied" and "set-ntp" in done["bmc"][1] and "replace-certificate" in done["bmc"][1]
        assert [done[s][0] for s in ("preflight", "firmware", "bios", "reset")] == ["converged"] + ["applied"] * 3

        again = cli("bringup", "gpu-LAB00001", "--to", "reset", "--journal", journal, "--log-dir", logs, "--json",
                    "--poll-seconds", "0.2")
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
        [node] = json.loads(again.stdout)["nodes"]
        assert [(s["stage"], s["outcome"], s["actions"]) for s in node["stages"]] == [
            ("bmc-password", "converged", []), ("bmc-accounts", "converged", []), ("preflight", "converged", []),
            ("bmc", "converged", []), ("firmware", "converged", []), ("bios", "converged", []),
            ("reset", "converged", [])], node

        # verify's BMC side (its checks, as `provision verify` runs them; the OS side needs a twin, which this
        # BMC-only lab has not): TLS verified against the site CA the bmc: section names, no --insecure
        host = load_fleet(inv_dir / "hosts.yml").hosts["gpu-LAB00001"]
        assert host.bmc.verify_tls and host.bmc.ca_file == tmp_path / "ca.pem"
        rows = _bmc_checks(host, journal)
        assert len(rows) >= 10 and {i: r.detail for i, r in rows.items() if not r.accepted} == {}, rows
        assert {"bmc.platform", "bmc.memory_population"} <= {i for i, r in rows.items() if r.outcome is Outcome.PASS}
        # ... and it is a verification: against the factory's own certificate (no longer served) every row ERRORs
        stale = host.model_copy(update={"bmc": host.bmc.model_copy(update={
            "ca_file": Path(old["provision_lab_bmc_factory_cert_file"])})})
        refused = _bmc_checks(stale, journal)
        assert refused and {r.outcome for r in refused.values()} == {Outcome.ERROR}, refused
        assert all("certificate" in r.detail or "TLS" in r.detail for r in refused.values()), refused
        for secret in (SITE_PW, ROTATED_PW, env["LAB_FACTORY_PW"]):
            assert secret not in first.stdout + first.stderr + again.stdout + again.stderr

        site = {**env, "PROVISION_BMC_USERNAME": "provision", "PROVISION_BMC_PASSWORD": SITE_PW}
        known = cli("discover", "--from-file", str(shipping), "--port", port, "--ca-file", str(tmp_path / "ca.pem"),
                    "--json", creds=site)
        assert known.returncode == 0, known.stdout + known.stderr
        [row] = json.loads(known.stdout)["found"]
        assert (row["serial"], row["inventory"], row["host"], row["note"]) == (
            "LAB00001", "in inventory", "gpu-LAB00001", None), row
