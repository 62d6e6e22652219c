"""Command-line conventions (issue 20 item 1): --version, -q, completion, --output plain|json|table, data
never read as Rich markup, spec show's lists, and read-only commands that never create a journal."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from provision.cli import logs, main
from provision.journal import Journal
from provision.journal.campaigns import CampaignStore, NodeState
from provision.journal.schema import SCHEMA_VERSION
from tests.conftest import EXAMPLE_INVENTORY, ROOT

INV = str(EXAMPLE_INVENTORY / "hosts.yml")
BMC01 = "https://bmc-node01.oob.example.net"


@pytest.fixture(autouse=True)
def _logging_back() -> None:
    yield
    logs.configure(0, None)


# -- --version, -q ----------------------------------------------------------------------------------------
def test_version_is_the_installed_distributions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"provision {importlib.metadata.version('provision')}"


def test_the_package_version_has_one_source() -> None:
    import provision

    assert provision.__version__ == importlib.metadata.version("provision")
    text = (ROOT / "provision" / "__init__.py").read_text()
    assert importlib.metadata.version("provision") not in text  # not written a second time


def test_quiet_keeps_warnings_off_stderr_and_excludes_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["-q", "inventory", "list", "-i", INV, "--json"]) == 0
    capsys.readouterr()
    logging.getLogger("provision.test").warning("a warning -q hides")
    logging.getLogger("provision.test").error("an error -q shows")
    err = capsys.readouterr().err
    assert "a warning -q hides" not in err and "an error -q shows" in err
    assert main(["-q", "-v", "inventory", "list", "-i", INV]) == 2
    assert "-q and -v exclude each other" in capsys.readouterr().err


# -- completion ---------------------------------------------------------------------------------------------
@pytest.fixture
def provision_on_path(tmp_path: Path) -> dict[str, str]:
    """A `provision` executable on PATH that runs this checkout (what the entry point does)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "provision"
    exe.write_text(f'#!/bin/sh\nexec {sys.executable} -m provision.cli "$@"\n')
    exe.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}", PYTHONPATH=str(ROOT))
    return env


def _complete_bash(env: dict[str, str], *words: str) -> list[str]:
    script = ('eval "$(provision completion bash)"; COMP_WORDS=(' + " ".join(words) + "); "
              f"COMP_CWORD={len(words) - 1}; _provision_completion provision; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_the_bash_completion_script_completes_command_names(provision_on_path: dict[str, str]) -> None:
    assert _complete_bash(provision_on_path, "provision", "bri") == ["bringup"]
    assert set(_complete_bash(provision_on_path, "provision", "campaign", "st")) == {"start", "status"}
    assert "--output" in _complete_bash(provision_on_path, "provision", "inventory", "list", "--ou")


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete -o default -F _provision_completion provision"),
                                                ("zsh", "compdef _provision_completion provision"),
                                                ("fish", "complete --command provision")])
def test_completion_prints_each_shells_script(shell: str, marker: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", shell]) == 0
    out = capsys.readouterr().out
    assert marker in out and f"_PROVISION_COMPLETE=complete_{shell}" in out


def test_completion_of_an_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "tcsh"]) == 2
    assert "'tcsh' is not one of 'bash', 'zsh', 'fish'" in capsys.readouterr().err


# -- --output ---------------------------------------------------------------------------------------------
def test_inventory_list_in_a_pipe_is_tab_separated_and_whole(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inventory", "list", "-i", INV]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "host\tprofile\tgroups\tbmc\tssh"
    found = [line for line in lines if BMC01 in line]  # `inventory list | grep bmc-node01.oob.example.net`
    assert len(found) == 1 and found[0].split("\t")[0] == "node01" and found[0].split("\t")[3] == BMC01


def test_a_table_asked_for_in_a_pipe_is_not_cut_at_80_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inventory", "list", "-i", INV, "--output", "table"]) == 0
    out = capsys.readouterr().out
    assert BMC01 in out and "node01.cluster.example.net" in out and "…" not in out
    assert max(len(line) for line in out.splitlines()) > 80


def test_json_flag_is_output_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inventory", "list", "-i", INV, "--json"]) == 0
    flag = json.loads(capsys.readouterr().out)
    assert main(["inventory", "list", "-i", INV, "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == flag and flag[0]["bmc"] == BMC01


def test_a_bad_output_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inventory", "list", "-i", INV, "--output", "yaml"]) == 2
    assert "'yaml' is not one of 'table', 'plain', 'json'" in capsys.readouterr().err


# -- data is never markup ---------------------------------------------------------------------------------
@pytest.fixture
def bracketed(inventory_copy: Path) -> Path:
    """The example inventory with values Rich would read as markup: `[/tmp]` (a closing tag nothing opened:
    an error) and `[x]` (an unknown style tag: it vanishes)."""
    inv = inventory_copy.parent
    _edit(inv / "host_vars" / "node01.yml", lambda d: d.update(ansible_host="[x].cluster.example.net"))
    _edit(inv / "group_vars" / "all" / "profile_ml_prod_v4.yml",
          lambda d: next(v for v in d.values() if isinstance(v, dict) and "description" in v).update(
              description="scratch on [/tmp], flag [x]"))
    return inventory_copy


def _edit(path: Path, change: object) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)  # type: ignore[operator]
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.mark.parametrize("fmt", ["table", "plain"])
def test_brackets_in_the_inventory_print_as_they_are(bracketed: Path, fmt: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inventory", "list", "-i", str(bracketed), "-o", fmt]) == 0
    assert "[x].cluster.example.net" in capsys.readouterr().out
    assert main(["spec", "show", "node01", "-i", str(bracketed), "-o", fmt]) == 0
    out = capsys.readouterr()
    assert "scratch on [/tmp], flag [x]" in out.out and "internal error" not in out.err


def test_brackets_in_the_journal_and_node_names_print_as_they_are(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j.db"
    with Journal(path) as j:
        run = j.start_run("bringup", "node01")
        j.stage_finished(j.stage_started(run, "node01", "os"), "failed", "cannot mount [/tmp] on [x]")
        j.stage_started(j.start_run("bringup", "[x]"), "[x]", "os")  # a journal node named like markup
    for fmt in ("table", "plain"):
        assert main(["status", "--journal", str(path), "-o", fmt]) == 0
        out = capsys.readouterr().out
        assert "cannot mount [/tmp] on [x]" in " ".join(out.split()) and "[x]" in out.replace("on [x]", "")
        assert main(["history", "node01", "--journal", str(path), "-o", fmt]) == 0
        assert "cannot mount [/tmp] on [x]" in " ".join(capsys.readouterr().out.split())


# -- spec show ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["table", "plain"])
def test_spec_show_prints_list_values(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "show", "node01", "-i", INV, "-o", fmt]) == 0
    out = capsys.readouterr().out
    for value in ("avx512f", "amx_int8", "smc_x13_bmc_11.02.05.bin"):  # cpu.isa_flags, firmware[0].image
        assert value in out, value
    if fmt == "plain":
        assert "cpu.isa_flags[0]\tavx512f" in out.splitlines()
        assert "firmware[0].component\tbmc" in out.splitlines()
    else:
        assert "isa_flags: avx512f, avx512bw" in out and "[0] bmc" in out


# -- read-only journal ------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["status"], ["status", "node01"], ["history", "node01"],
                                     ["campaign", "status", "c1"], ["campaign", "report", "c1"]])
def test_a_read_command_on_a_missing_journal_says_so_and_creates_nothing(
        tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nonexistent" / "x.db"
    rc = main([*command, "--journal", str(missing)])
    err = capsys.readouterr().err.strip()
    assert rc != 0 and len(err.splitlines()) == 1 and str(missing) in err and "no journal" in err
    assert not missing.parent.exists()


def test_a_read_command_never_creates_the_default_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    assert main(["status"]) == 2
    assert str(tmp_path / "state" / "provision.db") in capsys.readouterr().err
    assert not (tmp_path / "state").exists()


def test_a_read_command_opens_an_existing_journal_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "j.db"
    with Journal(path) as j:
        store = CampaignStore(j)
        store.create("c1", str(ROOT / "campaigns" / "ml_prod_v4_2026q4.yml"), "0" * 64, [["n1"]])
        store.node_started("c1", "n1", {"bmc": "1.0"})
        store.node_finished("c1", "n1", NodeState.DONE, {"bmc": "2.0"})
        j.stage_started(j.start_run("bringup", "n1"), "n1", "os")  # history takes a node the journal knows
    before = path.read_bytes()
    opened: list[str] = []
    connect = sqlite3.connect

    def spy(database: object, *args: object, **kwargs: object) -> sqlite3.Connection:
        opened.append(str(database))
        return connect(database, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(sqlite3, "connect", spy)
    for command in (["status"], ["history", "n1"], ["campaign", "status", "c1"], ["campaign", "report", "c1"]):
        assert main([*command, "--journal", str(path), "--json"]) == 0, capsys.readouterr().err
        json.loads(capsys.readouterr().out)  # what it printed is whole JSON
    assert len(opened) == 4 and all(o.startswith("file:") and o.endswith("?mode=ro") for o in opened), opened
    assert path.read_bytes() == before


def test_an_old_journal_is_not_migrated_by_a_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "old.db"
    sqlite3.connect(path).close()  # an empty database: schema 0
    assert main(["status", "--journal", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "empty" in err
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 0 != SCHEMA_VERSION
    db.close()


def test_a_write_still_creates_the_journal(tmp_path: Path) -> None:
    path = tmp_path / "new" / "j.db"
    with Journal(path) as j:
        assert j.schema_version == SCHEMA_VERSION
    assert path.is_file()


def test_verify_terminal_summary_prints_bracketed_findings_as_they_are() -> None:
    from datetime import datetime

    from rich.console import Console

    from provision.conformance.model import CheckResult, Level, NodeReport, Outcome, RunReport
    from provision.conformance.report import render_terminal

    found = CheckResult(node="n1", id="storage.scratch.mount", area="storage", description="scratch mounted",
                        expected="mounted on [x]", found="[/tmp] is not a mount point", outcome=Outcome.FAIL,
                        detail="findmnt said [/tmp]")
    run = RunReport(level=Level.QUICK, started=datetime.now().astimezone(), seconds=0.1, nodes=(
        NodeReport(node="n1", profile="p", results=(found,)),
        NodeReport(node="n2", profile="p", error="ssh: [/etc/ssh] unreadable")))
    console = Console(record=True, width=300)
    render_terminal(run, console)
    out = console.export_text()
    assert "mounted on [x]" in out and "[/tmp] is not a mount point" in out and "findmnt said [/tmp]" in out
    assert "ssh: [/etc/ssh] unreadable" in out


def test_campaign_plan_of_a_file_creates_no_journal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = tmp_path / "state" / "j.db"
    assert main(["campaign", "plan", str(tmp_path / "missing.yml"), "--journal", str(journal)]) == 2
    assert "missing.yml: campaign file does not exist" in capsys.readouterr().err
    assert not journal.parent.exists()


def test_a_pipe_is_a_pipe_even_when_rich_is_told_to_colour(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from provision.cli import output

    monkeypatch.setattr(output.console, "_force_terminal", True)  # what FORCE_COLOR in a CI job does
    assert output.console.is_terminal
    assert main(["inventory", "list", "-i", INV]) == 0
    assert any(line.split("\t")[3:4] == [BMC01] for line in capsys.readouterr().out.splitlines())


@pytest.mark.parametrize(("raised", "code", "line"), [
    (KeyError("sku"), 1, "internal error: KeyError: 'sku' (set PROVISION_DEBUG=1 for a traceback)"),  # a bug of ours
    (KeyboardInterrupt(), 130, None),
])
def test_what_the_library_did_not_mean_to_raise_exits_non_zero_in_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], raised: BaseException, code: int,
        line: str | None) -> None:
    import provision.cli.verify as verify_cli

    def boom(*_a: object, **_k: object) -> None:
        raise raised

    monkeypatch.delenv("PROVISION_DEBUG", raising=False)
    monkeypatch.setattr(verify_cli, "load_hosts", boom)
    assert main(["verify", "node01", "-i", "inventory/hosts.yml"]) == code
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and (line is None or err.splitlines() == [line])


def test_provision_debug_lets_a_bug_raise_with_its_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import provision.cli.verify as verify_cli

    def boom(*_a: object, **_k: object) -> None:
        raise KeyError("sku")

    monkeypatch.setenv("PROVISION_DEBUG", "1")
    monkeypatch.setattr(verify_cli, "load_hosts", boom)
    with pytest.raises(KeyError, match="sku"):
        main(["verify", "node01", "-i", "inventory/hosts.yml"])


def test_an_interrupt_outside_any_command_exits_130(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Inside a command typer turns Ctrl-C into exit 130 itself (above); main() does the same for one that
    comes before or after the command runs (while the app is built, or its options parsed)."""
    import provision.cli as cli

    def interrupted(*_a: object, **_k: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "app", interrupted)
    assert main(["verify", "node01"]) == 130
    assert "interrupted" in capsys.readouterr().err
