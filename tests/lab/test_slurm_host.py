"""The lab's Slurm on the host alone (no twin): munged + slurmctld start, answer, and are gone afterwards,
also when slurmctld cannot start; the controller hook drains and resumes a node slurmctld knows."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from provision.conformance.model import CheckResult, NodeReport, Outcome
from provision.errors import LabError
from provision.lab import slurm as labslurm
from provision.scheduler.slurm import ActionKind, parse_node, sync
from provision.spec.slurm import SlurmSettings

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="munged and slurmctld run as root here"),
    pytest.mark.skipif(bool(labslurm.missing_programs()), reason="needs slurm-wlm and munge (scripts/bootstrap.sh)"),
]

NODE = labslurm.LabNode("node01", "127.0.0.2", Path("/nonexistent"))


def alive(pids: list[int]) -> list[int]:
    return [p for p in pids if Path(f"/proc/{p}").exists() and "zombie" not in _state(p)]


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return "zombie"


def test_controller_answers_drains_resumes_and_is_gone_after(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    failing = NodeReport(node="node01", profile="p", results=(CheckResult(
        node="node01", id="gpu.2.xid", area="gpu", description="d", expected="e", found="f", outcome=Outcome.FAIL),))
    with labslurm.slurm_lab(tmp_path / "slurm", [NODE], "127.0.0.1") as lab:
        pids = [p.pid for p in lab.procs]
        assert len(alive(pids)) == 2
        monkeypatch.setenv("SLURM_CONF", str(lab.conf))
        settings = SlurmSettings(drain_on_fail=True, scontrol=shutil.which("scontrol") or "scontrol")
        assert sync(failing, settings).kind is ActionKind.DRAIN
        shown = parse_node("node01", lab.run("scontrol", "-o", "show", "node", "node01"))
        assert shown.drained and shown.reason == "provision: gpu.2.xid"
        # never registered: slurmctld refuses the resume but drops DRAIN; the second look sees that, done
        healthy = failing.model_copy(update={"results": ()})
        assert sync(healthy, settings).kind is ActionKind.RESUME
        assert not parse_node("node01", lab.run("scontrol", "-o", "show", "node", "node01")).drained
    assert alive(pids) == []
    assert "munge.key" in {p.name for p in (tmp_path / "slurm").iterdir()}  # under the test's own directory


def test_a_controller_that_cannot_start_leaves_nothing_running(tmp_path: Path) -> None:
    bad = "SelectType=select/nonesuch\n"
    with pytest.raises(LabError, match="slurmctld"), labslurm.slurm_lab(tmp_path / "slurm", [NODE], "127.0.0.1",
                                                                         extra_conf=bad):
        pytest.fail("slurmctld started with an unknown select plugin")
    assert running_under(tmp_path) == []


def running_under(path: Path) -> list[str]:
    """Command lines of live processes that name `path` (munged's and slurmctld's name their files there)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(path) in cmd and int(proc.name) != os.getpid() and "zombie" not in _state(int(proc.name)):
            found.append(cmd)
    return found
