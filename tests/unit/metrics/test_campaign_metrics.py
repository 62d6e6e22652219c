"""`campaign status --prom`: nodes per state, the current wave, halted; promtool passes on the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.campaign.report import build_report
from provision.cli import main
from provision.journal import Journal
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, WaveState
from provision.metrics import render
from provision.metrics.campaign import current_wave, families
from tests.reportcheck import check_metrics
from tests.unit.metrics.promparse import parse, value


def test_cli_writes_the_halted_campaign(journal_path: Path, tmp_path: Path) -> None:
    prom = tmp_path / "campaign.prom"
    assert main(["campaign", "status", "c1", "--journal", str(journal_path), "--prom", str(prom)]) == 0
    check_metrics(prom)
    s = parse(prom.read_text())
    assert [value(s, "provision_campaign_nodes", campaign="c1", state=st) for st in ("pending", "active", "done",
                                                                                      "failed")] == [1, 0, 1, 1]
    assert value(s, "provision_campaign_halted", campaign="c1") == 1
    assert value(s, "provision_campaign_state", campaign="c1", state="halted") == 1
    assert sum(v for (n, _), v in s.items() if n == "provision_campaign_state") == 1
    # halted inside wave 0 (active, not done): the campaign stands at wave 0 of 2
    assert value(s, "provision_campaign_wave", campaign="c1") == 0
    assert (value(s, "provision_campaign_waves", campaign="c1"), value(s, "provision_campaign_waves_done",
                                                                       campaign="c1")) == (2, 0)
    assert value(s, "provision_campaign_controller_running", campaign="c1") == 0
    assert value(s, "provision_campaign_nodes_updated", campaign="c1") == 1


def test_a_finished_campaign_is_past_its_last_wave(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        store = CampaignStore(j)
        for node in ("n2", "n3"):
            store.node_started("c1", node, {"bmc": "1.0"})
            store.node_finished("c1", node, NodeState.DONE, {"bmc": "2.0"})
        for wave in (0, 1):
            store.wave_state("c1", wave, WaveState.DONE, "ok")
        store.set_state("c1", CampaignState.DONE, "")
        report = build_report(store, "c1")
    s = parse(render(families(report, controller_running=False, exported=1.0e9)))
    assert current_wave(report) == 2 and value(s, "provision_campaign_halted", campaign="c1") == 0
    assert value(s, "provision_campaign_state", campaign="c1", state="done") == 1
    assert value(s, "provision_campaign_nodes", campaign="c1", state="done") == 3
    assert value(s, "provision_campaign_export_timestamp_seconds", campaign="c1") == 1.0e9


def test_status_prom_into_a_missing_directory_is_one_line(journal_path: Path, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["campaign", "status", "c1", "--journal", str(journal_path), "--prom", str(tmp_path / "x" / "c.prom")])
    assert code == 2 and "directory" in capsys.readouterr().err
