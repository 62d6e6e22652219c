"""Secret hygiene across the toolkit, on the lab: a whole bring-up of one node (with a debug --log-file), a
small campaign on another whose drain/undrain hooks print their whole environment, verify reports
(JSON/HTML/JUnit), a diagnostics bundle, journal views and a refused login, with the BMC passwords and a
site secret held as ansible-vault encrypted variables and a BMC password in the controller's environment.
Then every file the runs wrote (the journal's hook rows among them) and every line they printed is searched
for the secrets: zero hits. State files are private (0600).
"""

from __future__ import annotations

import gzip
import json
import os
import secrets
import stat
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from provision.lab import manager
from provision.lab.campaign_kit import write_lab_campaign
from provision.lab.state import LabState
from tests.reportcheck import check_json_report, check_junit, check_metrics

pytestmark = [pytest.mark.lab, pytest.mark.twins, pytest.mark.heavy]
ROOT = Path(__file__).resolve().parents[2]
CLI = (sys.executable, "-c", "from provision.cli import run; run()")
SITE_VAR = "provision_site_token"


def _vault(plaintext: str, password: str) -> str:
    """`!vault |` block of `plaintext` (what `ansible-vault encrypt_string` prints)."""
    from ansible.parsing.vault import VaultLib, VaultSecret

    blob = VaultLib([("default", VaultSecret(password.encode()))]).encrypt(plaintext).decode()
    return "!vault |\n" + "".join(f"  {line}\n" for line in blob.splitlines())


@dataclass
class SecretLab:
    state: LabState
    work: Path
    vault_password: str
    site_secret: str
    wrong_password: str
    plain: dict[str, dict[str, object]]
    outputs: list[str] = field(default_factory=list)

    @property
    def inventory(self) -> Path:
        return self.state.inventory

    @property
    def env_secret(self) -> str:
        """A BMC password in the controller's environment (the inventory's vault value wins for the lab's BMCs):
        what a hook that inherited the controller's environment would print."""
        return "ENV-" + self.site_secret[::-1]

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "ANSIBLE_VAULT_PASSWORD_FILE": str(self.work / "vault-pass"),
                "PROVISION_STATE_DIR": str(self.work / "state"), "PROVISION_LAB_DIR": str(self.state.lab_dir),
                "PROVISION_BMC_PASSWORD": self.env_secret}

    def cli(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([*CLI, *args], capture_output=True, text=True, env=self.env, timeout=timeout,
                              check=False, cwd=self.work)
        self.outputs.append(f"$ provision {' '.join(args)}\n{proc.stdout}\n{proc.stderr}")
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc

    def bmc_passwords(self) -> list[str]:
        cfg = json.loads((self.state.lab_dir / manager.SIM_CONFIG).read_text())
        return [str(n["password"]) for n in cfg["nodes"]]


def _plain_host_vars(lab_dir: Path) -> dict[str, dict[str, object]]:
    """The lab's host_vars as `lab up` wrote them (password in plain text, file 0600)."""
    return {p.stem: dict(yaml.safe_load(p.read_text())) for p in (lab_dir / "inventory" / "host_vars").glob("*.yml")}


def _vault_inventory(lab_dir: Path, plain: dict[str, dict[str, object]], vault_password: str, site_secret: str,
                     override: dict[str, str] | None = None) -> None:
    """Rewrite the lab inventory: every BMC password (and a site secret) as a vault-encrypted variable."""
    inv = lab_dir / "inventory"
    for node, hv in sorted(plain.items()):
        rest = {k: v for k, v in hv.items() if k != "provision_bmc_password"}
        password = (override or {}).get(node) or str(hv["provision_bmc_password"])
        text = "---\n" + yaml.safe_dump(rest, sort_keys=False) + "provision_bmc_password: " + \
            _vault(password, vault_password)
        fd = os.open(inv / "host_vars" / f"{node}.yml", os.O_WRONLY | os.O_TRUNC)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
    site = inv / "group_vars" / "all" / "site_secret.yml"
    site.write_text(f"---\n{SITE_VAR}: " + _vault(site_secret, vault_password))
    site.chmod(0o600)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecretLab]:
    work = tmp_path_factory.mktemp("secrets")
    state = manager.up(manager.UpOptions(lab_dir=work / "lab", nodes=2, speed=60.0,
                                         source_inventory=ROOT / "inventory" / "hosts.yml"))
    try:
        vault_password = "vault-" + secrets.token_urlsafe(16)
        fd = os.open(work / "vault-pass", os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(vault_password + "\n")
        site_secret = "SITE-" + secrets.token_urlsafe(16)
        plain = _plain_host_vars(state.lab_dir)
        _vault_inventory(state.lab_dir, plain, vault_password, site_secret)
        yield SecretLab(state, work, vault_password, site_secret, "WRONG-" + secrets.token_urlsafe(16), plain)
    finally:
        manager.down(work / "lab")


def _texts(path: Path) -> Iterator[tuple[str, bytes]]:
    """Every file's bytes (and the members of tar.gz bundles, and gunzipped .gz files)."""
    for p in sorted(path.rglob("*")):
        if not p.is_file() or p.is_symlink():
            continue
        data = p.read_bytes()
        yield str(p), data
        if data[:2] != b"\x1f\x8b":  # only real gzip data is unpacked (whatever the name says)
            continue
        if tarfile.is_tarfile(p):
            with tarfile.open(p) as tar:
                for member in tar.getmembers():
                    fh = tar.extractfile(member) if member.isfile() else None
                    if fh is not None:
                        yield f"{p}!{member.name}", fh.read()
        else:
            yield f"{p}!gunzip", gzip.decompress(data)


# What holds a secret in plain text by design: the simulator's own credential store (0600, the BMCs' side)
# and the vault password file. The lab inventory is searched too: it holds only vault ciphertext.
BY_DESIGN = ("lab/bmcsim.json", "vault-pass")


def test_no_secret_in_any_log_report_journal_bundle_or_error(lab: SecretLab) -> None:
    inv = str(lab.inventory)
    journal = str(lab.work / "state" / "journal.db")
    reports = lab.work / "reports"
    reports.mkdir()
    # a whole bring-up of node01 (its outcome is not this test's business: the secrets are)
    bringup = lab.cli("--log-file", str(lab.work / "logs" / "debug.log"), "bringup", "node01", "-i", inv,
                      "--journal", journal, "--log-dir", str(lab.work / "logs"), "--poll-seconds", "0.2", "--json")
    assert json.loads(bringup.stdout)["nodes"][0]["stages"][0]["outcome"] == "converged", bringup.stdout
    lab.cli("status", "--journal", journal, "--json")
    lab.cli("history", "node01", "--journal", journal)
    lab.cli("verify", "node01", "-i", inv, "--junit", str(reports / "v.xml"), "--json", str(reports / "v.json"),
            "--html", str(reports / "v.html"), "--prom", str(reports / "v.prom"), "--all")
    check_json_report(reports / "v.json")
    check_junit(reports / "v.xml")
    check_metrics(reports / "v.prom")
    lab.cli("collect", "node01", "-i", inv, "--out", str(lab.work / "bundles"))
    # a small campaign on node02
    hook_env = lab.work / "hooks" / "env.jsonl"
    hook_env.parent.mkdir()
    print_env = (f"{sys.executable} -c \"import json, os, sys; e = json.dumps(dict(os.environ)); "
                 f"open(sys.argv[1], 'a').write(e + chr(10)); print(e)\" {hook_env}")
    camp = write_lab_campaign(lab.work / "campaign", "secretc", {
        "waves": {"canary": 1}, "hooks": {"drain": print_env, "undrain": print_env, "env_allow": ["PROVISION_LAB_DIR"]}})
    started = lab.cli("campaign", "start", str(camp), "-i", inv, "--limit", "node02", "--journal", journal,
                      "--poll-seconds", "0.2", "--json")
    assert started.returncode == 0, started.stdout + started.stderr
    lab.cli("campaign", "report", "secretc", "--journal", journal, "--json")
    lab.cli("campaign", "report", "secretc", "--journal", journal, "--html", str(reports / "c.html"))
    lab.cli("campaign", "status", "secretc", "--journal", journal, "--prom", str(reports / "c.prom"))
    check_metrics(reports / "c.prom")
    # errors: a refused login with a wrong (distinctive) password, through power and through bring-up
    _vault_inventory(lab.state.lab_dir, lab.plain, lab.vault_password, lab.site_secret, {"node02": lab.wrong_password})
    refused = lab.cli("power", "node02", "status", "-i", inv)
    assert refused.returncode == 1 and "refused" in refused.stderr, refused.stderr
    lab.cli("bringup", "node02", "-i", inv, "--journal", journal, "--log-dir", str(lab.work / "logs"),
            "--only", "preflight")
    lab.cli("bmc", "inventory", "node02", "-i", inv, "--json")

    needles = {f"BMC password {i + 1}": p for i, p in enumerate(lab.bmc_passwords())}
    needles |= {"wrong BMC password": lab.wrong_password, "vault secret": lab.site_secret,
                "vault password": lab.vault_password, "controller's env password": lab.env_secret}
    hits: list[str] = []
    for where, data in _texts(lab.work):
        rel = where.removeprefix(str(lab.work) + "/")
        if rel.startswith(BY_DESIGN):
            continue
        hits += [f"{name} in {rel}" for name, secret in needles.items() if secret.encode() in data]
    printed = "\n".join(lab.outputs)
    hits += [f"{name} printed" for name, secret in needles.items() if secret in printed]
    scanned = sum(1 for _ in _texts(lab.work))
    print(f"secret hygiene: {len(needles)} secrets searched in {scanned} files and {len(lab.outputs)} command "
          f"outputs: {len(hits)} hit(s)")
    assert not hits, hits
    # the runs did write what was searched
    assert (lab.work / "logs" / "node01.log").stat().st_size > 0
    assert "DEBUG" in (lab.work / "logs" / "debug.log").read_text()
    _hooks_saw_only_their_environment(hook_env, lab.work / "state" / "journal.db")
    assert list((lab.work / "bundles").glob("*.tar.gz")) and (reports / "c.html").exists()
    assert (reports / "v.xml").exists() and (reports / "v.json").exists() and (reports / "v.html").exists()


def _hooks_saw_only_their_environment(hook_env: Path, journal: Path) -> None:
    """Both hooks ran with the documented environment (no vault file, no BMC password), and the journal's
    hook rows hold what they printed."""
    from provision.journal import Journal

    seen = [json.loads(line) for line in hook_env.read_text().splitlines()]
    assert len(seen) == 2, seen  # drain and undrain of node02
    for env in seen:
        assert env["PROVISION_NODE"] == "node02" and env["PROVISION_CAMPAIGN"] == "secretc"
        assert not {"PROVISION_BMC_PASSWORD", "ANSIBLE_VAULT_PASSWORD_FILE", "PROVISION_STATE_DIR"} & set(env)
        assert env["PROVISION_LAB_DIR"]  # allow-listed in the campaign file
        assert set(env) <= {"PATH", "LANG", "HOME", "PROVISION_NODE", "PROVISION_CAMPAIGN", "PROVISION_LAB_DIR",
                            "LC_CTYPE"}, env
    with Journal(journal) as jr:
        rows = [a for a in jr.actions("node02") if a.action in ("drain", "undrain")]
    assert [a.action for a in rows] == ["drain", "undrain"] and all(a.outcome == "ok" for a in rows), rows
    assert all("PROVISION_CAMPAIGN" in a.detail for a in rows), rows  # the tail of what each printed


def test_state_files_are_private(lab: SecretLab) -> None:
    """Journal (and its WAL/SHM), per-node logs, bundles, the lab's secrets: mode 0600."""
    state = lab.work / "state"
    files = [*state.glob("journal.db*"), *(lab.work / "logs").glob("*.log"), *(lab.work / "bundles").glob("*"),
             *(lab.work / "reports").glob("c.html"),
             lab.state.lab_dir / manager.SIM_CONFIG, lab.state.lab_dir / "server-key.pem",
             *(lab.state.lab_dir / "inventory" / "host_vars").glob("*.yml")]
    assert len(files) >= 6, files
    loose = [f"{p} {stat.filemode(p.stat().st_mode)}" for p in files if p.stat().st_mode & 0o077]
    assert not loose, loose
