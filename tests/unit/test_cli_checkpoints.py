"""`provision checkpoints`: snapshots and last scrub per node, JSON and plain, exit 1 when a node is unreadable."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from provision.cli import checkpoints as cli_checkpoints
from provision.cli import main
from provision.conformance.facts import GatherError, NodeFacts, Probe, Section

NOW = int(time.time())
STATUS = ("  pool: scratch\n state: ONLINE\n  scan: scrub repaired 0B in 00:12:41 with 0 errors on "
          "Sun Nov 29 00:36:42 2026\nconfig:\n\n\tNAME        STATE     READ WRITE CKSUM\n"
          "\tscratch     ONLINE       0     0     0\n\t  nvme2n1   ONLINE       0     0     0\n\n"
          "errors: No known data errors\n")


def _fake_gather(node: str, probes: Sequence[Probe], run: object) -> NodeFacts:
    if node == "node02":
        raise GatherError(f"{node}: ssh root@node02:22 failed: Connection refused")
    out = {"node_clock": f"{NOW}\n", "zpool_status_utc": STATUS,
           "zfs_snapshots": f"scratch@autosnap_2026-12-02_02:00:01_hourly\t{NOW - 600}\nscratch@manual\t{NOW - 7200}\n"}
    assert {p.name for p in probes} == set(out)
    return NodeFacts(node=node, sections={k: Section(name=k, rc=0, stdout=v, stderr="") for k, v in out.items()})


@pytest.fixture(autouse=True)
def _no_ssh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_checkpoints, "gather", _fake_gather)
    monkeypatch.setattr(cli_checkpoints, "ssh_runner_for", lambda level: lambda host: None)


def test_json_lists_snapshots_newest_first_and_the_scrub(capsys: pytest.CaptureFixture[str],
                                                        inventory_copy: Path) -> None:
    assert main(["checkpoints", "node01", "-i", str(inventory_copy), "--json"]) == 0
    (node,) = json.loads(capsys.readouterr().out)["nodes"]
    assert [s["name"] for s in node["snapshots"]] == ["scratch@autosnap_2026-12-02_02:00:01_hourly", "scratch@manual"]
    assert [s["age_s"] for s in node["snapshots"]] == [600, 7200]
    assert node["scrub"]["state"] == "finished" and node["scrub"]["errors"] == 0


def test_unreadable_node_is_shown_and_exits_1(capsys: pytest.CaptureFixture[str], inventory_copy: Path) -> None:
    code = main(["checkpoints", "node01", "node02", "-i", str(inventory_copy), "--output", "plain"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "node01\tscratch@autosnap_2026-12-02_02:00:01_hourly\thourly\t0h10m" in out
    assert "node01\tscratch\tscrub finished\t2026-11-29 00:36:42 UTC\t0" in out
    assert "node02" in out and "Connection refused" in err and "node02: node02:" not in err
