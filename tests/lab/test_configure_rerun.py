"""The converged re-run on a twin: the configure stage skips check mode only while the node is as the last
apply left it. A managed file changed on the node sends it through check mode, which finds and repairs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from provision.journal import Journal
from provision.journal.configured import configured
from provision.lab.state import LabState
from provision.remote.ssh import run
from provision.spec import load_fleet

pytestmark = [pytest.mark.lab, pytest.mark.twins]

ROOT = Path(__file__).resolve().parents[2]
MANAGED = "/etc/sysctl.d/90-provision.conf"  # written by roles/base (template)


def _configure(lab: LabState, journal: Path, *args: str) -> dict[str, str]:
    cmd = [sys.executable, "-m", "provision.cli", "bringup", "node01", "--only", "configure", *args,
           "-i", str(lab.inventory), "--journal", str(journal), "--log-dir", str(journal.parent / "logs"), "--json"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert proc.stdout.strip(), proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["ok"], json.dumps(summary, indent=1)[-3000:]
    stage = summary["nodes"][0]["stages"][0]
    return {"outcome": stage["outcome"], "note": stage["note"]}


def test_shortcut_while_unchanged_check_mode_after_drift(twin_lab: LabState, tmp_path: Path) -> None:
    journal = tmp_path / "journal.db"
    assert _configure(twin_lab, journal)["outcome"] == "applied"  # never configured: the full run
    with Journal(journal) as jr:
        record = configured(jr, "node01")
    assert record is not None and MANAGED in record.manifest["file"], record
    again = _configure(twin_lab, journal)
    assert again["outcome"] == "converged" and "unchanged since run" in again["note"], again
    host = load_fleet(twin_lab.inventory).hosts["node01"]
    assert run(host, f"echo 'vm.swappiness = 99' >> {MANAGED}").ok
    drifted = _configure(twin_lab, journal)  # the fingerprint differs: check mode finds the file, apply repairs it
    assert drifted["outcome"] == "applied" and "the node changed since run" in drifted["note"], drifted
    assert "vm.swappiness = 99" not in run(host, f"cat {MANAGED}").stdout
    final = _configure(twin_lab, journal)
    assert final["outcome"] == "converged" and "unchanged since run" in final["note"], final
