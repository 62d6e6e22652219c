"""docs/grafana/provision.json: valid JSON, every query parses as PromQL (promtool check rules), and every
metric and label it uses is one that verify --prom or campaign status --prom writes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from provision.campaign.report import build_report
from provision.journal import Journal
from provision.journal.campaigns import CampaignStore
from provision.metrics import campaign as campaign_metrics
from provision.metrics import render
from provision.metrics import verify as verify_metrics
from tests.unit.conformance.test_reports import sample_run
from tests.unit.metrics.promparse import parse

DASHBOARD = Path(__file__).resolve().parents[3] / "docs" / "grafana" / "provision.json"
_METRIC = re.compile(r"\bprovision_[a-z0-9_]+")
_LABELS = re.compile(r"(?:by|without)\s*\(([^)]*)\)|\{([^}]*)\}")


def _panels(dash: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in dash["panels"]:
        out += [p, *p.get("panels", [])]
    return out


def _exprs(dash: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in _panels(dash) for t in p.get("targets", [])]


def _written(journal: Path) -> dict[str, set[str]]:
    """Every metric name written, with the label names its series carry."""
    with Journal(journal) as j:
        report = build_report(CampaignStore(j), "c1")
    text = render(verify_metrics.families(sample_run())) + render(campaign_metrics.families(report, False, 0.0))
    names: dict[str, set[str]] = {}
    for name, labels in parse(text):
        names.setdefault(name, set()).update(k for k, _ in labels)
    return names


def test_dashboard_uses_only_written_metrics_and_labels(journal_path: Path) -> None:
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    ids = [p["id"] for p in _panels(dash)]
    assert len(ids) == len(set(ids)) and dash["uid"] and dash["templating"]["list"][0]["name"] == "datasource"
    written = _written(journal_path)
    exprs = _exprs(dash)
    used = {m for e in exprs for m in _METRIC.findall(e)}
    assert used and used <= set(written), f"not written: {sorted(used - set(written))}"
    # both sources are on the dashboard, and each family of the verify run is
    assert any(m.startswith("provision_campaign_") for m in used)
    assert {"provision_verify_check_failing", "provision_verify_checks", "provision_verify_info"} <= used
    all_labels = set().union(*written.values())
    for e in exprs:
        for by, matchers in _LABELS.findall(e):
            names = [x.strip() for x in by.split(",")] if by else [m.split("=")[0].strip("!~ ") for m in
                                                                    matchers.split(",")]
            assert set(filter(None, names)) <= all_labels, f"{e}: label not written"


def test_dashboard_queries_parse_as_promql(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install -y prometheus; scripts/bootstrap.sh installs it)")
    exprs = _exprs(json.loads(DASHBOARD.read_text(encoding="utf-8")))
    rules = {"groups": [{"name": "dashboard", "rules": [{"record": f"provision:dashboard_query:{i}", "expr": e}
                                                        for i, e in enumerate(exprs)]}]}
    path = tmp_path / "dashboard.rules.yml"
    path.write_text(yaml.safe_dump(rules), encoding="utf-8")
    proc = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
