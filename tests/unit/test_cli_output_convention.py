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

from provision.cli import app, main, output
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
    root = typer.main.get_command(app)
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
