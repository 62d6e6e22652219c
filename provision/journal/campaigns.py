"""Campaign state in the journal: the campaign, its waves and each node's progress."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from provision.errors import InputError
from provision.journal.store import Journal


class CampaignState(StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    HALTED = "halted"
    ABORTED = "aborted"
    DONE = "done"


class Request(StrEnum):
    """Asked of a running controller by another process (e.g. `campaign pause`)."""

    PAUSE = "pause"
    ABORT = "abort"
    HALT = "halt"


class NodeState(StrEnum):
    PENDING = "pending"
    ACTIVE = "active"
    DONE = "done"
    FAILED = "failed"


class WaveState(StrEnum):
    PENDING = "pending"
    ACTIVE = "active"
    DONE = "done"
    GATE_FAILED = "gate_failed"


FINAL_CAMPAIGN_STATES = frozenset({CampaignState.ABORTED, CampaignState.DONE})


class CampaignRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    source: str
    digest: str
    state: CampaignState
    request: Request | None
    pid: int | None
    reason: str
    waves: list[list[str]]
    created_at: float
    updated_at: float
    ended_at: float | None
    epoch: int = 0
    """How many times the campaign was started or resumed (halt thresholds count from the latest)."""
    unplanned: list[str] = []
    """Targets not read yet: the campaign was started with its canary wave planned, and these are read while it
    runs; their waves are added after the canary's (CampaignStore.add_waves)."""

    @property
    def planned(self) -> int:
        """The nodes in the campaign's waves."""
        return sum(len(w) for w in self.waves)


class SinceStart(BaseModel):
    """The nodes whose turn ended since the campaign's latest start/resume (what halt thresholds count)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    failed: int
    finished: int
    last_failed: str
    """The node that failed most recently ('' none)."""


def since_start(query: Callable[[str, tuple[Any, ...]], list[Any]], name: str) -> SinceStart:
    """Counted by `query` (SQL, parameters -> rows): the journal's, or one inside a transaction
    (provision.journal.claims decides with it in the transaction that claims nodes)."""
    mine = " FROM campaign_nodes n JOIN campaigns c ON c.name = n.campaign WHERE n.campaign = ? AND n.epoch = c.epoch"
    rows = query("SELECT n.state, COUNT(*)" + mine + " AND n.state IN (?, ?) GROUP BY n.state",
                 (name, NodeState.DONE, NodeState.FAILED))
    count = {str(r[0]): int(r[1]) for r in rows}
    failed = count.get(NodeState.FAILED.value, 0)
    last = ""
    if failed:
        found = query("SELECT n.node" + mine + " AND n.state = ? ORDER BY n.ended_at DESC, n.node LIMIT 1",
                      (name, NodeState.FAILED))
        last = str(found[0][0]) if found else ""
    return SinceStart(failed=failed, finished=failed + count.get(NodeState.DONE.value, 0), last_failed=last)


class CampaignNode(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    campaign: str
    node: str
    wave: int
    state: NodeState
    before: dict[str, str | None]
    after: dict[str, str | None]
    flashed: list[str]
    started_at: float | None
    ended_at: float | None
    error: str
    gate: list[str] | None = None
    """The health gate's problems once run on the node ([] passed); None not run yet."""
    controller: str = ""
    """The controller that last took the node (several controllers on one campaign)."""
    epoch: int = 0
    """The campaign's start/resume count when the node's turn last ended."""

    @property
    def duration_s(self) -> float | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return round(self.ended_at - self.started_at, 3)


class WaveRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    campaign: str
    wave: int
    state: WaveState
    started_at: float | None
    ended_at: float | None
    gate: str


class CampaignStore:
    """Campaign rows on top of a Journal (same file as bring-up)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def create(self, name: str, source: str, digest: str, waves: list[list[str]],
               unplanned: list[str] | None = None) -> CampaignRecord:
        """The campaign, running, with its waves; `unplanned`: targets not read yet, whose waves are added later
        (add_waves)."""
        now = time.time()
        with self.journal.transaction() as db:
            if db.execute("SELECT 1 FROM campaigns WHERE name = ?", (name,)).fetchone():
                raise InputError(f"campaign {name!r} already exists in {self.journal.where}; use resume")
            db.execute(
                "INSERT INTO campaigns(name, source, digest, state, waves, created_at, updated_at, unplanned)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (name, source, digest, CampaignState.RUNNING, json.dumps(waves), now, now,
                 json.dumps(unplanned or [])),
            )
            _insert_waves(db, name, waves, 0)
        return self.get(name)

    def add_waves(self, name: str, waves: list[list[str]]) -> bool:
        """The waves planned from the campaign's unplanned targets, after its own, in one transaction that also
        empties `unplanned`; False (nothing written) when nothing is unplanned any more (another controller
        added them). A node not among the unplanned, or named twice, is refused (a planning bug)."""
        with self.journal.transaction() as db:
            row = db.execute("SELECT waves, unplanned FROM campaigns WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise InputError(f"campaign {name!r} is not in the journal {self.journal.where}")
            have, unplanned = json.loads(row[0]), json.loads(row[1])
            if not unplanned:
                return False
            new = [n for w in waves for n in w]
            stray = sorted(set(new) - set(unplanned)) + sorted(n for n, k in Counter(new).items() if k > 1)
            if stray:
                raise ValueError(f"campaign {name}: later waves name node(s) not unplanned, or twice: {stray}")
            cur = db.execute("UPDATE campaigns SET waves = ?, unplanned = '[]', updated_at = ?"
                             " WHERE name = ? AND unplanned = ?", (json.dumps(have + waves), time.time(), name, row[1]))
            if not cur.rowcount:  # another controller added them meanwhile
                return False
            _insert_waves(db, name, waves, len(have))
        return True

    def find(self, name: str) -> CampaignRecord | None:
        rows = self.journal.query("SELECT * FROM campaigns WHERE name = ?", (name,))
        if not rows:
            return None
        data = dict(rows[0])
        data["waves"] = json.loads(data["waves"])
        data["unplanned"] = json.loads(data.get("unplanned") or "[]")
        return CampaignRecord(**data)

    def get(self, name: str) -> CampaignRecord:
        found = self.find(name)
        if found is None:
            raise InputError(f"campaign {name!r} is not in the journal {self.journal.where}; start it first")
        return found

    def names(self) -> list[str]:
        return [str(r[0]) for r in self.journal.query("SELECT name FROM campaigns ORDER BY created_at")]

    def set_state(self, name: str, state: CampaignState, reason: str = "", db: Any = None) -> None:
        """`db`: a transaction to write it in (a leader's decision, provision.journal.claims.Claims.decide)."""
        now = time.time()
        ended = now if state in FINAL_CAMPAIGN_STATES else None
        self._write(db, "UPDATE campaigns SET state = ?, reason = ?, request = NULL, updated_at = ?, ended_at = ?"
                    " WHERE name = ?", (state, reason, now, ended, name))

    def _write(self, db: Any, sql: str, params: tuple[Any, ...]) -> None:
        if db is None:
            self.journal.execute(sql, params)
        else:
            db.execute(sql, params)

    def claim(self, name: str, pid: int) -> None:
        """Record the controller process now driving the campaign (a start or resume: halt thresholds count
        again from here, see since_start)."""
        self.journal.execute(
            "UPDATE campaigns SET pid = ?, state = ?, request = NULL, reason = '', updated_at = ?, epoch = epoch + 1"
            " WHERE name = ?",
            (pid, CampaignState.RUNNING, time.time(), name),
        )

    def request(self, name: str, request: Request) -> None:
        self.journal.execute(
            "UPDATE campaigns SET request = ?, updated_at = ? WHERE name = ?", (request, time.time(), name)
        )

    def pending_request(self, name: str) -> Request | None:
        rows = self.journal.query("SELECT request FROM campaigns WHERE name = ?", (name,))
        return Request(rows[0][0]) if rows and rows[0][0] else None

    # -- nodes ------------------------------------------------------------------------------------
    def nodes(self, name: str, wave: int | None = None) -> list[CampaignNode]:
        if wave is None:
            rows = self.journal.query(
                "SELECT * FROM campaign_nodes WHERE campaign = ? ORDER BY wave, node", (name,)
            )
        else:
            rows = self.journal.query(
                "SELECT * FROM campaign_nodes WHERE campaign = ? AND wave = ? ORDER BY node", (name, wave)
            )
        return [_node(r) for r in rows]

    def node(self, name: str, node: str) -> CampaignNode:
        rows = self.journal.query("SELECT * FROM campaign_nodes WHERE campaign = ? AND node = ?", (name, node))
        return _node(rows[0])

    def node_started(self, name: str, node: str, before: dict[str, str | None]) -> None:
        """Node taken: keep the first `before` ever seen (a resumed node keeps its original versions)."""
        self.journal.execute(
            "UPDATE campaign_nodes SET state = ?, started_at = COALESCE(started_at, ?),"
            " before = CASE WHEN before = '{}' THEN ? ELSE before END, error = ''"
            " WHERE campaign = ? AND node = ?",
            (NodeState.ACTIVE, time.time(), json.dumps(before), name, node),
        )

    def node_flashing(self, name: str, node: str, components: list[str]) -> None:
        row = self.node(name, node)
        flashed = row.flashed + [c for c in components if c not in row.flashed]
        self.journal.execute(
            "UPDATE campaign_nodes SET flashed = ? WHERE campaign = ? AND node = ?",
            (json.dumps(flashed), name, node),
        )

    def node_abandoned(self, name: str, node: str, why: str) -> None:
        """A turn that fenced itself: the node stays active (its next holder re-reads the BMC), saying why."""
        self.journal.execute("UPDATE campaign_nodes SET error = ? WHERE campaign = ? AND node = ?",
                             (f"turn abandoned: {why}", name, node))

    def node_finished(
        self, name: str, node: str, state: NodeState, after: dict[str, str | None], error: str = ""
    ) -> None:
        self.journal.execute(
            "UPDATE campaign_nodes SET state = ?, after = ?, ended_at = ?, error = ?,"
            " epoch = (SELECT epoch FROM campaigns WHERE name = ?) WHERE campaign = ? AND node = ?",
            (state, json.dumps(after), time.time(), error, name, name, node),
        )

    def reset_failed(self, name: str) -> int:
        """Failed nodes (and their waves) go back to pending (resume --retry-failed); returns how many."""
        with self.journal.transaction() as db:
            db.execute(
                "UPDATE campaign_waves SET state = ? WHERE campaign = ? AND wave IN"
                " (SELECT wave FROM campaign_nodes WHERE campaign = ? AND state = ?)",
                (WaveState.PENDING, name, name, NodeState.FAILED),
            )
            cur = db.execute(
                "UPDATE campaign_nodes SET state = ?, error = '' WHERE campaign = ? AND state = ?",
                (NodeState.PENDING, name, NodeState.FAILED),
            )
            return int(cur.rowcount)

    def node_gated(self, name: str, node: str, problems: list[str]) -> None:
        self.journal.execute("UPDATE campaign_nodes SET gate = ? WHERE campaign = ? AND node = ?",
                             (json.dumps(problems), name, node))

    def halt(self, name: str, reason: str, db: Any = None) -> bool:
        """Halted, if it is still running (the first controller to see a reason wins; others keep it).
        `db`: a transaction to write it in (a leader's decision)."""
        sql = "UPDATE campaigns SET state = ?, reason = ?, updated_at = ? WHERE name = ? AND state = ?"
        params = (CampaignState.HALTED, reason, time.time(), name, CampaignState.RUNNING)
        if db is not None:
            return bool(db.execute(sql, params).rowcount)
        with self.journal.transaction() as tx:
            return bool(tx.execute(sql, params).rowcount)

    def since_start(self, name: str) -> SinceStart:
        """The nodes finished since the campaign's latest start/resume (the halt policy's count)."""
        return since_start(self.journal.query, name)

    def failed_count(self, name: str) -> tuple[int, int]:
        """(failed, finished) nodes of the campaign, since it was created."""
        rows = self.journal.query(
            "SELECT state, COUNT(*) FROM campaign_nodes WHERE campaign = ? GROUP BY state", (name,))
        count = {str(r[0]): int(r[1]) for r in rows}
        failed = count.get(NodeState.FAILED.value, 0)
        return failed, failed + count.get(NodeState.DONE.value, 0)

    # -- waves ------------------------------------------------------------------------------------
    def waves(self, name: str) -> list[WaveRecord]:
        rows = self.journal.query("SELECT * FROM campaign_waves WHERE campaign = ? ORDER BY wave", (name,))
        return [WaveRecord(**dict(r)) for r in rows]

    def wave_state(self, name: str, wave: int, state: WaveState, gate: str = "", db: Any = None) -> None:
        """`db`: a transaction to write it in (a leader's decision)."""
        now = time.time()
        if state is WaveState.ACTIVE:
            sql = "UPDATE campaign_waves SET state = ?, started_at = COALESCE(started_at, ?) WHERE"
            params: tuple[object, ...] = (state, now, name, wave)
        else:
            sql = "UPDATE campaign_waves SET state = ?, ended_at = ?, gate = ? WHERE"
            params = (state, now, gate, name, wave)
        self._write(db, sql + " campaign = ? AND wave = ?", params)


def _insert_waves(db: Any, name: str, waves: list[list[str]], first: int) -> None:
    for index, wave in enumerate(waves, start=first):
        db.execute("INSERT INTO campaign_waves(campaign, wave, state) VALUES (?, ?, ?)",
                   (name, index, WaveState.PENDING))
        db.executemany("INSERT INTO campaign_nodes(campaign, node, wave, state) VALUES (?, ?, ?, ?)",
                       [(name, node, index, NodeState.PENDING) for node in wave])


def _node(row: object) -> CampaignNode:
    data = dict(row)  # type: ignore[call-overload]
    for key in ("before", "after", "flashed"):
        data[key] = json.loads(data[key])
    data["gate"] = None if data.get("gate") is None else json.loads(data["gate"])
    return CampaignNode(**data)
