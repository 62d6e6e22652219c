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
