"""`provision bringup` checks every option when the command is parsed: a bad one is one line on stderr,
exit 2, and nothing is written (no journal, no log directory, no BMC touched)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from provision.cli import main
from tests.conftest import EXAMPLE_INVENTORY

INV = str(EXAMPLE_INVENTORY / "hosts.yml")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


@pytest.mark.parametrize(("args", "says"), [
    (["--level", "fulll"], "'--level': 'fulll' is not one of 'quick', 'full', 'burnin'"),
    (["--from", "bois"], "'--from': 'bois' is not one of 'bmc-password', 'bmc-accounts', 'preflight', 'bmc', 'firmware', 'bios'"),
    (["--only", "flash"], "'--only': 'flash' is not one of"),
    (["--concurrency", "0"], "'--concurrency'"),
    (["--poll-seconds", "0"], "'--poll-seconds'"),
    (["--from", "bios", "--only", "verify"], "--only excludes --from and --to"),
    (["--to", "bios", "--only", "verify"], "--only excludes --from and --to"),
    (["--strategy", "fast"], "--strategy: 'fast' is not one of linear, mitogen"),
    (["--from", "reset", "--to", "bios"], "--to bios comes before --from reset"),
    (["--share", "rack 7"], "a name without spaces"),
    (["--retry-failed"], "--retry-failed goes with --share"),
    (["--wait-seconds", "30"], "--wait-seconds goes with --share"),
    (["--share", "s", "--wait-seconds", "-1"], "'--wait-seconds'"),
    (["--os-image", "installer.iso"], "--os-image 'installer.iso': expected a http/https/nfs/cifs URL"),
    (["--bogus"], "No such option: --bogus"),
])
def test_a_bad_option_is_one_line_exit_2_and_nothing_written(state: Path, capsys: pytest.CaptureFixture[str],
                                                              args: list[str], says: str) -> None:
    journal, logs = state / "j" / "journal.db", state / "logs"
    rc = main(["bringup", "node01", "-i", INV, "--journal", str(journal), "--log-dir", str(logs), *args])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert says in " ".join(err.split()) and len(err.splitlines()) == 1, err
    assert not journal.parent.exists() and not logs.exists() and not (state / "state").exists()


@pytest.mark.parametrize("bad", ["journal-is-dir", "log-dir-is-file", "unknown-node"])
def test_bad_paths_and_hosts_are_refused_before_anything_is_written(state: Path, capsys: pytest.CaptureFixture[str],
                                                                     bad: str) -> None:
    journal, logs, node = state / "journal.db", state / "logs", "node01"
    if bad == "journal-is-dir":
        journal.mkdir()
    elif bad == "log-dir-is-file":
        logs.write_text("")
    else:
        node = "node99"
    before = sorted(p.name for p in state.iterdir())
    rc = main(["bringup", node, "-i", INV, "--journal", str(journal), "--log-dir", str(logs)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert {"journal-is-dir": "--journal", "log-dir-is-file": "--log-dir", "unknown-node": "node99"}[bad] in err
    assert sorted(p.name for p in state.iterdir()) == before


def test_help_lists_the_stages_and_levels(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")  # the help is a table whose cells wrap on a narrow terminal
    assert main(["bringup", "--help"]) == 0
    text = re.sub(r"\s", "", capsys.readouterr().out)
    assert "bmc-password|bmc-accounts|preflight|bmc|firmware|bios|reset|os|configure|verify" in text and "quick|full|burnin" in text


@pytest.mark.parametrize(("args", "recheck"), [([], False), (["--recheck"], True)])
def test_recheck_reaches_the_configure_stage(state: Path, monkeypatch: pytest.MonkeyPatch, args: list[str],
                                             recheck: bool) -> None:
    from provision.bringup.model import BringupResult
    from provision.cli import bringup as cli_bringup

    seen: list[bool] = []

    def fake_run(hosts, stages, **kw):  # type: ignore[no-untyped-def]
        seen.extend(s.opts.recheck for s in stages if s.name == "configure")
        return BringupResult(run_id=None, plan_only=True, nodes=[])

    monkeypatch.setattr(cli_bringup, "run_bringup", fake_run)
    rc = main(["bringup", "node01", "-i", INV, "--plan", "--journal", str(state / "j.db"),
               "--log-dir", str(state / "logs"), *args])
    assert rc == 0 and seen == [recheck]
