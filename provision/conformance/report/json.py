"""JSON rendering: the RunReport as plain data, plus totals per node and for the run, and the fleet by check.

The layout is versioned: `schema_version` (MAJOR.MINOR; a minor version only adds keys) and published as a
JSON Schema in docs/schemas/verify-report.schema.json, against which the tests validate every report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from provision.conformance.model import Outcome, RunReport
from provision.conformance.report.fleet import by_check, unreachable
from provision.private import write_private

SCHEMA_VERSION = "1.1"  # 1.1: nodes[].notice
# Keys that follow from the rest (dropped again by from_json).
_DERIVED_RUN = ("schema_version", "ok", "totals", "verdict", "exit_code", "checks", "unreachable")
_DERIVED_NODE = ("ok", "totals", "verdict")


def _checks(run: RunReport) -> list[dict[str, Any]]:
    """The fleet by check: counts of every outcome, and the nodes of every outcome but pass."""
    return [{
        "id": row.id, "area": row.area, "description": row.description, "worst": row.worst.value,
        "counts": {o.value: row.count(o) for o in Outcome},
        "nodes": {o.value: list(row.nodes[o]) for o in Outcome if o is not Outcome.PASS},
    } for row in by_check(run)]


def to_json(run: RunReport) -> dict[str, Any]:
    """Plain JSON-able data: schema version, provenance, level, timing, totals, the fleet by check, every check."""
    data: dict[str, Any] = {"schema_version": SCHEMA_VERSION, **run.model_dump(mode="json")}
    data["ok"] = run.ok
    data["verdict"] = run.verdict.value
    data["exit_code"] = run.exit_code
    data["totals"] = {o.value: n for o, n in run.counts().items()}
    data["unreachable"] = unreachable(run)
    data["checks"] = _checks(run)
    for node, out in zip(run.nodes, data["nodes"], strict=True):
        out["ok"] = node.ok
        out["verdict"] = node.verdict.value
        out["totals"] = {o.value: n for o, n in node.counts().items()}
    return data


def from_json(data: dict[str, Any]) -> RunReport:
    """The RunReport back from `to_json` data (derived keys dropped)."""
    plain = {k: v for k, v in data.items() if k not in _DERIVED_RUN}
    plain["nodes"] = [{k: v for k, v in n.items() if k not in _DERIVED_NODE} for n in data["nodes"]]
    return RunReport.model_validate(plain)


def write_json(run: RunReport, path: Path) -> None:
    write_private(path, json.dumps(to_json(run), indent=2) + "\n")
