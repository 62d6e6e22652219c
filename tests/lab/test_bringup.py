"""End-to-end bring-up on the lab: 2 twins from a deliberately wrong state to every check green,
one host reset per node, a second run that does nothing, and resume after kill -9 at several points.

The lab's BMCs start at the capture's old firmware and wrong BIOS; the twins start with no pinned
stack (an older driver from the factory image). Only the hardware is simulated.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from provision.journal import Journal
from provision.lab import manager
from provision.lab.state import LabState
from provision.redfish.ops import sel
from provision.redfish.ops.session import node_facts, open_endpoint, options_for
from provision.spec import load_fleet

pytestmark = [pytest.mark.lab, pytest.mark.twins]

ROOT = Path(__file__).resolve().parents[2]


TWIN_LAB_NODES = 3


def _bringup(lab: LabState, journal: Path, *args: str, failpoint: str = "") -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "provision.cli", "bringup", *args, "-i", str(lab.inventory),
           "--journal", str(journal), "--poll-seconds", "0.2", "--log-dir", str(journal.parent / "logs"), "--json"]
    env = {**os.environ, "PROVISION_FAILPOINT": failpoint} if failpoint else None
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)


def _finish(proc: subprocess.Popen[str], timeout: float = 900) -> dict:  # type: ignore[type-arg]
    out, err = proc.communicate(timeout=timeout)
    assert out.strip(), f"no JSON summary; stderr: {err[-2000:]}"
    return json.loads(out)


def _sel_messages(lab: LabState, node: str) -> list[str]:
    host = load_fleet(lab.inventory).hosts[node]
    with open_endpoint(options_for(node, host.bmc)) as conn:
        return [e.message for e in sel.read(node_facts(conn))]


def _flashes(messages: list[str]) -> Counter[str]:
    """Firmware sends per component, as the simulated BMC logged them."""
    count: Counter[str] = Counter()
    for m in messages:
        if " staged; applies at next host reset" in m:
            count[m.split()[0]] += 1
        elif m.startswith("Firmware bmc updated"):
            count["bmc"] += 1
    return count


def _sim_log_end(lab: LabState) -> int:
    path = lab.lab_dir / manager.SIM_LOG
    return path.stat().st_size if path.exists() else 0


def _sessions_since(lab: LabState, offset: int) -> tuple[Counter[str], Counter[str]]:
    """Session logins and logouts per node the simulator logged after byte `offset` of its event log."""
    with (lab.lab_dir / manager.SIM_LOG).open() as f:
        f.seek(offset)
        events = [json.loads(line) for line in f.read().splitlines() if line.startswith("{")]
    logins = Counter(e["node"] for e in events if e.get("event") == "login")
    return logins, Counter(e["node"] for e in events if e.get("event") == "logout")


def test_end_to_end_two_nodes_then_nothing_to_do(twin_lab: LabState, tmp_path: Path) -> None:
    journal = tmp_path / "journal.db"
    mark = _sim_log_end(twin_lab)
    summary = _finish(_bringup(twin_lab, journal, "node01", "node02", "--concurrency", "2"))
    logins, logouts = _sessions_since(twin_lab, mark)  # read before this test's own SEL reads log in
    assert summary["ok"], json.dumps(summary, indent=1)[-4000:]
    for node in summary["nodes"]:
        outcomes = {s["stage"]: s["outcome"] for s in node["stages"]}
        assert outcomes["firmware"] == "applied" and outcomes["bios"] == "applied"
        assert outcomes["reset"] == "applied" and outcomes["configure"] == "applied"
        assert outcomes["verify"] == "converged"
    with Journal(journal) as jr:
        for node in ("node01", "node02"):
            resets = [a for a in jr.actions(node) if a.action == "host-reset"]
            assert len(resets) == 1, f"{node}: {len(resets)} host resets for firmware + BIOS"
    for node in ("node01", "node02"):
        messages = _sel_messages(twin_lab, node)
        assert sum(m.startswith("Host reset requested") for m in messages) == 1
        assert set(_flashes(messages).values()) == {1}
        # One session per node for the whole run, verify's BMC checks included: logged out once, at the
        # end. The connector logs in again only where the BMC ended the session: a BMC reset (its own
        # firmware flashed), or the idle SessionTimeout (1800 s simulated, 30 s at speed 60, passes
        # during configure); a second session opened by a stage would be logged out on its own.
        bmc_resets = sum(m.startswith("BMC reset") for m in messages)
        assert logouts[node] == 1, f"{node}: {logouts[node]} sessions logged out in one run"
        assert 1 + bmc_resets <= logins[node] <= 2 + bmc_resets, f"{node}: {logins[node]} logins"
    mark = _sim_log_end(twin_lab)
    again = _finish(_bringup(twin_lab, journal, "node01", "node02", "--concurrency", "2"))
    assert again["ok"]
    logins, logouts = _sessions_since(twin_lab, mark)
    assert logouts == Counter({"node01": 1, "node02": 1}), logouts  # nothing to do: still one session each
    assert all(1 <= logins[n] <= 2 for n in ("node01", "node02")), logins  # + one after an idle timeout
    assert all(not n["changed"] for n in again["nodes"]), json.dumps(again, indent=1)[-3000:]


def test_resume_after_kill_9_at_several_points(twin_lab: LabState, tmp_path: Path) -> None:
    """Kill the controller with SIGKILL at exact points (provision/bringup/failpoint.py): after a firmware
    image was staged, the BIOS written and the host reset, each before its outcome reached the journal, and
    as Ansible was about to run; resume each time: the end state is converged, every firmware component
    was sent once, and the host was reset once."""
    node, journal = "node03", tmp_path / "journal.db"
    for point in ("stage-firmware:after", "bios-write:after", "host-reset:after", "ansible:before"):
        proc = _bringup(twin_lab, journal, node, failpoint=point)
        _out, err = proc.communicate(timeout=900)
        with contextlib.suppress(ProcessLookupError):  # children it left behind (none expected)
            os.killpg(proc.pid, signal.SIGKILL)
        assert proc.returncode == -signal.SIGKILL, f"{point}: not killed there (exit {proc.returncode}): {err[-1500:]}"
    summary = _finish(_bringup(twin_lab, journal, node))
    assert summary["ok"], json.dumps(summary, indent=1)[-4000:]
    messages = _sel_messages(twin_lab, node)
    counts = _flashes(messages)
    assert counts and set(counts.values()) == {1}, counts
    assert sum(m.startswith("Host reset requested") for m in messages) == 1
    with Journal(journal) as jr:
        open_actions = jr.open_actions(node)
    assert {a.action for a in open_actions} <= {"stage-firmware", "bios-write", "host-reset", "ansible"}
    final = _finish(_bringup(twin_lab, journal, node))
    assert final["ok"] and not final["nodes"][0]["changed"]
