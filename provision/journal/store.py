"""The journal store: one SQLite file in WAL mode (the default), or one PostgreSQL database that
several controllers share (provision.journal.location says which); safe to kill at any moment.

Every write is one transaction (committed before the call returns), so a kill -9 leaves
the last committed state and nothing half-written. One connection is shared by the
threads of a process behind a lock; other processes (e.g. `campaign pause`) may write at
the same time (SQLite: WAL plus a busy timeout; PostgreSQL: its own concurrency). What differs
between the two engines is in provision.journal.dialect, and nowhere else.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import quote

from provision.errors import InputError, ProvisionError
from provision.journal.dialect import Connection, Dialect, PgConnection, PostgresDialect, SqliteDialect
from provision.journal.location import Backend, Location, resolve
from provision.journal.paths import ENV_STATE_DIR, prepare
from provision.journal.records import ActionRecord, RunRecord, StageRecord
from provision.journal.schema import MIGRATIONS, SCHEMA_VERSION
from provision.redact import scrub

BUSY_TIMEOUT_MS = 15000
CONNECT_TIMEOUT_S = 10


class JournalError(ProvisionError):
    """The journal could not be read or written."""


class JournalUnreachable(JournalError):
    """The journal's database server cannot be reached (connection lost or refused)."""


class Journal:
    """Runs, node stages and applied actions; campaigns extend it (provision.journal.campaigns)."""

    def __init__(self, path: Path | str | Location | None = None, *, read_only: bool = False) -> None:
        """Open (and create, migrate) the journal; with `read_only`, open an existing one as it is.

        `path` is a SQLite file, or a Location resolved already (the CLI's, with the inventory's setting);
        None is PROVISION_JOURNAL_URL's PostgreSQL database when set, else the
        default file. Read-only is SQLite's `mode=ro` URI (nothing created, nothing written) or a PostgreSQL
        session whose transactions are read only; a missing journal, or one this provision would have to
        migrate, is an InputError naming it.
        """
        self.location: Location = resolve(path)
        self.where = self.location.shown
        """The journal as messages name it: the file, or the URL with its password masked."""
        self.read_only = read_only
        self._lock = threading.RLock()
        self.dialect: Dialect
        if self.location.backend is Backend.POSTGRESQL:
            self.path: Path | None = None
            self.dialect = PostgresDialect()
            self._db: Connection = self._connect_postgres()
            if read_only:
                self._check_readable()
            else:
                self._migrate()
            return
        assert self.location.path is not None
        self.path = self.location.path
        self.dialect = SqliteDialect()
        if read_only:
            self._db = _connect_read_only(self.path)
            self._check_readable()
            return
        prepare(self.path)
        try:
            db = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            db.row_factory = sqlite3.Row
            self._db = db
            self._pragmas()
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{self.path}: not a usable journal: {exc}") from None

    @property
    def backend(self) -> Backend:
        return self.location.backend

    def _connect_postgres(self) -> PgConnection:
        try:
            import psycopg
        except ImportError:
            raise InputError(f"{self.where}: a PostgreSQL journal needs psycopg: install provision[postgres]") from None
        try:
            conn = psycopg.connect(self.location.url or "", password=self.location.password, autocommit=True,
                                   connect_timeout=CONNECT_TIMEOUT_S, application_name="provision")
            if self.read_only:
                conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
        except psycopg.Error as exc:
            reason = scrub(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
            raise JournalUnreachable(f"{self.where}: cannot connect to the journal: {reason}") from None
        return PgConnection(conn)

    def _check_readable(self) -> None:
        try:
            version = self.dialect.version(self._db)
        except self.dialect.errors as exc:
            self._db.close()
            raise InputError(f"{self.where}: not a usable journal: {exc}") from None
        if version != SCHEMA_VERSION:
            self._db.close()
            if version > SCHEMA_VERSION:
                raise JournalError(f"{self.where}: journal schema {version} is newer than this provision "
                                   f"({SCHEMA_VERSION})")
            what = "empty (nothing recorded yet)" if version == 0 else f"at schema {version} of {SCHEMA_VERSION}"
            raise InputError(f"{self.where}: journal is {what}; a bring-up or campaign brings it up to date")

    # -- lifecycle ----------------------------------------------------------------------
    def _pragmas(self) -> None:
        mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise JournalError(f"{self.path}: cannot switch the journal to WAL mode (got {mode})")
        # NORMAL in WAL mode: a commit survives the process being killed at any moment (the WAL is
        # written before COMMIT returns); only an OS crash may lose the last commits, which costs
        # nothing here since every campaign/bring-up decision re-reads the BMCs. FULL would fsync
        # every commit (~7 ms each on this machine) under the lock shared by hundreds of workers.
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")

    def _migrate(self) -> None:
        """Apply the migrations not yet applied, in one transaction under the writer lock (on PostgreSQL,
        two controllers starting at once: the second finds the schema up to date)."""
        with self.transaction() as db:
            version = self.dialect.version(db)
            if version > SCHEMA_VERSION:
                raise JournalError(
                    f"{self.where}: journal schema {version} is newer than this provision ({SCHEMA_VERSION})"
                )
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in _statements(self.dialect.ddl(script)):
                    db.execute(statement)
                self.dialect.set_version(db, number)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        with self._lock:
            return self.dialect.version(self._db)

    # -- primitives -----------------------------------------------------------------------
    def _connection(self) -> Connection:
        """The connection; a PostgreSQL one lost since the last call is opened again (once per call)."""
        if isinstance(self._db, PgConnection) and self._db.broken:
            self._db = self._connect_postgres()
        return self._db

    def _unreachable(self, exc: BaseException) -> JournalUnreachable:
        return JournalUnreachable(f"{self.where}: lost the journal database: {scrub(str(exc).strip())}")

    @contextmanager
    def transaction(self, *, exclusive: bool = True) -> Iterator[Any]:
        """One transaction under the process lock; rolled back on any error.

        `exclusive` (the default) is SQLite's BEGIN IMMEDIATE: one writer at a time, so what the block
        read is still true when it writes. Without it (PostgreSQL only; SQLite is always exclusive) the block
        takes its own row locks (SELECT ... FOR UPDATE [SKIP LOCKED], provision.journal.claims)."""
        with self._lock:
            try:
                db = self._connection()
                self.dialect.begin(db, exclusive=exclusive)
            except self.dialect.lost as exc:
                raise self._unreachable(exc) from None
            try:
                yield db
            except BaseException as exc:
                with suppress(*self.dialect.errors):  # a connection gone: the server rolled back
                    db.execute("ROLLBACK")
                if isinstance(exc, self.dialect.lost):
                    raise self._unreachable(exc) from None
                raise
            try:
                db.execute("COMMIT")
            except self.dialect.lost as exc:
                raise self._unreachable(exc) from None

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        """One statement in its own transaction (autocommit: one call, where BEGIN ... COMMIT took three,
        each giving up the GIL with the lock held); returns the new row's id for an INSERT."""
        with self._lock:
            try:
                cur = self._connection().execute(sql, params)
            except self.dialect.lost as exc:
                raise self._unreachable(exc) from None
            return int(cur.lastrowid or 0)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Rows read by name (dict(row)) or position (row[0])."""
        with self._lock:
            try:
                return list(self._connection().execute(sql, params).fetchall())
            except self.dialect.lost as exc:
                raise self._unreachable(exc) from None

    def integrity_ok(self) -> bool:
        if self.backend is Backend.POSTGRESQL:  # the server keeps its own integrity; reading works or raises
            return self.schema_version == SCHEMA_VERSION
        return str(self.query("PRAGMA integrity_check")[0][0]) == "ok"

    # -- runs -------------------------------------------------------------------------------
    def start_run(self, kind: str, target: str, args: dict[str, Any] | None = None) -> int:
        return self.execute(
            "INSERT INTO runs(kind, target, args, pid, started_at) VALUES (?, ?, ?, ?, ?)",
            (kind, target, json.dumps(args or {}, sort_keys=True), os.getpid(), time.time()),
        )

    def finish_run(self, run_id: int, outcome: str) -> None:
        self.execute("UPDATE runs SET ended_at = ?, outcome = ? WHERE id = ?", (time.time(), outcome, run_id))

    def run(self, run_id: int) -> RunRecord | None:
        rows = self.query("SELECT * FROM runs WHERE id = ?", (run_id,))
        return _run(rows[0]) if rows else None

    def runs(self, kind: str | None = None, limit: int = 50) -> list[RunRecord]:
        if kind is None:
            rows = self.query("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,))
        else:
            rows = self.query("SELECT * FROM runs WHERE kind = ? ORDER BY id DESC LIMIT ?", (kind, limit))
        return [_run(r) for r in rows]

    # -- node stages -----------------------------------------------------------------------------
    def stage_started(self, run_id: int, node: str, stage: str) -> int:
        return self.execute(
            "INSERT INTO node_stages(run_id, node, stage, started_at) VALUES (?, ?, ?, ?)",
            (run_id, node, stage, time.time()),
        )

    def stage_finished(self, stage_id: int, outcome: str, detail: str = "") -> None:
        self.execute(
            "UPDATE node_stages SET ended_at = ?, outcome = ?, detail = ? WHERE id = ?",
            (time.time(), outcome, detail, stage_id),
        )

    def stages(self, node: str) -> list[StageRecord]:
        rows = self.query("SELECT * FROM node_stages WHERE node = ? ORDER BY id", (node,))
        return [StageRecord(**dict(r)) for r in rows]

    def last_stage(self, node: str) -> StageRecord | None:
        rows = self.query("SELECT * FROM node_stages WHERE node = ? ORDER BY id DESC LIMIT 1", (node,))
        return StageRecord(**dict(rows[0])) if rows else None

    def nodes(self) -> list[str]:
        rows = self.query("SELECT DISTINCT node FROM node_stages UNION SELECT DISTINCT node FROM actions")
        return sorted(str(r[0]) for r in rows)

    # -- actions (side effects) -------------------------------------------------------------------
    def action_started(self, run_id: int, node: str, stage: str, action: str, target: str = "") -> int:
        """Record intent before a side effect, so a crash leaves an open action to reconcile."""
        return self.execute(
            "INSERT INTO actions(run_id, node, stage, action, target, started_at) VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, node, stage, action, target, time.time()),
        )

    def action_finished(self, action_id: int, outcome: str, detail: str = "") -> None:
        self.execute(
            "UPDATE actions SET ended_at = ?, outcome = ?, detail = ? WHERE id = ?",
            (time.time(), outcome, detail, action_id),
        )

    def actions(self, node: str, stage: str | None = None) -> list[ActionRecord]:
        if stage is None:
            rows = self.query("SELECT * FROM actions WHERE node = ? ORDER BY id", (node,))
        else:
            rows = self.query("SELECT * FROM actions WHERE node = ? AND stage = ? ORDER BY id", (node, stage))
        return [ActionRecord(**dict(r)) for r in rows]

    def open_actions(self, node: str) -> list[ActionRecord]:
        return [a for a in self.actions(node) if a.open]


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """The journal at `path` opened with SQLite's `mode=ro`: never created, never written."""
    if path.is_dir():
        raise InputError(f"{path}: journal path is a directory, expected a database file")
    if not path.is_file():
        raise InputError(f"{path}: no journal there (nothing has been recorded with this --journal or "
                         f"{ENV_STATE_DIR}); read-only commands never create one")
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                             check_same_thread=False)
    except sqlite3.DatabaseError as exc:
        raise InputError(f"{path}: cannot open the journal read-only: {exc}") from None
    db.row_factory = sqlite3.Row
    return db


def _run(row: Any) -> RunRecord:
    data = dict(row)
    data["args"] = json.loads(data["args"])
    return RunRecord(**data)


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
