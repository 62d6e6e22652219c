"""`provision campaign` without BMCs: bad input is one line and exit 2; status, pause, abort and
report read and write the journal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from provision.campaign.report import build_report, render_html
from provision.cli import main
from provision.journal import Journal
from provision.journal.campaigns import CampaignState, CampaignStore
from tests.unit.campaign.fakes import ROOT, halted_journal


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    """Campaign c1 halted: wave 0 (n1) done, n2 of wave 1 failed (its detail needs escaping), n3 pending."""
    return halted_journal(tmp_path / "j.db", [["n1"], ["n2", "n3"]], "after the update: <bmc> is 1.0",
                          wave0_done=True)


def test_report_model_and_html(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        report = build_report(CampaignStore(j), "c1")
    s = report.summary
    assert (s.nodes, s.done, s.failed, s.pending, s.updated) == (3, 1, 1, 1, 1)
    assert [w.nodes for w in report.waves] == [1, 2]
    html = render_html(report)
    assert "bmc: 1.0 &rarr; 2.0 (flashed)" in html
    from importlib.metadata import version

    assert report.digest == "0" * 64 and report.provision_version == version("provision") and report.generated
    assert f"sha256 <code>{'0' * 64}</code>; report by provision {version('provision')}" in html
    assert "&lt;bmc&gt;" in html and "<bmc>" not in html  # escaped


def test_status_json(journal_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["campaign", "status", "c1", "--journal", str(journal_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["state"] == "halted" and out["summary"]["failed"] == 1 and out["controller_running"] is False


def test_report_json_and_html_file(journal_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    html = tmp_path / "r.html"
    assert main(["campaign", "report", "c1", "--journal", str(journal_path), "--json", "--html", str(html)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {n["node"]: n["outcome"] for n in data["nodes"]} == {"n1": "done", "n2": "failed", "n3": "pending"}
    assert html.read_text().startswith("<!doctype html>")


def test_pause_then_abort_without_a_controller(journal_path: Path) -> None:
    assert main(["campaign", "pause", "c1", "--journal", str(journal_path)]) == 0
    with Journal(journal_path) as j:
        assert CampaignStore(j).get("c1").state is CampaignState.PAUSED
    assert main(["campaign", "abort", "c1", "--journal", str(journal_path)]) == 0
    with Journal(journal_path) as j:
        assert CampaignStore(j).get("c1").state is CampaignState.ABORTED
    assert main(["campaign", "pause", "c1", "--journal", str(journal_path)]) == 2


def test_halt_without_a_controller(journal_path: Path) -> None:
    with Journal(journal_path) as j:
        CampaignStore(j).claim("c1", 2**22 + 1)  # resumed by a process that is gone
    assert main(["campaign", "halt", "c1", "--journal", str(journal_path)]) == 0
    with Journal(journal_path) as j:
        record = CampaignStore(j).get("c1")
    assert record.state is CampaignState.HALTED and record.reason == "halted by request" and record.request is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["campaign", "status", "nope"], "campaign 'nope' is not in the journal"),
        (["campaign", "report", "nope", "--json"], "campaign 'nope' is not in the journal"),
        (["campaign", "plan", "missing.yml"], "missing.yml: campaign file does not exist"),
        (["campaign", "resume", "nope"], "neither a campaign file nor a campaign"),
        (["campaign", "start", "x.yaml"], "x.yaml: campaign file does not exist"),
    ],
)
def test_bad_input_is_one_line_exit_2(journal_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                      message: str) -> None:
    assert main([*args, "--journal", str(journal_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) <= 2


def test_resume_refuses_an_edited_campaign_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    shutil.copytree(ROOT / "firmware", tmp_path / "firmware")
    (tmp_path / "campaigns").mkdir()
    camp = tmp_path / "campaigns" / "c.yml"
    shutil.copy(ROOT / "campaigns" / "ml_prod_v4_2026q4.yml", camp)
    path = tmp_path / "j.db"
    with Journal(path) as j:
        CampaignStore(j).create("ml_prod_v4_2026q4", str(camp), "f" * 64, [["node01"]])
    assert main(["campaign", "resume", str(camp), "--journal", str(path)]) == 2
    assert "changed since campaign ml_prod_v4_2026q4 started" in capsys.readouterr().err
