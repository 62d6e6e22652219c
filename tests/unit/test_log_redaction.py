"""Secrets are scrubbed by the handlers of the command line's logging configuration, so what a child
logger (urllib3.connectionpool, provision.campaign.engine) logs is scrubbed too, on stderr and in --log-file."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from provision import redact
from provision.cli import logs, main
from tests.unit.redfish.rf_fakebmc import FakeBmc, Served, load_tree

TREE = load_tree(Path(__file__).resolve().parents[1] / "fixtures" / "redfish" / "supermicro")

SECRET = "Log-S3cret-" + "q7w"


@pytest.fixture
def configured(tmp_path: Path) -> Iterator[Path]:
    log_file = tmp_path / "debug.log"
    logs.configure(0, log_file)
    redact.install()  # what the connector does: filters on its own loggers, which children bypass
    redact.register_secret(SECRET)
    yield log_file
    logs.configure(0, None)


@pytest.mark.parametrize("name", ["urllib3.connectionpool", "provision.campaign.engine", "redfish.rest.v1"])
def test_a_child_logger_logging_a_secret_is_redacted(
    configured: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    logging.getLogger(name).warning("connecting with password %s to %s", SECRET, "bmc1")
    logging.getLogger(name).debug("debug line with %s", SECRET)
    err = capsys.readouterr().err
    text = configured.read_text()
    assert "connecting with password <redacted> to bmc1" in err and SECRET not in err
    assert "debug line with <redacted>" in text and SECRET not in text
    assert "debug line" not in err  # stderr keeps to warnings unless -v


def test_the_log_file_is_0600_from_the_start(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        logs.configure(0, tmp_path / "f.log")
    finally:
        os.umask(old)
        logs.configure(0, None)
    assert stat.S_IMODE((tmp_path / "f.log").stat().st_mode) == 0o600


def test_the_log_files_directory_is_made_and_a_bad_one_is_one_line(tmp_path: Path) -> None:
    from provision.errors import InputError

    try:
        logs.configure(0, tmp_path / "new" / "debug.log")
        (tmp_path / "file").write_text("")
        with pytest.raises(InputError, match=rf"{tmp_path / 'file' / 'x.log'}: cannot create its directory"):
            logs.configure(0, tmp_path / "file" / "x.log")
    finally:
        logs.configure(0, None)
    assert (tmp_path / "new" / "debug.log").is_file()


def test_configure_twice_keeps_one_set_of_handlers(tmp_path: Path) -> None:
    logs.configure(0, tmp_path / "a.log")
    logs.configure(1, None)
    ours = [h for h in logging.getLogger().handlers if getattr(h, "_provision_cli_handler", False)]
    logs.configure(0, None)
    assert len(ours) == 1 and ours[0].level == logging.INFO


def test_a_debug_log_of_a_real_command_holds_no_password(inventory_copy: Path, tmp_path: Path) -> None:
    password = "Dbg-Pa55-" + "zz81"
    hv = inventory_copy.parent / "host_vars" / "node01.yml"
    with Served(FakeBmc(tree=dict(TREE), password=password)) as srv:
        data = yaml.safe_load(hv.read_text())
        data.update(provision_bmc_address=srv.address, provision_bmc_username="admin",
                    provision_bmc_password=password, provision_bmc_insecure_http=True)
        hv.write_text(yaml.safe_dump(data))
        log_file = tmp_path / "debug.log"
        try:
            code = main(["-vv", "--log-file", str(log_file), "power", "node01", "status", "-i", str(inventory_copy)])
        finally:
            logs.configure(0, None)
    text = log_file.read_text()
    assert code == 0
    assert "urllib3.connectionpool" in text or "redfish" in text  # the libraries' debug lines are there
    assert password not in text


@pytest.mark.parametrize(("text", "expected"), [
    # a secret no one registered, in the shapes a library logs it: header lines, JSON bodies, Python reprs
    ("X-Auth-Token: 9f8e7d", "X-Auth-Token: <redacted>"),
    ("{'X-Auth-Token': '9f8e7d'}", "{'X-Auth-Token': '<redacted>'}"),
    ("Authorization: Basic YWRtaW46cHc=", "Authorization: Basic <redacted>"),
    ("authorization: Bearer ey.J0.x", "authorization: Bearer <redacted>"),
    ('{"UserName": "admin", "Password": "hunter22"}', '{"UserName": "admin", "Password": "<redacted>"}'),
    ('{"Password":"hunter22","x":1}', '{"Password":"<redacted>","x":1}'),
    ("password=hunter22 user=admin", "password=<redacted> user=admin"),
    # a password with spaces, commas or braces is masked to its closing quote, not to its first space
    ('{"Password": "correct horse, battery}"}', '{"Password": "<redacted>"}'),
    ('{"Password": "a \\"quoted\\" word"}', '{"Password": "<redacted>"}'),
    # ... and a Python dict's repr, as `LOG.debug("body %s", body)` writes it
    ("{'UserName': 'admin', 'Password': 'hunter22'}", "{'UserName': 'admin', 'Password': '<redacted>'}"),
    ("{'Password': 'two words'}", "{'Password': '<redacted>'}"),
    # what is no secret stays
    ("password policy: 12 characters", "password policy: 12 characters"),
])
def test_unregistered_secrets_are_masked_by_shape(text: str, expected: str) -> None:
    assert redact.scrub(text) == expected
    assert redact.scrub(expected) == expected  # scrubbing twice changes nothing


@pytest.mark.parametrize(("secret", "registered"), [("Zq", False), ("Zq7", True), ("Lng-Secr3t-9", True)])
def test_secrets_of_three_characters_and_more_are_registered(secret: str, registered: bool) -> None:
    redact.register_secret(secret)
    assert (redact.scrub(f"login with {secret}!") == f"login with {redact.MASK}!") is registered


def test_the_longest_secret_is_masked_first() -> None:
    redact.register_secret("Pa55word-xyz")
    redact.register_secret("Pa55word-xyz-and-more")
    assert redact.scrub("sent Pa55word-xyz-and-more") == f"sent {redact.MASK}"


def test_a_runs_own_secrets_are_masked_longest_first() -> None:
    """redact.mask (Ansible's failure messages): a secret that contains another is masked whole, not in part."""
    assert redact.mask("pw hunter22 then hunter2", ("hunter2", "hunter22", "")) == \
        f"pw {redact.MASK} then {redact.MASK}"


def test_a_debug_log_of_bmc_setup_rotating_a_factory_password_holds_neither(
        inventory_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    factory, rotated = "Fact0ry-" + "pw11", "R0tated-" + "pw22"
    hv = inventory_copy.parent / "host_vars" / "node01.yml"
    bmc = FakeBmc(tree=dict(TREE), password=factory, change_first=True)
    monkeypatch.setenv("T_FACTORY_PW", factory)
    with Served(bmc) as srv:
        data = yaml.safe_load(hv.read_text())
        data.update(provision_bmc_address=srv.address, provision_bmc_username="admin", provision_bmc_password=rotated,
                    provision_bmc_insecure_http=True, provision_bmc_setup={"initial": {
                        "user": "admin", "password": {"env": "T_FACTORY_PW"}, "rotate_to": {"inventory": True}}})
        hv.write_text(yaml.safe_dump(data))
        log_file = tmp_path / "debug.log"
        try:
            code = main(["-vv", "--log-file", str(log_file), "bmc", "setup", "node01", "-i", str(inventory_copy),
                         "--journal", str(tmp_path / "j.db")])
        finally:
            logs.configure(0, None)
    text = log_file.read_text()
    assert code == 0, text[-2000:]
    assert bmc.patches == [("/redfish/v1/AccountService/Accounts/2", {"Password": rotated})]
    assert "urllib3.connectionpool" in text or "redfish" in text
    assert factory not in text and rotated not in text
