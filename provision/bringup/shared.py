"""Several controllers on one bring-up: `provision bringup PATTERN --share NAME` on each splits the nodes.

What the share knows is in the journal, nowhere else: the stages each node completed in runs of this share
(node_stages rows of runs whose target is `share NAME`), and who holds each node's lease (node_locks, the
leases every bring-up and campaign takes: provision.journal.locks). Each worker of each controller loops:
observe (one query), decide (pure: `decide`), take the chosen node's lease, decide again for that node under
the lease (another controller may have finished it meanwhile), run the stages it has not completed, release.

A controller killed -9 leaves its nodes' leases unrenewed: they expire (at once where the dead holder ran on
this host), and another controller takes the node and resumes at its first stage not completed; that stage
observes the node and the journal (what was staged, which flash was interrupted) before it plans, as a
resumed single-controller run does. A node that failed a stage is not taken again by this share (unless a controller
starts with --retry-failed: the failures journaled before it started are tried again): its controllers end when
every node is done or failed, and exit 1 naming the failures.

With a deadline (`--wait-seconds N`) a controller waits on nodes another live controller holds for at most N
seconds from its start: past it, a worker that would wait again ends instead, and the run ends with ShareTimedOut,
one line naming the nodes still held and by whom (its own nodes in flight are finished first).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from provision.bringup.engine import bring_up_node
from provision.bringup.model import BringupResult, NodeResult, Outcome, StagePlan, StageResult
from provision.bringup.stage import Progress, Stage, StageContext
from provision.errors import ProvisionError
from provision.journal import Journal
from provision.journal.locks import LEASE_TTL_S, NodeLocked, NodeLocks
from provision.spec import HostEntry

KIND = "bringup"
SHOWN = 10
"""ShareTimedOut names at most this many nodes (then a count)."""
COMPLETED = (Outcome.APPLIED.value, Outcome.CONVERGED.value)


def target(share: str) -> str:
    """The `runs.target` of every controller's run in share `share`."""
    return f"share {share}"


class NodeShare(BaseModel):
    """One node as the share's journal shows it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    completed: frozenset[str] = frozenset()
    """Stages journaled applied or converged in a run of this share."""
    failed: str | None = None
    """The stage its latest journaled stage failed at (None: none failed, or it completed since)."""
    held: bool = False
    """A live lease on it (any holder's, this controller's too)."""


class Verdict(StrEnum):
    TAKE = "take"
    WAIT = "wait"  # every node left is held by a live lease: wait for it to end or expire
    FINISHED = "finished"  # every node is done or failed


class Decision(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    verdict: Verdict
    node: str | None = None
    stages: tuple[str, ...] = ()
    """The stages to run on `node`: from its first stage not completed to the end."""


def remaining(view: NodeShare, stages: Sequence[str]) -> tuple[str, ...]:
    """The stages from the node's first not completed one on (none: the node is done)."""
    first = next((i for i, s in enumerate(stages) if s not in view.completed), len(stages))
    return tuple(stages[first:])


def decide(views: Sequence[NodeShare], stages: Sequence[str]) -> Decision:
    """Pure: which node this worker takes next. A node no lease holds, neither done nor failed: one a dead
    controller left part way (some stage completed) first, then by name; WAIT while only held nodes are left."""
    left = [v for v in views if remaining(v, stages) and v.failed is None]
    free = [v for v in left if not v.held]
    if not free:
        return Decision(verdict=Verdict.WAIT if left else Verdict.FINISHED)
    chosen = min(free, key=lambda v: (not v.completed, v.node))
    return Decision(verdict=Verdict.TAKE, node=chosen.node, stages=remaining(chosen, stages))


Row = tuple[int, str, str, str | None]
"""A stage row of the share: (id, node, stage, outcome)."""


def fold(rows: Sequence[Row], nodes: Sequence[str], held: set[str], stages: Sequence[str],
         forgive_upto: int | None = None) -> list[NodeShare]:
    """Pure: the views of `nodes` from the share's stage rows (oldest first). A node is failed when its latest
    row failed and it is not done since (a controller fenced off after a takeover may journal its failure after
    the new holder completed the node: done wins); a failure in a row up to `forgive_upto` (--retry-failed: the
    rows journaled before this controller started) does not count."""
    completed: dict[str, set[str]] = {n: set() for n in nodes}
    latest: dict[str, tuple[str, str | None]] = {}
    for row_id, node, stage, outcome in rows:
        if node not in completed:
            continue
        if outcome in COMPLETED:
            completed[node].add(stage)
        if outcome == Outcome.FAILED.value and forgive_upto is not None and row_id <= forgive_upto:
            latest.pop(node, None)
        elif outcome is not None:  # an open row (its controller died in it) says nothing
            latest[node] = (stage, outcome)
    views = []
    for node in nodes:
        last = latest.get(node)
        failed = last[0] if last is not None and last[1] == Outcome.FAILED.value else None
        view = NodeShare(node=node, completed=frozenset(completed[node]), held=node in held)
        views.append(view.model_copy(update={"failed": failed if remaining(view, stages) else None}))
    return views


def observe(journal: Journal, share: str, nodes: Sequence[str], locks: NodeLocks, stages: Sequence[str],
            forgive_upto: int | None = None) -> list[NodeShare]:
    """The share as the journal shows it now (one query for the stages, one for the leases)."""
    rows = journal.query("SELECT ns.id, ns.node, ns.stage, ns.outcome FROM node_stages ns JOIN runs r"
                         " ON r.id = ns.run_id WHERE r.kind = ? AND r.target = ? ORDER BY ns.id", (KIND, target(share)))
    held = {lease.node for lease in locks.held()}
    return fold([(r["id"], r["node"], r["stage"], r["outcome"]) for r in rows], nodes, held, stages, forgive_upto)


def watermark(journal: Journal) -> int:
    """The newest stage row now: failures up to it are the ones --retry-failed tries again."""
    rows = journal.query("SELECT MAX(id) FROM node_stages")
    return int(rows[0][0] or 0)


class ShareSummary(BaseModel):
    """The whole share at the end of this controller's run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    share: str
    nodes: int
    done: list[str]
    failed: dict[str, str]
    """node -> the stage it failed at."""
    mine: list[str]
    """The nodes this controller ran stages of."""

    @property
    def ok(self) -> bool:
        return not self.failed


class ShareTimedOut(ProvisionError):
    """The deadline passed while nodes were left that another live controller holds (exit 4)."""

    exit_code = 4


class SharedBringup:
    """One controller's part in share `share`: workers that take nodes no other holds until none is left."""

    def __init__(self, hosts: Sequence[HostEntry], stages: Sequence[Stage], journal: Journal, share: str, *,
                 concurrency: int = 4, progress: Progress | None = None, ttl_s: float = LEASE_TTL_S,
                 poll_s: float = 1.0, retry_failed: bool = False, sleep: Callable[[float], None] = time.sleep,
                 wait_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.hosts = {h.name: h for h in hosts}
        self.stages = {s.name: s for s in stages}
        self.order = [s.name for s in stages]
        self.journal, self.share, self.concurrency = journal, share, concurrency
        self.progress = progress or (lambda node, stage, msg: None)
        self.locks = NodeLocks(journal, ttl_s)
        self.poll_s, self.sleep, self.retry_failed = poll_s, sleep, retry_failed
        self.wait_s, self.clock = wait_s, clock
        """How long this controller waits, from its start, on nodes others hold (None: until they end)."""
        self._deadline = float("inf")
        self.forgive_upto: int | None = None
        self.owner = f"bringup share {share}"
        self._pick = threading.Lock()  # one worker of this controller decides and takes at a time
        self._results: dict[str, NodeResult] = {}
        self.run_id = 0

    def run(self) -> tuple[BringupResult, ShareSummary]:
        self.forgive_upto = watermark(self.journal) if self.retry_failed else None
        self._deadline = float("inf") if self.wait_s is None else self.clock() + self.wait_s
        self.run_id = self.journal.start_run(KIND, target(self.share), {"stages": self.order, "share": self.share})
        with ThreadPoolExecutor(max_workers=max(1, self.concurrency), thread_name_prefix="bringup") as pool:
            for future in [pool.submit(self._worker) for _ in range(max(1, self.concurrency))]:
                future.result()
        summary = self.summary()
        left = self._left()
        self.journal.finish_run(self.run_id, "timed out" if left else "ok" if summary.ok else "failed")
        if left:
            raise ShareTimedOut(self._held_message(left))
        nodes = [self._results[n] for n in self.hosts if n in self._results]
        return BringupResult(run_id=self.run_id, plan_only=False, nodes=nodes), summary

    def summary(self) -> ShareSummary:
        views = self._observe(list(self.hosts))
        done = [v.node for v in views if not remaining(v, self.order)]
        return ShareSummary(share=self.share, nodes=len(views), done=done,
                            failed={v.node: v.failed for v in views if v.failed is not None},
                            mine=sorted(self._results))

    def _left(self) -> list[str]:
        """Nodes neither done nor failed (only a deadline ends this controller's workers while some are left)."""
        return [v.node for v in self._observe(list(self.hosts)) if remaining(v, self.order) and v.failed is None]

    def _held_message(self, left: Sequence[str]) -> str:
        holders = {lease.node: lease.describe() for lease in self.locks.held()}
        named = [f"{n} by {holders[n]}" if n in holders else f"{n} (free now)" for n in left[:SHOWN]]
        more = f" and {len(left) - SHOWN} more" if len(left) > SHOWN else ""
        return (f"share {self.share}: --wait-seconds {self.wait_s:g} passed with {len(left)} node(s) held by "
                f"another controller: {', '.join(named)}{more}; run again to finish them")

    def _observe(self, nodes: list[str]) -> list[NodeShare]:
        return observe(self.journal, self.share, nodes, self.locks, self.order, self.forgive_upto)

    def _worker(self) -> None:
        while True:
            with ExitStack() as held:
                with self._pick:
                    decision = decide(self._observe(list(self.hosts)),
                                      self.order)
                    if decision.verdict is Verdict.FINISHED:
                        return
                    if decision.verdict is Verdict.TAKE:
                        decision = self._take(held, decision)
                if decision.verdict is Verdict.TAKE and decision.node is not None:
                    self._run(decision.node, decision.stages)
                    continue
            if decision.verdict is Verdict.WAIT:
                if self.clock() >= self._deadline:
                    return  # waited long enough on what others hold: run() names it
                self.sleep(self.poll_s)

    def _take(self, held: ExitStack, decision: Decision) -> Decision:
        """The node's lease, and the decision again under it (another controller may have finished the node
        between the observation and the lease); WAIT when another took it first."""
        assert decision.node is not None
        try:
            held.enter_context(self.locks.hold([decision.node], owner=self.owner))
        except NodeLocked:
            return Decision(verdict=Verdict.WAIT)
        (view,) = self._observe([decision.node])
        again = decide([view.model_copy(update={"held": False})], self.order)
        return again if again.verdict is Verdict.TAKE else Decision(verdict=Verdict.WAIT)

    def _run(self, node: str, stages: Sequence[str]) -> None:
        host = self.hosts[node]
        note = f"completed earlier in share {self.share}"
        done = [StageResult(stage=s, outcome=Outcome.SKIPPED, plan=StagePlan(stage=s, node=node, note=note))
                for s in self.order if s not in stages]
        ctx = StageContext(host=host, journal=self.journal, run_id=self.run_id, progress=self.progress,
                           locks=self.locks)
        result = bring_up_node(ctx, [self.stages[s] for s in stages], done)
        self._results[node] = result
