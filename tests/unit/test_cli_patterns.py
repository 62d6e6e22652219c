"""Every command that takes nodes takes a host pattern, and every --limit is one: the CLI resolves them once,
refuses a pattern that matches no host with one line (exit 2) before doing anything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import typer

from provision.cli import main
from provision.journal import Journal
from tests.conftest import EXAMPLE_INVENTORY

INV = str(EXAMPLE_INVENTORY / "hosts.yml")


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return " ".join(err.split())


def test_exec_takes_an_ansible_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def run_many(hosts: list[Any], command: str, concurrency: int) -> list[Any]:
        seen.append([h.name for h in hosts])
        return []

    monkeypatch.setattr("provision.cli.remote.run_many", run_many)
    assert main(["exec", "node0[1:2]", "-i", INV, "--", "true"]) == 0
    assert main(["exec", "ml_prod_v4:!node0[2:7]", "-i", INV, "--", "true"]) == 0
    assert main(["exec", "node[01-08]", "-i", INV, "--limit", "~node0[45]", "--", "true"]) == 0
    assert seen == [["node01", "node02"], ["node01", "node08"], ["node04", "node05"]]


def test_verify_takes_patterns_and_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def verify(hosts: list[Any], level: Any, reach: Any, **_: Any) -> None:
        seen.append([h.name for h in hosts])
        raise typer.Exit(0)

    monkeypatch.setattr("provision.conformance.node.verify", verify)
    assert main(["verify", "node[01-03,07]", "!node02", "-i", INV, "--no-bmc"]) == 0
    assert main(["verify", "gpu_nodes", "-i", INV, "-l", "node0[6:8]", "--no-bmc"]) == 0
    assert seen == [["node01", "node03", "node07"], ["node06", "node07", "node08"]]


def test_bringup_with_only_limit_selects_from_all(state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[str]] = []

    def run_bringup(hosts: list[Any], *args: Any, **kwargs: Any) -> None:
        seen.append([h.name for h in hosts])
        raise typer.Exit(0)

    monkeypatch.setattr("provision.cli.bringup.run_bringup", run_bringup)
    args = ["-i", INV, "--journal", str(state / "j.db"), "--log-dir", str(state / "logs"), "--plan"]
    assert main(["bringup", "--limit", "ml_prod_v4[0:1]", *args]) == 0
    assert main(["bringup", "node0*", "--limit", "!node0[2:8]", *args]) == 0
    assert seen == [["node01", "node02"], ["node01"]]


@pytest.mark.parametrize(("pattern", "says"), [
    ("node0[1:2],nodeX", "host pattern 'node0[1:2],nodeX': 'nodeX' matches no host"),
    ("node[01-09]", "'node[01-09]' names node09, not in the inventory"),
    ("ml_prod_v4,!node3", "'node3' matches no host"),
    ("node01,&node02", "host pattern 'node01,&node02' matches no host"),
])
def test_bringup_refuses_a_pattern_that_matches_nothing_before_writing(state: Path,
                                                                        capsys: pytest.CaptureFixture[str],
                                                                        pattern: str, says: str) -> None:
    journal, logs = state / "j" / "journal.db", state / "logs"
    rc = main(["bringup", pattern, "-i", INV, "--journal", str(journal), "--log-dir", str(logs), "--plan"])
    assert rc == 2
    assert says in _one_error_line(capsys)
    assert not journal.parent.exists() and not logs.exists()


def test_sel_count_is_last_and_a_number_to_limit_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sel", "node01", "-i", INV, "--limit", "5"]) == 2
    assert "--limit is a host pattern on every command; for the last 5 SEL entries use --last 5" in \
        _one_error_line(capsys)
    assert main(["sel", "node01", "-i", INV, "--last", "0"]) == 2
    assert "--last" in _one_error_line(capsys)


@pytest.mark.parametrize("argv", [
    ["sel", "node0[1:2]"],
    ["power", "ml_prod_v4", "status"],
    ["bios", "diff", "node*"],
    ["firmware", "status", "node[01-02]"],
    ["bmc", "boot-once", "gpu_nodes", "Pxe", "--plan"],
    ["spec", "show", "gpu_nodes"],
])
def test_one_node_commands_refuse_a_pattern_of_several(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main([*argv, "-i", INV]) == 2
    line = _one_error_line(capsys)
    assert " hosts (node0" in line and line.endswith("this command takes one node"), line


def test_one_node_message(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["power", "node0[1:3]", "status", "-i", INV]) == 2
    assert ("host pattern 'node0[1:3]' selects 3 hosts (node01, node02, node03); this command takes one node"
            in _one_error_line(capsys))


def test_spec_show_resolves_a_pattern_to_its_host(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "show", "ml_prod_v4[2]", "-i", INV, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["host"] == "node03"


def _journal_with(path: Path, nodes: list[str]) -> None:
    with Journal(path) as jr:
        run = jr.start_run("bringup", ",".join(nodes))
        for node in nodes:
            jr.stage_finished(jr.stage_started(run, node, "preflight"), "converged")


def test_status_and_history_patterns(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = state / "j.db"
    _journal_with(journal, ["node01", "lab-a1", "lab-a2", "lab-b1"])
    assert main(["status", "lab-a*", "node01", "--journal", str(journal), "-i", INV, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["node"] for r in rows] == ["lab-a1", "lab-a2", "node01"]
    assert main(["status", "node0[1:2]", "--journal", str(journal), "-i", INV, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["node"], r["outcome"]) for r in rows] == [("node01", "converged"), ("node02", None)]
    nowhere = str(state / "no-inventory.yml")  # then the journal's nodes are the only hosts, in no group
    assert main(["status", "lab-[a-b]1", "--journal", str(journal), "-i", nowhere, "--json"]) == 0
    assert [r["node"] for r in json.loads(capsys.readouterr().out)] == ["lab-a1", "lab-b1"]
    assert main(["status", "ml_prod_v4", "--journal", str(journal), "-i", nowhere]) == 2
    assert "'ml_prod_v4' matches no host" in _one_error_line(capsys)
    assert main(["history", "~lab-b", "--journal", str(journal), "-i", INV, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["node"] == "lab-b1"
    assert main(["history", "lab-a*", "--journal", str(journal), "-i", INV]) == 2
    assert "selects 2 hosts (lab-a1, lab-a2)" in _one_error_line(capsys)


def test_campaign_limit_is_a_pattern(state: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    seen: list[list[str]] = []

    def observe_all(targets: list[Any], *args: Any) -> None:
        seen.append([t.name for t in targets])
        raise typer.Exit(0)

    monkeypatch.setattr("provision.cli.campaign.observe_all", observe_all)
    camp = str(EXAMPLE_INVENTORY.parent / "campaigns" / "ml_prod_v4_2026q4.yml")
    args = ["campaign", "plan", camp, "-i", INV, "--journal", str(state / "j.db")]
    assert main([*args, "--limit", "node[01-03],!node02"]) == 0
    assert main([*args, "-l", "ml_prod_v4[6:]"]) == 0
    assert seen == [["node01", "node03"], ["node07", "node08"]]
    assert main([*args, "--limit", "node01,nodeX"]) == 2
    assert "--limit 'node01,nodeX': 'nodeX' matches no host" in _one_error_line(capsys)
    assert len(seen) == 2  # nothing observed
