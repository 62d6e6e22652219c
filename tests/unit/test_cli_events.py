"""When stdout is not a terminal, work is reported as it happens: one line on stderr per node and stage
(`node01 firmware applied 2.3s`), for bring-up, verify and campaigns; -q turns the lines off."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from provision.bringup.stage import StageContext
from provision.cli import events, main
from provision.cli.campaign import _node_event
from provision.cli.verify import node_event
from provision.conformance.facts import GatherError
from provision.conformance.model import Level
from provision.conformance.node import Reach, verify
from provision.journal import Journal
from provision.journal.campaigns import CampaignStore
from provision.spec import HostEntry
from tests.conftest import EXAMPLE_INVENTORY
from tests.unit.campaign.fakes import FakeBmcs, catalog
from tests.unit.campaign.test_engine import NODES, OLD, engine
from tests.unit.conformance.test_runner_bmc_cli import GPU_590, host
from tests.unit.test_bringup_engine import FakeStage

INV = str(EXAMPLE_INVENTORY / "hosts.yml")
EVENT = re.compile(r"^(?P<node>\S+) (?P<stage>\S+) (?P<outcome>\S+) (?P<s>\d+\.\d)s(?:: (?P<detail>.*))?$")


def swap_stderr(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """sys.stderr as a buffer, set in the test's own body (pytest's capture resets it between phases)."""
    buf = io.StringIO()
    monkeypatch.setattr(sys, "stderr", buf)
    events.quiet.on = False
    return buf


def parsed(text: str) -> list[dict[str, Any]]:
    return [m.groupdict() for line in text.splitlines() if (m := EVENT.match(line))]


# -- bring-up ---------------------------------------------------------------------------------------------
class Watching(FakeStage):
    """Records what stderr held when it began: the previous stage's line must be there already."""

    def __init__(self, name: str, world: dict[str, dict[str, str]], err: io.StringIO, **kw: Any) -> None:
        super().__init__(name, world, **kw)
        self.err = err
        self.seen: list[str] = []

    def observe(self, ctx: StageContext) -> Any:
        self.seen.append(self.err.getvalue())
        return super().observe(ctx)


def test_bringup_in_a_pipe_prints_a_line_as_each_stage_ends(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    stderr = swap_stderr(monkeypatch)
    world: dict[str, dict[str, str]] = {"node01": {"firmware": "good"}, "node02": {}}
    firmware = FakeStage("firmware", world)
    bios = Watching("bios", world, stderr, fail_on={"node02"})
    monkeypatch.setattr("provision.cli.bringup.default_stages", lambda opts: [firmware, bios])
    rc = main(["bringup", "node01", "node02", "-i", INV, "--journal", str(tmp_path / "j.db"),
               "--log-dir", str(tmp_path / "logs"), "--concurrency", "1"])
    assert rc == 1  # node02 failed
    lines = {(e["node"], e["stage"]): e for e in parsed(stderr.getvalue())}
    assert lines[("node01", "firmware")]["outcome"] == "converged"
    assert lines[("node02", "firmware")]["outcome"] == "applied"
    assert lines[("node01", "bios")]["outcome"] == "applied"
    assert lines[("node02", "bios")]["outcome"] == "failed" and "BMC said no" in lines[("node02", "bios")]["detail"]
    assert "node01 firmware converged" in bios.seen[0]  # written as it happened, not at the end
    assert capsys.readouterr().out.startswith("node\tstage\toutcome")  # the summary still ends the run on stdout


def test_quiet_drops_the_stage_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = swap_stderr(monkeypatch)
    world: dict[str, dict[str, str]] = {"node01": {}}
    monkeypatch.setattr("provision.cli.bringup.default_stages", lambda opts: [FakeStage("firmware", world)])
    assert main(["-q", "bringup", "node01", "-i", INV, "--journal", str(tmp_path / "j.db"),
                 "--log-dir", str(tmp_path / "logs")]) == 0
    assert parsed(stderr.getvalue()) == []
    events.quiet.on = False


def test_stage_events_time_each_stage_from_its_first_message(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = swap_stderr(monkeypatch)
    now = iter([10.0, 11.0, 12.5, 20.0, 20.25])
    sink = events.StageEvents(clock=lambda: next(now))
    sink("n1", "os", "observing")
    sink("n1", "os", "applying 1 action(s)")
    sink("n1", "os", "applied")
    sink("n1", "reset", "observing")
    sink("n1", "reset", "failed: the host did not come back: [x]")
    assert stderr.getvalue().splitlines() == ["n1 os applied 2.5s", "n1 reset failed 0.2s: the host did not come back: [x]"]


# -- verify -----------------------------------------------------------------------------------------------
def test_verify_reports_each_node_as_it_is_done(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = swap_stderr(monkeypatch)
    def runner_for(h: HostEntry):  # type: ignore[no-untyped-def]
        def runner(node: str, script: str) -> bytes:
            raise GatherError(f"{node}: ssh root@127.0.0.1:22 failed: Connection refused")
        return runner

    verify([host("up01", **GPU_590), host("down02")], Level.QUICK, Reach(runner_for=runner_for), on_node=node_event)
    got = {e["node"]: e for e in parsed(stderr.getvalue())}
    assert set(got) == {"up01", "down02"}
    assert got["down02"]["stage"] == "verify" and got["down02"]["outcome"] == "unreachable"
    assert "Connection refused" in got["down02"]["detail"]


# -- campaigns --------------------------------------------------------------------------------------------
def test_a_campaign_reports_each_node_as_its_turn_ends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = swap_stderr(monkeypatch)
    source = tmp_path / "campaign.yml"
    source.write_text("name: test\n")
    cat = catalog({"waves": {"canary": 1, "batch_size": 4}})
    bmcs = FakeBmcs(NODES, OLD)
    bmcs.faults["n03"] = "fail"
    with Journal(tmp_path / "j.db") as j:
        from provision.campaign.engine import waves_for

        engine(cat, CampaignStore(j), bmcs, on_node=_node_event).start(source, waves_for(NODES, cat))
    got = {e["node"]: e for e in parsed(stderr.getvalue())}
    assert got["n01"]["stage"] == "campaign-wave0" and got["n01"]["outcome"] == "done"
    assert "bmc 1.0 -> 2.0" in got["n01"]["detail"]
    assert got["n03"]["outcome"] == "failed" and got["n03"]["detail"]


def test_the_live_table_prints_a_stage_message_as_it_is() -> None:
    from rich.console import Console

    from provision.bringup.display import Progress

    console = Console(record=True, width=200)
    progress = Progress(["node01"], None, console, live=False)
    progress("node01", "os", "failed: cannot mount [/tmp] on [x]")
    console.print(progress._table())
    assert "failed: cannot mount [/tmp] on [x]" in console.export_text()
