"""One output convention (provision/cli/output.py): a flag's help shows no value type, and bring-up's summary
is a table on a terminal and tab-separated lines elsewhere (`--output table|plain|json` chooses)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
import typer

from provision.cli import main, output, register
from tests.conftest import EXAMPLE_INVENTORY
from tests.unit.test_bringup_engine import FakeStage

INV = str(EXAMPLE_INVENTORY / "hosts.yml")
LONG = "x" * 600  # a stage's text as long as a real error can be: in a pipe it is one line, never a padded table


# -- help ---------------------------------------------------------------------------------------------------
def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    subs = getattr(command, "commands", None)
    if not subs:
        return [(path, command)]
    return [(path, command)] + [c for name, sub in subs.items() for c in _commands(sub, (*path, name))]


def test_no_flag_of_any_command_shows_a_value_type() -> None:
    root = typer.main.get_command(register())
    commands = _commands(root)
    assert len(commands) > 30  # every group and command of the tree
    flags, shown = 0, []
    for path, command in commands:
        ctx = typer.Context(command, info_name=path[-1] if path else "provision")
        for param in command.get_params(ctx):
            if getattr(param, "is_flag", False) or getattr(param, "count", False):
                flags += 1
                if param.display_type_rich(ctx) is not None:
                    shown.append(f"{' '.join(path)} {param.opts[0]}")
    assert flags > 60 and shown == []


# commands that change things (their --json, where they have one, reports what they did), and two that print a
# file's text (a spec file, a completion script): every other command reads, and takes --output
WRITES = {"campaign start", "campaign join", "campaign resume", "campaign pause", "campaign abort", "campaign halt",
          "lab up", "lab down", "lab fault", "bmc boot-once", "bmc media", "bios apply", "firmware update",
          "spec export", "completion", "bmc setup", "clean", "retire", "unretire", "netboot up", "netboot down"}


def test_every_command_that_reads_takes_output() -> None:
    leaves = [(path, c) for path, c in _commands(typer.main.get_command(register())) if not getattr(c, "commands", None)]
    without = {" ".join(path) for path, c in leaves if "--output" not in {o for p in c.params for o in p.opts}}
    assert without == WRITES
    assert len(leaves) - len(without) >= 20


def _help(*path: str) -> str:
    buf = io.StringIO()
    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(buf):
        mp.setenv("COLUMNS", "200")
        assert main([*path, "--help"]) == 0
    return buf.getvalue()


@pytest.mark.parametrize(("path", "flag", "typed"), [
    (("power",), "--plan", None), (("power",), "--insecure", None), (("power",), "--help", None),
    (("power",), "--timeout", "<float>"), ((), "--verbose", None), ((), "--log-file", "<path>"),
    (("bringup",), "--output", "<table|plain|json>"), (("bringup",), "--json", None),
])  # fmt: skip
def test_the_help_shows_a_type_only_where_a_value_is_taken(path: tuple[str, ...], flag: str,
                                                           typed: str | None) -> None:
    text = _help(*path)
    line = next(m for line in text.splitlines() if (m := re.match(rf"^│ +{flag}(?: +-\w)? +(<\S+>)?", line)))
    assert line.group(1) == typed
    assert "<bool>" not in text


# -- bring-up's summary ----------------------------------------------------------------------------------------
@pytest.fixture
def bringup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    world: dict[str, dict[str, str]] = {"node01": {"firmware": "good"}, "node02": {}}

    def run(*flags: str) -> int:
        stages = [FakeStage("firmware", world), FakeStage("bios", world, target=LONG, fail_on={"node02"})]
        monkeypatch.setattr("provision.cli.bringup.default_stages", lambda opts: stages)
        argv = ["-q", "bringup", "node01", "node02", "-i", INV, "--journal", str(tmp_path / "j.db"),
                "--log-dir", str(tmp_path / "logs"), "--concurrency", "1", *flags]
        return main(argv)

    return run


def test_bringup_summary_in_a_pipe_is_tab_separated_lines(bringup: Any, capsys: pytest.CaptureFixture[str]) -> None:
    rc = bringup()
    out = capsys.readouterr().out
    assert rc == 1  # node02 failed
    lines = out.splitlines()
    assert lines[0] == "node\tstage\toutcome\ts\twhat"
    rows = [line.split("\t") for line in lines[1:5]]
    assert [(r[0], r[1], r[2]) for r in rows] == [("node01", "firmware", "converged"), ("node01", "bios", "applied"),
                                                   ("node02", "firmware", "applied"), ("node02", "bios", "failed")]
    assert all(len(r) == 5 for r in rows) and LONG in rows[1][4] and "BMC said no" in rows[3][4]
    assert lines[5:] == ["node01: done", "node02: failed at bios"]
    assert not re.search("[─━│┃┏┡└]", out)  # no box drawing: no Rich table
    assert max(len(line) for line in lines) < len(LONG) + 100  # no padding beyond the data itself


def test_bringup_output_table_prints_the_table_into_a_pipe(bringup: Any, capsys: pytest.CaptureFixture[str]) -> None:
    bringup("--output", "table")
    out = capsys.readouterr().out
    assert "bring-up run" in out and re.search("[│┃]", out) and "node\tstage" not in out


def test_bringup_summary_on_a_terminal_is_a_table(bringup: Any, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "to_terminal", lambda: True)  # stdout a terminal (the live table stays off)
    bringup()
    out = capsys.readouterr().out
    assert "bring-up run" in out and re.search("[│┃]", out)


def test_bringup_output_json_is_json(bringup: Any, capsys: pytest.CaptureFixture[str]) -> None:
    rc = bringup("-o", "json")
    data = json.loads(capsys.readouterr().out)
    assert rc == 1 and [n["node"] for n in data["nodes"]] == ["node01", "node02"]
    assert data["nodes"][1]["failed_stage"] == "bios"
    rc_old = bringup("--json")
    old = json.loads(capsys.readouterr().out)
    assert rc_old == rc and set(old) == set(data) and old["nodes"][1]["failed_stage"] == "bios"


# -- verify ------------------------------------------------------------------------------------------------------
@pytest.fixture
def verified(monkeypatch: pytest.MonkeyPatch) -> None:
    """verify's controller run answers a prepared report: node01 with a failed, a waived and a passed check (data
    with brackets and a tab), node02 unreachable."""
    from datetime import datetime

    from provision.conformance.model import CheckResult, Level, NodeReport, Outcome, RunReport

    def result(check: str, outcome: Outcome, found: str, detail: str = "") -> CheckResult:
        return CheckResult(node="node01", id=check, area="storage", description=check, expected="mounted on [x]",
                           found=found, outcome=outcome, detail=detail)

    nodes = (NodeReport(node="node01", profile="ml_prod_v4", gather_seconds=0.5, results=(
        result("storage.scratch.mount", Outcome.FAIL, "[/tmp] is not\ta mount point", "findmnt said [/tmp]"),
        result("storage.scratch.size", Outcome.WAIVED, "n/a", "waived: lab disk"),
        result("storage.boot.mirror", Outcome.PASS, "md0 clean"))),
        NodeReport(node="node02", profile="ml_prod_v4", error="ssh: [/etc/ssh] unreadable"))
    run = RunReport(level=Level.FULL, started=datetime.now().astimezone(), seconds=0.1, nodes=nodes)
    monkeypatch.setattr("provision.cli.verify._controller_run", lambda *a, **k: run)
    monkeypatch.setattr("provision.cli.verify._tell_slurm", lambda hosts, run: [])


VERIFY = ["-q", "verify", "node01", "node02", "-i", INV]


def test_verify_in_a_pipe_prints_tab_separated_nodes_then_checks(verified: None,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(VERIFY) == 1  # a check failed
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "node\tprofile\tchecks\tpass\twarn\twaived\terror\tfail\tgather_s\tresult\tnotice"
    assert lines[1].split("\t") == ["node01", "ml_prod_v4", "3", "1", "0", "1", "0", "1", "0.50", "fail", ""]
    assert lines[2].split("\t")[:2] == ["node02", "ml_prod_v4"] and lines[2].split("\t")[9] == "unreachable"
    assert lines[3] == "node\tcheck\texpected\tfound\tresult\tdetail"
    rows = [line.split("\t") for line in lines[4:]]
    assert rows == [
        ["node01", "storage.scratch.mount", "mounted on [x]", "[/tmp] is not a mount point", "fail",
         "findmnt said [/tmp]"],
        ["node01", "storage.scratch.size", "mounted on [x]", "n/a", "waived", "waived: lab disk"],
        ["node02", "gather facts", "reachable", "ssh: [/etc/ssh] unreadable", "error", ""],
    ]  # the passed check only with --all; a tab in the data is a space


def test_verify_plain_with_all_lists_every_check(verified: None, capsys: pytest.CaptureFixture[str]) -> None:
    main([*VERIFY, "--all", "-o", "plain"])
    out = capsys.readouterr().out
    assert "node01\tstorage.boot.mirror\tmounted on [x]\tmd0 clean\tpass\t" in out


def test_verify_output_table_and_json(verified: None, capsys: pytest.CaptureFixture[str]) -> None:
    main([*VERIFY, "--output", "table"])
    out = capsys.readouterr().out
    assert "provision verify --level full" in out and re.search("[│┃]", out) and "[/tmp] is not" in out
    main([*VERIFY, "-o", "json"])
    data = json.loads(capsys.readouterr().out)
    main([*VERIFY, "--json", "-"])
    old = json.loads(capsys.readouterr().out)
    assert data["nodes"] == old["nodes"] and [n["node"] for n in data["nodes"]] == ["node01", "node02"]


def test_verify_refuses_two_outputs_on_stdout(verified: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*VERIFY, "--json", "-", "-o", "plain"]) == 2
    assert "--json - prints the JSON report on stdout, --output plain a summary: drop one" in capsys.readouterr().err


# -- power -------------------------------------------------------------------------------------------------------
def test_power_prints_one_line_or_json(inventory_copy: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit.test_cli_output_json import _plain_http_bmc

    inv = str(inventory_copy)
    with _plain_http_bmc(inventory_copy, monkeypatch):
        assert main(["-q", "power", "node01", "status", "-i", inv]) == 0
        line = capsys.readouterr().out
        assert main(["-q", "power", "node01", "status", "-i", inv, "-o", "json"]) == 0
        status = json.loads(capsys.readouterr().out)
        assert main(["-q", "power", "node01", "off", "--plan", "-i", inv, "--output", "json"]) == 0
        planned = json.loads(capsys.readouterr().out)
        assert main(["-q", "power", "node01", "off", "--plan", "-i", inv]) == 0
        planned_line = capsys.readouterr().out
    assert line == "node01: On\n"  # the captured board is on
    assert status == {"node": "node01", "power_state": "On", "actions": [], "planned": False, "now": None}
    assert planned["planned"] and planned["now"] is None and planned["actions"][-1]["expect"] == "Off"
    step = planned["actions"][0]["reset_type"]  # a reset the BMC offers, sent by nothing
    assert planned_line == f"node01: On; would send {step} -> Off\n"
