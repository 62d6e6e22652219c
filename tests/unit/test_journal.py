"""The journal store: schema, privacy of its files, runs/stages/actions round trips, bad files."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from provision.errors import InputError
from provision.journal import Journal, default_path
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, Request, WaveState
from provision.journal.schema import SCHEMA_VERSION


@pytest.fixture
def journal(tmp_path: Path) -> Journal:
    j = Journal(tmp_path / "state" / "provision.db")
    yield j
    j.close()


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_are_private_and_wal(journal: Journal) -> None:
    journal.start_run("bringup", "node01")
    assert _mode(journal.path) == 0o600
    assert _mode(journal.path.parent) == 0o700
    wal = journal.path.with_name(journal.path.name + "-wal")
    assert wal.exists() and _mode(wal) == 0o600
    assert journal.query("PRAGMA journal_mode")[0][0] == "wal"
    assert journal.schema_version == SCHEMA_VERSION


def test_existing_loose_file_is_tightened(tmp_path: Path) -> None:
    path = tmp_path / "loose.db"
    path.touch(mode=0o644)
    os.chmod(path, 0o644)
    Journal(path).close()
    assert _mode(path) == 0o600


def test_default_path_honours_state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "s"))
    assert default_path() == tmp_path / "s" / "provision.db"
    monkeypatch.delenv("PROVISION_STATE_DIR")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    assert default_path() == tmp_path / "home" / ".local" / "state" / "provision" / "provision.db"


def test_reopen_keeps_data_and_does_not_remigrate(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    with Journal(path) as j:
        run = j.start_run("bringup", "node01", {"stages": ["firmware"]})
        j.finish_run(run, "ok")
    with Journal(path) as j:
        record = j.run(run)
        assert record is not None and record.outcome == "ok" and record.args == {"stages": ["firmware"]}
        assert record.duration_s is not None and record.duration_s >= 0
        assert j.schema_version == SCHEMA_VERSION


def test_stages_and_actions(journal: Journal) -> None:
    run = journal.start_run("bringup", "node01")
    sid = journal.stage_started(run, "node01", "firmware")
    a1 = journal.action_started(run, "node01", "firmware", "flash", "bmc=11.02.05")
    journal.action_finished(a1, "ok", "task 3")
    journal.action_started(run, "node01", "firmware", "flash", "bios=2.1")
    journal.stage_finished(sid, "failed", "killed")
    stages = journal.stages("node01")
    assert [(s.stage, s.outcome, s.detail) for s in stages] == [("firmware", "failed", "killed")]
    assert journal.last_stage("node01") == stages[0]
    opened = journal.open_actions("node01")
    assert [(a.action, a.target) for a in opened] == [("flash", "bios=2.1")]
    assert [a.outcome for a in journal.actions("node01", "firmware")] == ["ok", None]
    assert journal.nodes() == ["node01"]
    assert journal.last_stage("node02") is None


def test_not_a_database_is_one_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_text("this is not sqlite " * 100)
    with pytest.raises(InputError, match=r"bad\.db: not a usable journal"):
        Journal(bad)


def test_directory_path_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a directory"):
        Journal(tmp_path)


def test_newer_schema_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    Journal(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION + 5}")
    db.commit()
    db.close()
    with pytest.raises(Exception, match="newer than this provision"):
        Journal(path)


def test_threads_share_one_journal(journal: Journal) -> None:
    run = journal.start_run("campaign", "c")

    def work(i: int) -> None:
        for k in range(20):
            aid = journal.action_started(run, f"n{i}", "campaign", "flash", str(k))
            journal.action_finished(aid, "ok")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = journal.query("SELECT COUNT(*), SUM(outcome = 'ok') FROM actions")[0]
    assert tuple(total) == (160, 160)
    assert journal.integrity_ok()


def test_campaign_rows(journal: Journal) -> None:
    store = CampaignStore(journal)
    store.create("c1", "/x.yml", "ab" * 32, [["n1"], ["n2", "n3"]])
    with pytest.raises(InputError, match="already exists"):
        store.create("c1", "/x.yml", "ab" * 32, [["n1"]])
    store.node_started("c1", "n1", {"bmc": "1.0"})
    store.node_flashing("c1", "n1", ["bmc"])
    store.node_flashing("c1", "n1", ["bmc", "bios"])
    store.node_started("c1", "n1", {"bmc": "2.0"})  # a resumed node keeps its first `before`
    store.node_finished("c1", "n1", NodeState.DONE, {"bmc": "2.0"})
    n1 = store.node("c1", "n1")
    assert (n1.state, n1.before, n1.after, n1.flashed) == (NodeState.DONE, {"bmc": "1.0"}, {"bmc": "2.0"},
                                                           ["bmc", "bios"])
    assert [n.node for n in store.nodes("c1", 1)] == ["n2", "n3"]
    store.wave_state("c1", 0, WaveState.ACTIVE)
    store.wave_state("c1", 0, WaveState.DONE, "ok")
    assert [(w.wave, w.state, w.gate) for w in store.waves("c1")] == [(0, WaveState.DONE, "ok"),
                                                                     (1, WaveState.PENDING, "")]
    store.request("c1", Request.PAUSE)
    assert store.pending_request("c1") is Request.PAUSE
    store.set_state("c1", CampaignState.PAUSED, "paused by request")
    record = store.get("c1")
    assert (record.state, record.request, record.ended_at) == (CampaignState.PAUSED, None, None)
    store.node_finished("c1", "n2", NodeState.FAILED, {}, "boom")
    assert store.reset_failed("c1") == 1
    assert store.node("c1", "n2").state is NodeState.PENDING
    with pytest.raises(InputError, match="not in the journal"):
        store.get("nope")
