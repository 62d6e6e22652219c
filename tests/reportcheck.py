"""Validators every test that writes a report or a metrics file runs on it.

- JSON reports against the published schema docs/schemas/verify-report.schema.json (jsonschema);
- JUnit XML against the Jenkins xunit plugin's junit-10.xsd (tests/fixtures/junit/) with `xmllint --schema`;
- metrics files with `promtool check metrics` (Debian's prometheus package).

xmllint and promtool are installed by scripts/bootstrap.sh; a test skips, saying which package is missing,
only where they are absent (a machine that never ran the bootstrap).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPORT_SCHEMA = ROOT / "docs" / "schemas" / "verify-report.schema.json"
JUNIT_XSD = ROOT / "tests" / "fixtures" / "junit" / "junit-10.xsd"


def report_schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(REPORT_SCHEMA.read_text(encoding="utf-8"))
    return data


def check_json_report(report: Path | dict[str, Any]) -> dict[str, Any]:
    """The report's data, after validating it against the published schema (raises on the first error)."""
    import jsonschema

    data = json.loads(report.read_text(encoding="utf-8")) if isinstance(report, Path) else report
    schema = report_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    assert not errors, "; ".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5])
    return data


def _tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (apt-get install -y {package}; scripts/bootstrap.sh installs it)")
    return path


def check_junit(path: Path) -> None:
    """`xmllint --schema junit-10.xsd --noout FILE` passes."""
    xmllint = _tool("xmllint", "libxml2-utils")
    proc = subprocess.run([xmllint, "--noout", "--schema", str(JUNIT_XSD), str(path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, f"{path} fails junit-10.xsd: {proc.stderr.strip()}"


def check_metrics(path: Path) -> None:
    """`promtool check metrics < FILE` passes, lint included (it prints nothing and exits 0)."""
    promtool = _tool("promtool", "prometheus")
    proc = subprocess.run([promtool, "check", "metrics"], stdin=path.open("rb"), capture_output=True,
                          timeout=60, check=False)
    out = (proc.stdout + proc.stderr).decode(errors="replace").strip()
    assert proc.returncode == 0 and not out, f"promtool check metrics {path}: {out}"


def _is_verify_json(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and {"level", "nodes", "verdict"} <= set(data)


def _is_junit(path: Path) -> bool:
    try:
        return b"<testsuites" in path.read_bytes()[:400]
    except OSError:
        return False


def check_written(directory: Path, depth: int = 3) -> list[Path]:
    """Validate every verify report and metrics file under `directory` (to `depth` levels); the ones checked.

    Files a test writes broken on purpose carry `.invalid` in their name. A validator whose tool is absent
    is passed over here (the dedicated tests say so by skipping).
    """
    checked = []
    for level in range(depth):
        prefix = "*/" * level
        for path in sorted(directory.glob(prefix + "*")):
            if ".invalid" in path.name or not path.is_file():
                continue
            if path.suffix == ".json" and _is_verify_json(path):
                check_json_report(path)
            elif path.suffix == ".xml" and _is_junit(path) and shutil.which("xmllint"):
                check_junit(path)
            elif path.suffix == ".prom" and shutil.which("promtool"):
                check_metrics(path)
            else:
                continue
            checked.append(path)
    return checked
