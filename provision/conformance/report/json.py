"""JSON rendering: the RunReport as plain data, plus totals per node and for the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from provision.conformance.model import RunReport
from provision.private import write_private


def to_json(run: RunReport) -> dict[str, Any]:
    """Plain JSON-able data: level, timing, totals, and per node every check."""
    data = run.model_dump(mode="json")
    data["ok"] = run.ok
    data["verdict"] = run.verdict.value
    data["exit_code"] = run.exit_code
    data["totals"] = {o.value: n for o, n in run.counts().items()}
    for node, out in zip(run.nodes, data["nodes"], strict=True):
        out["ok"] = node.ok
        out["verdict"] = node.verdict.value
        out["totals"] = {o.value: n for o, n in node.counts().items()}
    return data


def from_json(data: dict[str, Any]) -> RunReport:
    """The RunReport back from `to_json` data (derived keys dropped)."""
    derived = ("ok", "totals", "verdict", "exit_code")
    plain = {k: v for k, v in data.items() if k not in derived}
    plain["nodes"] = [{k: v for k, v in n.items() if k not in derived} for n in data["nodes"]]
    return RunReport.model_validate(plain)


def write_json(run: RunReport, path: Path) -> None:
    write_private(path, json.dumps(to_json(run), indent=2) + "\n")
