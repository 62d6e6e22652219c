"""The journal on both engines (SQLite file, PostgreSQL server): one schema, one set of migrations, the same
rows read back; the PostgreSQL password never shown; bad URLs one-line errors."""

from __future__ import annotations

import threading

import pytest

from provision.errors import InputError
from provision.journal import Journal
from provision.journal.campaigns import CampaignStore, NodeState, Request
from provision.journal.configured import configured, forget_configured, record_configured
from provision.journal.dialect import postgres_ddl, to_pyformat
from provision.journal.location import Backend, resolve
from provision.journal.locks import NodeLocked, NodeLocks
from provision.journal.schema import MIGRATIONS, SCHEMA_VERSION
from provision.journal.store import JournalUnreachable
from provision.journal.wear import WearReading, readings, record_readings
from provision.redact import redact_url, scrub


def test_round_trips(backend: str | None) -> None:
    with Journal(backend) as j:
        assert j.schema_version == SCHEMA_VERSION
        run = j.start_run("bringup", "node01", {"stages": ["firmware"]})
        second = j.start_run("bringup", "node02")
        assert second == run + 1  # ids come back from INSERT on both engines
        sid = j.stage_started(run, "node01", "firmware")
        aid = j.action_started(run, "node01", "firmware", "flash", "bmc=1")
        j.action_finished(aid, "ok", "100%")  # a literal % in a parameter
        j.stage_finished(sid, "ok")
        j.finish_run(run, "ok")
    with Journal(backend) as j:  # reopened: nothing migrated twice, everything there
        record = j.run(run)
        assert record is not None and record.outcome == "ok" and record.args == {"stages": ["firmware"]}
        assert [a.detail for a in j.actions("node01")] == ["100%"]
        assert j.nodes() == ["node01"] and j.integrity_ok()


def test_campaign_rows_and_enums_as_values(backend: str | None) -> None:
    with Journal(backend) as j:
        store = CampaignStore(j)
        store.create("c1", "/x.yml", "ab" * 32, [["n1"], ["n2", "n3"]])
        with pytest.raises(InputError, match="already exists"):
            store.create("c1", "/x.yml", "ab" * 32, [["n1"]])
        store.node_started("c1", "n1", {"bmc": "1.0"})
        store.node_flashing("c1", "n1", ["bmc"])
        store.node_started("c1", "n1", {"bmc": "2.0"})
        store.node_finished("c1", "n1", NodeState.FAILED, {"bmc": "2.0"}, "boom")
        store.request("c1", Request.PAUSE)
        assert store.pending_request("c1") is Request.PAUSE
        raw = j.query("SELECT state FROM campaign_nodes WHERE node = ?", ("n1",))[0][0]
        assert raw == "failed"  # the enum's value, not its name
        assert store.reset_failed("c1") == 1
        n1 = store.node("c1", "n1")
        assert (n1.state, n1.before, n1.flashed) == (NodeState.PENDING, {"bmc": "1.0"}, ["bmc"])


def test_upserts_and_64_bit_counters(backend: str | None) -> None:
    with Journal(backend) as j:
        record_configured(j, "n1", None, "d1", {"files": ["/a"]}, "f1")
        record_configured(j, "n1", 7, "d2", {"files": ["/b"]}, "f2")  # ON CONFLICT ... DO UPDATE
        got = configured(j, "n1")
        assert got is not None and (got.run_id, got.digest, got.manifest) == (7, "d2", {"files": ["/b"]})
        forget_configured(j, "n1")
        assert configured(j, "n1") is None
        big = 40_000_000_000  # Data Units Written past 2**31 (a 30 TB drive's lifetime)
        record_readings(j, [WearReading(node="n1", device="nvme0", serial="S1", at=1.5, data_units_written=big)])
        assert [r.data_units_written for r in readings(j, "n1")] == [big]


def test_leases_across_two_connections(backend: str | None) -> None:
    with Journal(backend) as a, Journal(backend) as b:
        with NodeLocks(a).hold(["node01"], owner="bringup"):
            with pytest.raises(NodeLocked, match="node01: locked by bringup"):
                NodeLocks(b).take(["node02", "node01"], owner="campaign c1")
            assert [x.node for x in NodeLocks(b).held()] == ["node01"]  # all or none: node02 not taken
        assert NodeLocks(b).take(["node01"], owner="campaign c1")


def test_threads_race_for_one_lease_and_one_wins(backend: str | None) -> None:
    journals = [Journal(backend) for _ in range(6)]
    won: list[int] = []
    barrier = threading.Barrier(len(journals))

    def take(i: int) -> None:
        barrier.wait()
        try:
            NodeLocks(journals[i]).take(["node01"], owner=f"c{i}")
            won.append(i)
        except NodeLocked:
            pass

    threads = [threading.Thread(target=take, args=(i,)) for i in range(len(journals))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for j in journals:
        j.close()
    assert len(won) == 1


def test_read_only_refuses_an_empty_journal_and_writes(backend: str | None) -> None:
    with pytest.raises(InputError, match=r"empty|no journal there"):
        Journal(backend, read_only=True)
    Journal(backend).close()
    with Journal(backend, read_only=True) as j:
        assert j.schema_version == SCHEMA_VERSION
        with pytest.raises(Exception, match=r"(?i)read.only|readonly"):
            j.start_run("bringup", "n1")


# -- PostgreSQL only --------------------------------------------------------------------------------------
@pytest.mark.postgres
def test_two_controllers_migrating_at_once_apply_each_migration_once(pg_url: str) -> None:
    out: list[int] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            with Journal() as j:
                out.append(j.schema_version)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and out == [SCHEMA_VERSION] * 4


@pytest.mark.postgres
def test_a_wrong_password_is_one_error_without_it(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_JOURNAL_PASSWORD", "not-the-password-xyz")
    with pytest.raises(JournalUnreachable) as caught:
        Journal()
    text = str(caught.value)
    assert "cannot connect" in text and "127.0.0.1" in text
    assert "not-the-password-xyz" not in text
    assert "not-the-password-xyz" not in scrub("login with not-the-password-xyz")  # registered as a secret


@pytest.mark.postgres
def test_a_server_gone_is_journal_unreachable(pg_url: str, pg_cluster: object) -> None:
    j = Journal()
    pid = j.query("SELECT pg_backend_pid()")[0][0]
    with pg_cluster.admin() as admin:  # type: ignore[attr-defined]
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(JournalUnreachable, match="lost the journal database"):
        j.start_run("campaign", "c1")
    assert j.start_run("campaign", "c1") > 0  # the next call connects again
    j.close()


# -- the dialect layer and the location, as tables ----------------------------------------------------------
@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://u:s3cret@db:5432/prov", "postgresql://u:<redacted>@db:5432/prov"),
    ("postgresql://u@db/prov?password=s3cret&sslmode=require",
     "postgresql://u@db/prov?password=<redacted>&sslmode=require"),
    ("postgres://db/prov", "postgres://db/prov"),
])
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize(("url", "error"), [
    ("mysql://db/prov", "expected postgresql://"),
    ("postgresql://db:port/prov", "port is not a number"),
    ("postgresql://db", "no database name"),
    ("postgresql://u@/prov", "no host"),
])
def test_bad_url_is_one_input_error(url: str, error: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_JOURNAL_URL", url)
    with pytest.raises(InputError, match=f"PROVISION_JOURNAL_URL=.*{error}"):
        resolve(None)


@pytest.mark.parametrize("url", ["postgresql:///prov?host=/run/postgresql", "postgres://db?dbname=prov",
                                 "postgresql://u@db:5433/prov?sslmode=require"])
def test_good_urls_resolve(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_JOURNAL_URL", url)
    assert resolve(None).backend is Backend.POSTGRESQL


def test_location_order(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    assert resolve(None).backend is Backend.SQLITE
    monkeypatch.setenv("PROVISION_JOURNAL_URL", "postgresql://u:pw123@db/prov")
    assert resolve(None).backend is Backend.POSTGRESQL and resolve(None).shown == "postgresql://u:<redacted>@db/prov"
    assert resolve("/x/j.db").backend is Backend.SQLITE  # an explicit --journal file wins
    with pytest.raises(InputError, match="--journal takes a SQLite file"):
        resolve("postgresql://u@db/prov")
    assert "pw123" not in scrub("postgresql://u:pw123@db/prov")


def test_password_file(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    from pathlib import Path

    secret = Path(str(tmp_path)) / "pw"
    secret.write_text("from-a-file-123\n")
    monkeypatch.setenv("PROVISION_JOURNAL_URL", "postgresql://u@db/prov")
    monkeypatch.setenv("PROVISION_JOURNAL_PASSWORD_FILE", str(secret))
    location = resolve(None)
    assert location.password == "from-a-file-123" and "from-a-file" not in repr(location)
    secret.unlink()
    with pytest.raises(InputError, match=r"PROVISION_JOURNAL_PASSWORD_FILE=.*cannot read"):
        resolve(None)


def test_dialect_translation() -> None:
    assert to_pyformat("UPDATE t SET a = ? WHERE b LIKE '5%' AND c = ?") == (
        "UPDATE t SET a = %s WHERE b LIKE '5%%' AND c = %s")
    ddl = postgres_ddl(MIGRATIONS[0])
    assert "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY" in ddl
    assert "started_at DOUBLE PRECISION NOT NULL" in ddl and "INTEGER" not in ddl and " REAL" not in ddl
