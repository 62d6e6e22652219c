"""CLI glue: targets from the inventory narrowed by --limit; the controller liveness check."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from provision.campaign.control import controller_alive, targets
from provision.errors import InputError
from provision.journal.campaigns import CampaignRecord, CampaignState
from provision.spec import load_fleet
from tests.unit.campaign.fakes import catalog


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory):
    import shutil

    root = Path(__file__).resolve().parents[3]
    base = tmp_path_factory.mktemp("inv")
    shutil.copytree(root / "inventory", base / "inventory")
    shutil.copytree(root / "firmware", base / "firmware")
    return load_fleet(base / "inventory" / "hosts.yml")


@pytest.mark.parametrize(
    ("target_section", "limit", "expected"),
    [
        ({}, None, [f"node0{i}" for i in range(1, 9)]),
        ({"group": "ml_prod_v4"}, "node02,node05", ["node02", "node05"]),
        ({"hosts": ["node01", "node03"]}, None, ["node01", "node03"]),
        ({"group": "ml_prod_v4"}, "gpu_nodes", [f"node0{i}" for i in range(1, 9)]),
        ({}, "node0[1:4],!node03", ["node01", "node02", "node04"]),  # --limit is a host pattern, as everywhere
        ({}, "node[01-02,07]", ["node01", "node02", "node07"]),
        ({"hosts": ["node0[1:3]"], "group": "ml_prod_v4"}, "&~node0[23]", ["node02", "node03"]),
    ],
)
def test_targets(fleet, target_section: dict, limit: str | None, expected: list[str]) -> None:
    cat = catalog().model_copy(update={"targets": catalog().targets.model_validate(target_section)})
    chosen = targets(fleet, cat, limit)
    assert sorted(chosen) == expected
    assert all(t.bmc is not None for t in chosen.values())


@pytest.mark.parametrize(
    ("target_section", "limit", "message"),
    [
        ({}, "node99", "--limit 'node99': 'node99' matches no host"),
        ({}, "all,!node9", "--limit 'all,!node9': 'node9' matches no host"),
        ({"hosts": ["node01"]}, "node02", "--limit 'node02' leaves no host of 'node01'"),
        ({"group": "nope"}, None, "host pattern 'nope': 'nope' matches no host"),
    ],
)
def test_bad_targets(fleet, target_section: dict, limit: str | None, message: str) -> None:
    cat = catalog().model_copy(update={"targets": catalog().targets.model_validate(target_section)})
    with pytest.raises(InputError, match=message):
        targets(fleet, cat, limit)


def _record(pid: int | None) -> CampaignRecord:
    return CampaignRecord(name="c", source="s", digest="d", state=CampaignState.RUNNING, request=None, pid=pid,
                          reason="", waves=[], created_at=0, updated_at=0, ended_at=None)


def test_controller_alive() -> None:
    assert not controller_alive(_record(None))
    assert not controller_alive(_record(os.getpid()))  # this process is not "another controller"
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)  # provision campaign"])
    deadline = time.monotonic() + 10
    while b"provision" not in Path(f"/proc/{proc.pid}/cmdline").read_bytes():  # until exec is done
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        assert controller_alive(_record(proc.pid))
    finally:
        proc.kill()
        proc.wait()
    assert not controller_alive(_record(proc.pid))  # gone (as after kill -9)


def test_a_campaign_named_like_a_directory_is_looked_up_by_name(tmp_path, monkeypatch) -> None:
    """`campaign join bench` run where a bench/ directory exists: the name, not the directory."""
    import pytest as _pytest

    from provision.campaign import control
    from provision.errors import InputError
    from provision.journal import Journal
    from provision.journal.campaigns import CampaignStore

    monkeypatch.chdir(tmp_path)
    (tmp_path / "bench").mkdir()
    with Journal(tmp_path / "j.db") as j, _pytest.raises(InputError, match="neither a campaign file nor a campaign"):
        control.resolve(CampaignStore(j), "bench")
