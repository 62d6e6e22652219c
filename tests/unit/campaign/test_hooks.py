"""Campaign hooks on a shared controller: a minimal environment, never a secret; output scrubbed."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from provision.campaign.catalog import Catalog
from provision.campaign.engine import Engine, waves_for
from provision.campaign.gates import GateRunner
from provision.campaign.hooks import hook_env, run_hook
from provision.errors import InputError
from provision.journal import Journal
from provision.journal.campaigns import CampaignStore
from provision.redact import MASK, register_secret
from tests.unit.campaign.fakes import FakeBmcs, FakeHealth, catalog, targets

PRINT_ENV = f"{sys.executable} -c \"import json, os; print(json.dumps(dict(os.environ)))\""
SECRET = "Hook-S3cret-" + "x9q"


def _printed_env(output: str) -> dict[str, str]:
    return json.loads(output)


def test_a_hook_that_prints_its_environment_shows_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_BMC_PASSWORD", SECRET)
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", "/root/vault-pass")
    monkeypatch.setenv("SOME_SITE_TOKEN", SECRET)
    monkeypatch.setenv("SLURM_CONF", "/etc/slurm/slurm.conf")
    result = run_hook(PRINT_ENV, "n01", "camp", 30, env_allow=("SLURM_CONF",))
    assert result.ok, result
    env = _printed_env(result.output)
    assert SECRET not in result.output and "vault" not in result.output
    assert env["PROVISION_NODE"] == "n01" and env["PROVISION_CAMPAIGN"] == "camp"
    assert env["SLURM_CONF"] == "/etc/slurm/slurm.conf"
    extra = set(env) - {"PATH", "LANG", "HOME", "PROVISION_NODE", "PROVISION_CAMPAIGN", "SLURM_CONF"}
    # the interpreter itself may add a variable or two (LC_CTYPE on some builds); none of the controller's
    assert not extra - {"LC_CTYPE"}, extra


def test_hook_env_is_the_documented_minimum() -> None:
    controller = {"PATH": "/opt/bin:/usr/bin", "LANG": "en_US.UTF-8", "HOME": "/home/op",
                  "PROVISION_BMC_PASSWORD": SECRET, "SSH_AUTH_SOCK": "/tmp/agent", "SITE": "a"}
    assert hook_env("n1", "c", ("SITE", "UNSET"), controller) == {
        "PATH": "/opt/bin:/usr/bin", "LANG": "en_US.UTF-8", "HOME": "/home/op", "SITE": "a",
        "PROVISION_NODE": "n1", "PROVISION_CAMPAIGN": "c"}
    assert hook_env("n1", "c", (), {})["PATH"].endswith("/usr/bin:/sbin:/bin")


@pytest.mark.parametrize("name", ["PROVISION_BMC_PASSWORD", "ANSIBLE_VAULT_PASSWORD_FILE", "MY_API_TOKEN",
                                  "db_secret", "BAD NAME"])
def test_a_secret_or_bad_name_cannot_be_allow_listed(name: str) -> None:
    with pytest.raises(ValueError, match=r"hooks\.env_allow\n.*(looks like a secret|not an environment variable)"):
        catalog({"hooks": {"env_allow": [name]}})


def test_allow_list_error_is_one_line_through_the_catalog_loader(tmp_path: Path) -> None:
    from provision.campaign.catalog import load_catalog

    image = tmp_path / "bmc.bin"
    image.write_bytes(b"x")

    path = tmp_path / "c.yml"
    path.write_text(
        "name: c\ncomponents:\n  - {component: bmc, version: '2', image: bmc.bin, sha256: "
        f"{hashlib.sha256(b'x').hexdigest()}, order: 10, applies_to: any}}\n"
        "policy:\n  hooks:\n    env_allow: [PROVISION_BMC_PASSWORD]\n")
    with pytest.raises(InputError) as err:
        load_catalog(path)
    assert "policy.hooks.env_allow" in str(err.value) and "looks like a secret" in str(err.value)
    assert "\n" not in str(err.value)


def test_hook_output_in_the_journal_is_scrubbed(tmp_path: Path) -> None:
    register_secret(SECRET)
    leak = f"{sys.executable} -c \"print('token=' + {SECRET!r}); raise SystemExit(3)\""
    journal = Journal(tmp_path / "j.db")
    try:
        store = CampaignStore(journal)
        cat: Catalog = catalog({"waves": {"canary": 1}, "hooks": {"drain": leak}})
        src = tmp_path / "campaign.yml"
        src.write_text("name: test\n")
        nodes = ["n01", "n02"]
        engine = Engine(cat, store, targets(nodes), FakeBmcs(nodes, {"bmc": "1.0", "bios": "2.0"}),
                        GateRunner(FakeHealth()), poll_s=0.01)
        engine.start(src, waves_for(nodes, cat))
        rows = [a for a in journal.actions("n01") if a.action == "drain"]
        assert rows and rows[0].outcome == "failed"
        assert MASK in rows[0].detail and SECRET not in rows[0].detail
        assert SECRET not in (store.node("test", "n01").error or "")
    finally:
        journal.close()
