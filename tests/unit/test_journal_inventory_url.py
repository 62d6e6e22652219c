"""Which journal a command opens (one resolver, provision.cli.options.journal_at): --journal > PROVISION_JOURNAL_URL >
the inventory's provision_journal_url (group_vars/all, or the inventory file's all: vars:) > the default SQLite
file; a password, a vault or a template in the inventory's URL refused in one line that does not print it; every
command that takes -i opening the inventory's journal; --share refused on SQLite before the file is created."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from provision.cli import logs, main
from provision.cli.options import journal_at
from provision.errors import InputError
from provision.journal.location import Backend
from tests.conftest import EXAMPLE_INVENTORY

URL = "postgresql://provision@db.example.net:5432/journal"
ENV = "postgresql://ctl@env.example.net/journal"


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PROVISION_JOURNAL_URL", raising=False)
    yield
    logs.configure(0, None)


def _inventory(tmp_path: Path, where: str, value: object) -> Path:
    """A copy of hosts.yml (no group_vars) with `provision_journal_url: value` set `where`; returns what -i takes."""
    inv = tmp_path / "inv"
    inv.mkdir()
    hosts = yaml.safe_load((EXAMPLE_INVENTORY / "hosts.yml").read_text())
    if where == "hosts.yml":
        hosts["all"].setdefault("vars", {})["provision_journal_url"] = value
    elif where == "all.yml":
        (inv / "group_vars").mkdir()
        (inv / "group_vars" / "all.yml").write_text(yaml.safe_dump({"provision_journal_url": value}))
    elif where == "all/":
        (inv / "group_vars" / "all").mkdir(parents=True)
        (inv / "group_vars" / "all" / "journal.yml").write_text(yaml.safe_dump({"provision_journal_url": value}))
    (inv / "hosts.yml").write_text(yaml.safe_dump(hosts))
    return inv / "hosts.yml"


@pytest.mark.parametrize(("flag", "env", "setting", "expected"), [
    (None, None, None, "sqlite:default"),
    (None, None, URL, URL),
    (None, ENV, URL, ENV),  # the environment wins over the inventory
    ("j.db", ENV, URL, "sqlite:j.db"),  # --journal wins over both
    ("j.db", None, URL, "sqlite:j.db"),
    (None, ENV, None, ENV),
])
def test_precedence(flag: str | None, env: str | None, setting: str | None, expected: str, tmp_path: Path,
                    monkeypatch: pytest.MonkeyPatch) -> None:
    inv = _inventory(tmp_path, "all.yml", setting) if setting else _inventory(tmp_path, "none", None)
    if env:
        monkeypatch.setenv("PROVISION_JOURNAL_URL", env)
    where = journal_at(Path(flag) if flag else None, inv)
    if expected == "sqlite:default":
        assert (where.backend, where.path) == (Backend.SQLITE, tmp_path / "state" / "provision.db")
    elif expected.startswith("sqlite:"):
        assert (where.backend, where.path) == (Backend.SQLITE, Path(expected.removeprefix("sqlite:")))
    else:
        assert (where.backend, where.url) == (Backend.POSTGRESQL, expected)


@pytest.mark.parametrize("place", ["hosts.yml", "all.yml", "all/"])
def test_read_from_group_all_wherever_ansible_takes_it(place: str, tmp_path: Path) -> None:
    inv = _inventory(tmp_path, place, URL)
    assert journal_at(None, inv).url == URL
    assert journal_at(None, inv.parent).url == URL  # -i the directory


def test_a_missing_inventory_sets_nothing(tmp_path: Path) -> None:
    assert journal_at(None, tmp_path / "nowhere.yml").backend is Backend.SQLITE


@pytest.mark.parametrize(("value", "error"), [
    ("postgresql://provision:s3cretpw@db/journal", "a password in the inventory is refused"),
    ("postgresql://provision@db/journal?password=s3cretpw", "a password in the inventory is refused"),
    ("{{ lookup('env', 'X') }}", "must be a literal URL"),
    ("$ANSIBLE_VAULT;1.1;AES256\n6162", "must be a literal URL"),
    (["postgresql://db/journal"], "expected a postgresql://"),
    ("mysql://db/journal", "expected postgresql://"),
    ("postgresql://db", "no database name"),
])
def test_bad_settings_are_one_line_naming_file_and_key(value: object, error: str, tmp_path: Path) -> None:
    inv = _inventory(tmp_path, "all.yml", value)
    with pytest.raises(InputError, match=error) as exc:
        journal_at(None, inv)
    message = str(exc.value)
    assert "group_vars/all.yml: provision_journal_url" in message and "\n" not in message
    assert "s3cretpw" not in message


def test_not_read_when_the_environment_names_the_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_JOURNAL_URL", ENV)
    assert journal_at(None, _inventory(tmp_path, "all.yml", "mysql://bad/x")).url == ENV


@pytest.mark.parametrize("argv", [
    ["status"], ["history", "node01"], ["bringup", "node01", "--only", "preflight"],
    ["campaign", "start", "campaigns/ml_prod_v4_2026q4.yml"], ["campaign", "join", "x"],
    ["campaign", "resume", "x"], ["campaign", "status", "x"], ["campaign", "report", "x"],
    ["campaign", "pause", "x"], ["campaign", "abort", "x"], ["campaign", "halt", "x"],
])
def test_every_command_with_an_inventory_opens_its_journal(argv: list[str], tmp_path: Path, inventory_copy: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The inventory names a PostgreSQL journal nobody listens for: each command fails connecting to it."""
    (inventory_copy.parent / "group_vars" / "all" / "journal.yml").write_text(
        "provision_journal_url: postgresql://provision@127.0.0.1:1/journal?connect_timeout=2\n")
    code = main([*argv, "-i", str(inventory_copy)])
    err = capsys.readouterr().err
    assert code != 0 and "127.0.0.1:1/journal" in err and "cannot connect to the journal" in err, err
    assert not (tmp_path / "state").exists()  # no SQLite file made instead


def test_share_refused_on_sqlite_before_the_file_exists(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bringup", "node01", "--share", "rack7", "-i", str(EXAMPLE_INVENTORY / "hosts.yml")])
    err = capsys.readouterr().err
    assert code == 2 and "--share needs a journal shared by the controllers" in err, err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "state").exists()


def test_share_with_plan_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PROVISION_JOURNAL_URL", ENV)
    assert main(["bringup", "node01", "--share", "rack7", "--plan", "-i", str(EXAMPLE_INVENTORY / "hosts.yml")]) == 2
    assert "--plan changes nothing" in capsys.readouterr().err
