"""The `bmc:` section (provision_bmc_setup): validated at load, one line naming the file and the key; password
sources read when the stage runs, a file others can read refused naming it; the site CA becomes the host's BMC CA."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import SecretStr

from provision.cli import main
from provision.errors import InputError
from provision.spec import load_fleet
from provision.spec.bmc_setup import SecretSource, SecretUnreadable, read_secret
from tests.unit.bringup.bmcfake import key_pem, make_ca, pem

MAIN = "group_vars/all/main.yml"
GOOD = """
provision_bmc_setup:
  initial: {user: ADMIN, password: {env: T_FACTORY}, rotate_to: {file: pw/admin}}
  accounts:
    - {user: provision, role: Administrator, password: {inventory: true}}
  certificate: {ca_cert: ca/ca.pem, ca_key: ca/ca.key, sans: ["{node}.bmc.example"]}
  ntp: [10.0.0.1]
  hostname: "{node}-bmc"
  protocols: {ipmi: false}
"""


def _inventory(inventory_copy: Path, text: str) -> Path:
    inv = inventory_copy.parent
    (inv / "ca").mkdir(exist_ok=True)
    ca, key = make_ca()
    (inv / "ca" / "ca.pem").write_text(pem(ca))
    (inv / "ca" / "ca.key").write_bytes(key_pem(key))
    (inv / MAIN).write_text((inv / MAIN).read_text() + text)
    return inventory_copy


def test_the_section_loads_with_paths_from_the_inventory_and_the_site_ca_as_the_bmc_ca(inventory_copy: Path) -> None:
    fleet = load_fleet(_inventory(inventory_copy, GOOD))
    host = fleet.hosts["node01"]
    inv = inventory_copy.parent.resolve()
    assert host.spec.bmc is not None and host.spec.bmc.certificate is not None
    assert host.spec.bmc.certificate.ca_cert == inv / "ca" / "ca.pem"
    assert host.spec.bmc.initial is not None and host.spec.bmc.initial.rotate_to.file == inv / "pw" / "admin"
    assert host.bmc.ca_file == inv / "ca" / "ca.pem"  # provision_bmc_ca_file unset: the site CA
    assert (host.spec.bmc.protocols.ipmi, host.spec.bmc.protocols.ssdp) == (False, None)


def test_absolute_paths_stay_as_given(inventory_copy: Path, tmp_path: Path) -> None:
    text = GOOD.replace("{file: pw/admin}", f"{{file: {tmp_path / 'admin'}}}")
    setup = load_fleet(_inventory(inventory_copy, text)).hosts["node01"].spec.bmc
    assert setup is not None and setup.initial is not None and setup.initial.rotate_to.file == tmp_path / "admin"


BAD = [
    ("  ntpp: [x]\n", "provision_bmc_setup.ntpp: unknown key"),
    ("  accounts:\n    - {user: a, password: {env: X, file: /f}}\n",
     "provision_bmc_setup.accounts.0.password: give exactly one of file, env or inventory: true"),
    ("  accounts:\n    - {user: a, password: {password: hunter2}}\n",
     "provision_bmc_setup.accounts.0.password.password: unknown key"),
    ("  hostname: '{rack}-bmc'\n", "provision_bmc_setup.hostname: pattern '{rack}-bmc' names rack"),
    ("  certificate: {ca_cert: ca/ca.pem, ca_key: ca/ca.key, sign_command: [sign]}\n",
     "provision_bmc_setup.certificate: give exactly one of ca_key"),
    ("  certificate: {ca_cert: ca/missing.pem, sign_command: [sign]}\n",
     "provision_bmc_setup.certificate.ca_cert: file"),
    ("  initial: {user: provision, password: {env: A}, rotate_to: {env: B}}\n"
     "  accounts: [{user: provision, password: {env: C}}]\n",
     "initial account provision is also a site account"),
]


@pytest.mark.parametrize(("body", "says"), BAD)
def test_a_bad_section_is_one_line_naming_the_file_and_the_key(inventory_copy: Path, body: str, says: str) -> None:
    inv = _inventory(inventory_copy, "provision_bmc_setup:\n" + body)
    with pytest.raises(InputError) as err:
        load_fleet(inv)
    text = str(err.value)
    assert says in text and "\n" not in text, text
    assert text.startswith(str(inventory_copy.parent / MAIN)), text


def test_a_password_file_others_can_read_is_refused_naming_it(tmp_path: Path) -> None:
    f = tmp_path / "pw"
    f.write_text("Secret-0ne\n")
    os.chmod(f, 0o644)
    with pytest.raises(SecretUnreadable) as err:
        read_secret(SecretSource(file=f), SecretStr(""), "host node01: bmc.initial.password")
    assert str(err.value) == (f"host node01: bmc.initial.password: password file {f} is readable by group or "
                              "others (mode -rw-r--r--): chmod 600 it")
    os.chmod(f, 0o600)
    assert read_secret(SecretSource(file=f), SecretStr(""), "w").get_secret_value() == "Secret-0ne"


def test_env_inventory_and_vault_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ansible.parsing.vault import VaultLib, VaultSecret

    monkeypatch.delenv("T_NONE", raising=False)
    with pytest.raises(SecretUnreadable, match="environment variable T_NONE is not set or empty"):
        read_secret(SecretSource(env="T_NONE"), SecretStr(""), "w")
    monkeypatch.setenv("T_SET", "From-env-1")
    assert read_secret(SecretSource(env="T_SET"), SecretStr(""), "w").get_secret_value() == "From-env-1"
    assert read_secret(SecretSource(inventory=True), SecretStr("Inv-pw-2"), "w").get_secret_value() == "Inv-pw-2"
    vault_pw = tmp_path / "vault-pass"
    vault_pw.write_text("vault-key\n")
    vaulted = tmp_path / "admin.vault"
    vaulted.write_bytes(VaultLib([("default", VaultSecret(b"vault-key"))]).encrypt("Vaulted-pw-3\n"))
    os.chmod(vaulted, 0o600)
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", str(vault_pw))
    assert read_secret(SecretSource(file=vaulted), SecretStr(""), "w").get_secret_value() == "Vaulted-pw-3"


def test_bmc_setup_refuses_a_readable_password_file_before_anything_is_sent(
        inventory_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    inv = _inventory(inventory_copy, GOOD)
    (inv.parent / "pw").mkdir()
    (inv.parent / "pw" / "admin").write_text("Rotated-pw\n")
    os.chmod(inv.parent / "pw" / "admin", 0o640)
    monkeypatch.setenv("T_FACTORY", "factory")
    rc = main(["bmc", "setup", "node01", "-i", str(inv), "--journal", str(tmp_path / "j.db")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert f"password file {inv.parent.resolve() / 'pw' / 'admin'} is readable by group or others" in err
    assert not (tmp_path / "j.db").exists()


def test_bmc_setup_of_a_host_without_a_section_is_refused(inventory_copy: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["bmc", "setup", "node01", "-i", str(inventory_copy), "--journal", str(tmp_path / "j.db")])
    err = capsys.readouterr().err
    assert rc == 2 and "node01: no bmc: section in the profile" in err
