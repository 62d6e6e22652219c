"""`verify --prom`: per node and area the outcome counts, one series per failing check, the run's time,
duration and spec digest; promtool passes on the file; the CLI writes it with the other reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.cli import main
from provision.conformance.model import Outcome
from provision.metrics import render, write_textfile
from provision.metrics.verify import families
from tests.reportcheck import check_json_report, check_junit, check_metrics
from tests.unit.conformance.helpers import framed
from tests.unit.conformance.test_reports import sample_run
from tests.unit.metrics.promparse import named, parse, value


def test_counts_per_node_and_area_match_the_report() -> None:
    run = sample_run()
    series = parse(render(families(run)))
    for node in run.nodes:
        for r in node.results:
            want = sum(1 for x in node.results if x.area == r.area and x.outcome is r.outcome)
            assert value(series, "provision_verify_checks", node=node.node, area=r.area, outcome=r.outcome.value) == want
    # every outcome is written, zeros included, so a series does not vanish when it drops to 0
    areas = {(s["node"], s["area"]) for s in named(series, "provision_verify_checks")}
    assert len(named(series, "provision_verify_checks")) == 5 * len(areas)
    assert value(series, "provision_verify_checks", node="good01", area="gpu", outcome="fail") == 0


def test_one_series_per_failing_check_with_its_id() -> None:
    run = sample_run()
    series = parse(render(families(run)))
    failing = {(s["node"], s["check"], s["outcome"]) for s in named(series, "provision_verify_check_failing")}
    want = {(n.node, r.id, r.outcome.value) for n in run.nodes for r in n.results
            if r.outcome in (Outcome.FAIL, Outcome.ERROR)}
    assert failing == want and ("bad02", "cpu.model", "fail") in failing and ("bad02", "bmc.psu", "error") in failing
    assert not any(s["node"] == "good01" for s in named(series, "provision_verify_check_failing"))


def test_run_time_duration_digest_and_reachability() -> None:
    run = sample_run()
    series = parse(render(families(run)))
    assert value(series, "provision_verify_run_timestamp_seconds") == pytest.approx(run.started.timestamp())
    assert value(series, "provision_verify_run_duration_seconds") == 1.25
    assert value(series, "provision_verify_exit_code") == 1 and value(series, "provision_verify_nodes") == 3
    [info] = named(series, "provision_verify_info")
    assert info["spec_digest"] == run.provenance.spec_digest and info["level"] == "quick"  # type: ignore[union-attr]
    assert value(series, "provision_verify_node_reachable", node="gone03") == 0
    assert value(series, "provision_verify_node_reachable", node="bad02") == 1
    assert value(series, "provision_verify_node_ok", node="good01") == 1
    assert value(series, "provision_verify_node_ok", node="bad02") == 0
    nodes = {s["node"]: s["spec_digest"] for s in named(series, "provision_verify_node_info")}
    assert nodes["bad02"] == run.nodes[1].spec_digest and len(nodes["bad02"]) == 64


def test_promtool_passes_on_the_verify_file(tmp_path: Path) -> None:
    path = write_textfile(tmp_path / "verify.prom", families(sample_run()))
    check_metrics(path)


def test_cli_writes_every_report_and_the_metrics(inventory_copy: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the command line: nothing could be read on the nodes (exit 3), every file is valid."""
    import provision.conformance.node as runner

    monkeypatch.setattr(runner, "ssh_runner_for", lambda level: lambda h: lambda node, script: framed({}))
    out = {k: tmp_path / f"r.{k}" for k in ("prom", "json", "xml", "html")}
    code = main(["verify", "node01", "node02", "-i", str(inventory_copy), "--level", "quick", "--no-bmc",
                 "--prom", str(out["prom"]), "--json", str(out["json"]), "--junit", str(out["xml"]),
                 "--html", str(out["html"])])
    assert code == 3
    check_metrics(out["prom"])
    check_junit(out["xml"])
    data = check_json_report(out["json"])
    prov = data["provenance"]
    assert prov["inventory"] == str(inventory_copy) and len(prov["spec_digest"]) == 64
    assert prov["command"].startswith("provision verify node01 node02 --inventory ") and "--prom" in prov["command"]
    series = parse(out["prom"].read_text())
    assert value(series, "provision_verify_exit_code") == 3
    assert {s["node"] for s in named(series, "provision_verify_check_failing")} == {"node01", "node02"}
    assert prov["command"] in out["html"].read_text().replace("&quot;", '"')


def test_cli_refuses_a_missing_prom_directory(inventory_copy: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["verify", "node01", "-i", str(inventory_copy), "--prom", str(tmp_path / "no" / "m.prom")])
    assert code == 2 and "--prom" in capsys.readouterr().err
