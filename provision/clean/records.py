"""What a clean and a retirement leave in the journal, in its existing tables (no schema change).

- A clean is a run of kind `clean`; each node's stages are node_stages rows, its side effects actions rows.
  A node's clean is complete when its `done` stage completed; the rows of `clean` runs after the node's last
  complete clean are the clean in progress, which a new `provision clean` resumes.
- Each erased drive's evidence is an actions row `drive-evidence` (target: device and serial) whose detail is
  the DriveEvidence as JSON.
- An item a stage could not check (a BMC without a TaskService: staged firmware) is an actions row
  `not-checked`; the clean's `done` stage fails while its cycle holds one.
- A retirement (and its reversal) is an actions row `retire` (`unretire`) of a run of that kind, its detail
  the identity and who did it, as JSON; the node's latest such row says whether it is retired.
"""

from __future__ import annotations

import getpass
import json
import socket
import time
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from provision.clean.model import DriveEvidence
from provision.journal import Journal

CLEAN = "clean"
RETIRE = "retire"
UNRETIRE = "unretire"
DONE_STAGE = "done"
EVIDENCE = "drive-evidence"
ERASE = "drive-erase"
NOT_CHECKED = "not-checked"
COMPLETED = ("applied", "converged")
KINDS = (CLEAN, RETIRE)
"""The runs a clean's stages run in: `provision clean`, and `provision retire --clean`."""


def operator() -> str:
    """Who runs this command: user@host of the controller."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def cycle_start(journal: Journal, node: str) -> int:
    """The id of the clean run that last completed this node (0: none); later clean runs are the clean in
    progress."""
    rows = journal.query("SELECT MAX(ns.run_id) FROM node_stages ns JOIN runs r ON r.id = ns.run_id "
                         "WHERE r.kind IN (?, ?) AND ns.node = ? AND ns.stage = ? AND ns.outcome IN (?, ?)",
                         (*KINDS, node, DONE_STAGE, *COMPLETED))
    return int(rows[0][0] or 0)


def _in_cycle(journal: Journal, node: str, action: str) -> list[dict[str, object]]:
    since = cycle_start(journal, node)
    rows = journal.query("SELECT a.* FROM actions a JOIN runs r ON r.id = a.run_id WHERE r.kind IN (?, ?) "
                         "AND a.node = ? AND a.action = ? AND a.run_id > ? ORDER BY a.id",
                         (*KINDS, node, action, since))
    return [dict(r) for r in rows]


def record_evidence(journal: Journal, run_id: int, stage: str, evidence: DriveEvidence) -> None:
    """Keep one drive's evidence (one row, written whole)."""
    aid = journal.action_started(run_id, evidence.node, stage, EVIDENCE, f"{evidence.device} {evidence.serial}")
    journal.action_finished(aid, "ok", evidence.model_dump_json())


def evidence(journal: Journal, node: str) -> list[DriveEvidence]:
    """The drive evidence of the node's clean in progress."""
    rows = _in_cycle(journal, node, EVIDENCE)
    return [DriveEvidence.model_validate_json(str(r["detail"])) for r in rows if r["outcome"] == "ok"]


def last_evidence(journal: Journal, node: str) -> list[DriveEvidence]:
    """The evidence of the node's last complete clean."""
    last = cycle_start(journal, node)
    if not last:
        return []
    rows = journal.query("SELECT a.detail FROM actions a JOIN runs r ON r.id = a.run_id WHERE r.kind IN (?, ?) "
                         "AND a.node = ? AND a.action = ? AND a.outcome = 'ok' AND a.run_id <= ? ORDER BY a.id",
                         (*KINDS, node, EVIDENCE, last))
    kept = [DriveEvidence.model_validate_json(str(r["detail"])) for r in rows]
    newest: dict[str, DriveEvidence] = {e.serial: e for e in kept}
    return list(newest.values())


def interrupted(journal: Journal, node: str) -> dict[str, float]:
    """Serial -> when its erase was asked for, for erases of the clean in progress journaled without an
    outcome (the controller was killed) and no evidence since."""
    done = {e.serial for e in evidence(journal, node)}
    found: dict[str, float] = {}
    for row in _in_cycle(journal, node, ERASE):
        serial = str(row["target"]).rsplit(" ", 1)[-1]
        if row["outcome"] is None and serial not in done:
            found[serial] = float(str(row["started_at"]))
    return found


def not_checked(journal: Journal, node: str) -> list[str]:
    """What the clean in progress could not check (each `not-checked` row's detail): while any is, the clean is
    not complete."""
    return [str(r["detail"]).removeprefix(f"{NOT_CHECKED} ") for r in _in_cycle(journal, node, NOT_CHECKED)
            if r["outcome"] == "ok"]


def done_in_cycle(journal: Journal, node: str, action: str) -> bool:
    """A side effect of kind `action` completed in the clean in progress."""
    return any(r["outcome"] == "ok" for r in _in_cycle(journal, node, action))


def describe_time(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


class CleanMark(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    at: float
    by: str
    level: str

    def describe(self) -> str:
        return f"cleaned at {describe_time(self.at)} by {self.by} ({self.level})"


def cleaned(journal: Journal, nodes: Sequence[str]) -> dict[str, CleanMark]:
    """Each node's last complete clean."""
    rows = journal.query("SELECT ns.node, ns.ended_at, r.args FROM node_stages ns JOIN runs r ON r.id = ns.run_id "
                         "WHERE r.kind IN (?, ?) AND ns.stage = ? AND ns.outcome IN (?, ?) ORDER BY ns.id",
                         (*KINDS, DONE_STAGE, *COMPLETED))
    marks: dict[str, CleanMark] = {}
    for r in rows:
        if r["node"] in nodes:
            args = json.loads(r["args"] or "{}")
            marks[r["node"]] = CleanMark(node=r["node"], at=float(r["ended_at"]), by=str(args.get("by", "?")),
                                         level=str(args.get("level", "?")))
    return marks


class RetiredMark(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    at: float
    by: str
    serial: str | None = None
    uuid: str | None = None


def mark(journal: Journal, node: str, retire: bool, serial: str | None = None, uuid: str | None = None,
         run_id: int | None = None) -> None:
    """Record a retirement (with the identity the node had) or its reversal, in run `run_id` (None: a run of
    its own)."""
    kind = RETIRE if retire else UNRETIRE
    own = run_id is None
    run = journal.start_run(kind, node, {"by": operator()}) if run_id is None else run_id
    detail = json.dumps({"serial": serial, "uuid": uuid, "by": operator()} if retire else {"by": operator()})
    aid = journal.action_started(run, node, kind, kind, node)
    journal.action_finished(aid, "ok", detail)
    if own:
        journal.finish_run(run, "ok")


def retired(journal: Journal) -> dict[str, RetiredMark]:
    """The nodes retired now (their latest retire/unretire row is a retire)."""
    rows = journal.query("SELECT node, action, ended_at, detail FROM actions WHERE action IN (?, ?) AND outcome = 'ok' "
                         "ORDER BY id", (RETIRE, UNRETIRE))
    marks: dict[str, RetiredMark] = {}
    for r in rows:
        if r["action"] == UNRETIRE:
            marks.pop(r["node"], None)
            continue
        detail = json.loads(r["detail"] or "{}")
        marks[r["node"]] = RetiredMark(node=r["node"], at=float(r["ended_at"]), by=str(detail.get("by", "?")),
                                       serial=detail.get("serial"), uuid=detail.get("uuid"))
    return marks
