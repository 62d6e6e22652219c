"""The journal store: one SQLite file in WAL mode, safe to kill at any moment.

Every write is one transaction (committed before the call returns), so a kill -9 leaves
the last committed state and nothing half-written. One connection is shared by the
threads of a process behind a lock; other processes (e.g. `campaign pause`) may write at
the same time (WAL plus a busy timeout).
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from provision.errors import InputError, ProvisionError
from provision.journal.paths import ENV_STATE_DIR, default_path, prepare
from provision.journal.records import ActionRecord, RunRecord, StageRecord
from provision.journal.schema import MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_MS = 15000


class JournalError(ProvisionError):
    """The journal could not be read or written."""


class Journal:
    """Runs, node stages and applied actions; campaigns extend it (provision.journal.campaigns)."""

    def __init__(self, path: Path | None = None, *, read_only: bool = False) -> None:
        """Open (and create, migrate) the journal; with `read_only`, open an existing one as it is.

        Read-only is SQLite's `mode=ro` URI: nothing is created (no file, no directory) and nothing is
        written; a missing journal, or one this provision would have to migrate, is an InputError naming it.
        """
        self.path = Path(path) if path is not None else default_path()
        self.read_only = read_only
        self._lock = threading.RLock()
        if read_only:
            self._db = _connect_read_only(self.path)
            self._check_readable()
            return
        prepare(self.path)
        try:
            self._db = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            self._db.row_factory = sqlite3.Row
            self._pragmas()
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{self.path}: not a usable journal: {exc}") from None

    def _check_readable(self) -> None:
        try:
            version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise InputError(f"{self.path}: not a usable journal: {exc}") from None
        if version != SCHEMA_VERSION:
            self._db.close()
            if version > SCHEMA_VERSION:
                raise JournalError(f"{self.path}: journal schema {version} is newer than this provision "
                                   f"({SCHEMA_VERSION})")
            what = "empty (nothing recorded yet)" if version == 0 else f"at schema {version} of {SCHEMA_VERSION}"
            raise InputError(f"{self.path}: journal is {what}; a bring-up or campaign brings it up to date")

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
        with self.transaction() as db:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise JournalError(
                    f"{self.path}: journal schema {version} is newer than this provision ({SCHEMA_VERSION})"
                )
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                for statement in _statements(script):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version={number}")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def schema_version(self) -> int:
        return int(self.query("PRAGMA user_version")[0][0])

    # -- primitives -----------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT under the process lock; rolled back on any error."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        """One statement in its own transaction (SQLite's autocommit: one call, where BEGIN ...
        COMMIT took three, each giving up the GIL with the lock held); returns lastrowid."""
        with self._lock:
            cur = self._db.execute(sql, params)
            return int(cur.lastrowid or 0)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return list(self._db.execute(sql, params).fetchall())

    def integrity_ok(self) -> bool:
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


def _run(row: sqlite3.Row) -> RunRecord:
    data = dict(row)
    data["args"] = json.loads(data["args"])
    return RunRecord(**data)


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]
