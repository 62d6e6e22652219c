"""The campaign engine: waves in order, a health gate between them, halt, pause, resume; one controller or several.

Every controller (`provision campaign start`, `resume`, and on a PostgreSQL journal `campaign join CAMPAIGN
[--shard GROUP]`) runs this loop, waking when a turn ends or every `poll_s`:

1. take or renew the leader lease (provision.journal.claims); the leader alone, and only while its lease is
   fresh and still its own (each decision re-checks it in the transaction that writes it), starts a wave (after
   the pause/abort request and the maintenance window), runs the gate of a wave whose every node is finished (on
   nodes no controller gated, e.g. one killed after a turn), marks it done or halts the campaign, and marks the
   campaign done after the last wave (provision.campaign.leader);
2. read the campaign: halted, paused, aborted or done, or a pause/abort asked, and it claims nothing more;
3. claim nodes of the active wave, among those it reaches (its shard), up to its free workers and the
   campaign's budget of nodes unavailable at once (WavePolicy.budget: nodes in flight and failed ones), and run
   each node's turn (provision.campaign.node: observe first) under the claim's lease, then its health gate (which
   overlaps the rest of the wave); a failure past max_failures halts the campaign for every controller (counted
   over the nodes finished since the latest start/resume, and decided again in each claim's transaction;
   max_fail_percentage once a wave's turns are over). While a renewal of its node leases is late
   (NodeLocks.fresh: it is overloaded, or cut off from the journal) it claims nothing; a turn whose lease went
   stale abandons itself before its next side effect (provision.campaign.node).

With one controller (a SQLite journal: one file, one machine) the same claims, leases and leader are taken in the
file's transactions; that controller leads throughout. State lives in the journal; the BMCs are the truth about
firmware. A controller killed at any moment leaves leases that expire; `resume` (or another controller) observes
every unfinished node again before anything is done to it. A controller that loses the journal stops claiming,
lets the turns in flight end and exits with JournalUnreachable.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, wait
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from provision.campaign.catalog import Catalog, file_digest
from provision.campaign.gates import GateRunner
from provision.campaign.hooks import run_hook
from provision.campaign.leader import WaveLeader
from provision.campaign.node import HookRunner, NodeContext, process_node
from provision.campaign.plan import Rest
from provision.campaign.updater import NodeUpdater, Target
from provision.campaign.workers import Workers
from provision.errors import InputError
from provision.journal.campaigns import (
    CampaignNode,
    CampaignState,
    CampaignStore,
    NodeState,
    Request,
    SinceStart,
    WaveState,
)
from provision.journal.claims import Claims
from provision.journal.locks import Lease, NodeLocks
from provision.journal.store import JournalError, JournalUnreachable

TAKEOVER_SETTLE_S = 5.0
"""A node taken over is first observed this long after its previous holder's lease ran out (at most half the lease;
not at all when that holder released it): a request it sent just before it was killed (an image upload, whose Task
the BMC creates only once the upload is in) has reached the BMC's TaskService by then, so the observation sees it
instead of flashing the node again."""

READ_REST_AFTER_S = 30.0
"""The targets a campaign started without reading are read once the canary's updates are sent, or after this long."""


class Outcome(BaseModel):
    """How a start/resume/join ended."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    campaign: str
    state: CampaignState
    reason: str
    done: int
    failed: int
    pending: int

    @property
    def ok(self) -> bool:
        return self.state is CampaignState.DONE and self.failed == 0 and self.pending == 0


class Engine:
    """One controller's part in a campaign (all of it when it is the only one).

    `alone`: no other controller takes part (a SQLite journal; `start`/`resume` on PostgreSQL use SharedEngine):
    a turn that abandoned itself halts the campaign (nobody else would take its node, and this controller is
    overloaded), and Ctrl-C pauses the campaign once the turns in flight have ended."""

    alone = True

    def __init__(
        self, catalog: Catalog, store: CampaignStore, targets: dict[str, Target], updater: NodeUpdater,
        gate: GateRunner, *, run_hook: HookRunner = run_hook, now: Callable[[], datetime] = lambda: datetime.now(UTC),
        poll_s: float = 2.0, on_node: Callable[[CampaignNode, float], None] | None = None,
        lease_s: float | None = None, settle_s: float | None = None, clock: Callable[[], float] | None = None,
    ) -> None:
        self.catalog, self.store, self.targets, self.updater, self.gate = catalog, store, targets, updater, gate
        self.now, self.poll_s = now, poll_s
        self._run_hook = run_hook
        self._on_node = on_node  # (the node's record, seconds) as its turn ends: the CLI's event lines
        self._lease: dict[str, Any] = {k: v for k, v in (("ttl_s", lease_s), ("clock", clock)) if v is not None}
        """The node and leader leases' TTL and clock when given (tests pass a fake clock); else NodeLocks's."""
        self.settle_s = settle_s
        self.leader_seen = False
        """Whether this controller led at any moment (tests and the report)."""
        self._errors: list[BaseException] = []
        self._prepared: set[int] = set()
        self._wake = threading.Event()  # set as a turn ends: the loop looks again at once
        self._leader: WaveLeader | None = None

    # -- entry points ----------------------------------------------------------------------------------
    def start(self, source: Path, waves: list[list[str]], rest: Rest | None = None) -> Outcome:
        """Create the campaign in the journal with its waves, then run it. `rest`: targets not read yet (recorded
        as the campaign's unplanned ones), read while the first waves run and added as the waves after them."""
        self.store.create(self.catalog.name, str(source), file_digest(source), waves, rest.names if rest else None)
        if self.alone:
            self._check_targets()
        return self._run("start", rest)

    def join(self) -> Outcome:
        record = self.store.get(self.catalog.name)
        if record.state is not CampaignState.RUNNING:
            raise InputError(f"campaign {record.name} is {record.state}; join takes part in a running campaign "
                             "(resume it first)")
        return self._run("join")

    def resume(self, retry_failed: bool = False, rest: Rest | None = None) -> Outcome:
        """`rest`: the campaign's unplanned targets (its controller stopped before it added their waves): read and
        planned again, as at start."""
        record = self.store.get(self.catalog.name)
        if record.state in (CampaignState.DONE, CampaignState.ABORTED) and not (
                retry_failed and record.state is CampaignState.DONE):
            raise InputError(f"campaign {record.name} is {record.state}; nothing to resume")
        if self.alone:
            self._check_targets()
            if record.unplanned and rest is None:  # nobody else would plan them: the campaign could not end
                raise InputError(f"campaign {record.name}: {len(record.unplanned)} target(s) not planned yet; "
                                 "resume reads them")
        if retry_failed:
            self.store.reset_failed(self.catalog.name)
        self.store.claim(self.catalog.name, os.getpid())
        return self._run("resume", rest)

    # -- the loop ----------------------------------------------------------------------------------------
    def _run(self, how: str, rest: Rest | None = None) -> Outcome:
        name, journal = self.catalog.name, self.store.journal
        locks = NodeLocks(journal, **self._lease)
        claims = Claims(journal, name, ttl_s=locks.ttl_s, clock=locks.clock)
        settle = min(TAKEOVER_SETTLE_S, locks.ttl_s / 2) if self.settle_s is None else self.settle_s
        leader = self._leader = WaveLeader(self.catalog, self.store, self.targets, self.gate, self.now, claims)
        run_id = journal.start_run("campaign", name, {"how": how, "controller": claims.owner})
        ctx = NodeContext(self.catalog, self.store, run_id, self.updater, self._run_hook, poll_s=self.poll_s,
                          locks=locks)
        sizes = [len([n for n in w if n in self.targets]) for w in self.store.get(name).waves]
        first = next((sizes[w.wave] for w in self.store.waves(name) if w.state is not WaveState.DONE), 1)
        inflight: dict[str, Future[object]] = {}
        lost: JournalUnreachable | None = None
        planner = self._plan_rest(rest) if rest is not None and self.store.get(name).unplanned else None
        try:
            with Workers(min(self.catalog.policy.concurrency, max(1, first)), prefix="node") as pool:  # the rest
                # start as it flashes
                try:
                    self._loop(ctx, leader, locks, pool, inflight, settle)
                except JournalUnreachable as exc:  # stop taking nodes; the turns in flight end below
                    lost = exc
                except KeyboardInterrupt:  # the turns in flight end; the rest stay pending
                    wait(list(inflight.values()))
                    if self.alone:
                        self.store.set_state(name, CampaignState.PAUSED, "interrupted")
                        journal.finish_run(run_id, "interrupted")
                    raise
                wait(list(inflight.values()))
                if planner is not None:  # halted or paused meanwhile: its waves are added all the same
                    planner.join()
        finally:
            self.updater.release()
            with suppress(JournalError):
                claims.resign()
        if lost is not None or any(isinstance(e, JournalUnreachable) for e in self._errors):
            raise lost or next(e for e in self._errors if isinstance(e, JournalUnreachable))
        if self._errors:
            raise self._errors[0]
        record = self.store.get(name)
        state, reason = record.state, record.reason
        if state is CampaignState.RUNNING and record.request is not None:  # the leader records it as it ends
            state, reason = requested_outcome(record.request)
        journal.finish_run(run_id, state.value)
        return self.outcome(state, reason)

    def _loop(self, ctx: NodeContext, leader: WaveLeader, locks: NodeLocks, pool: Workers,
              inflight: dict[str, Future[object]], settle_s: float) -> None:
        name, claims = self.catalog.name, leader.claims
        reachable = sorted(self.targets)
        while True:
            self._wake.clear()
            for node in [n for n, f in inflight.items() if f.done()]:
                del inflight[node]
            if self._errors:
                return
            leading = claims.lead()
            self.leader_seen |= leading
            record = self.store.get(name)
            if record.state is not CampaignState.RUNNING:
                return
            if record.request is not None:
                if not inflight:
                    if leading and not self._any_active():
                        state, reason = requested_outcome(record.request)
                        leader.decide(f"campaign {state.value}", self.store.set_state, name, state, reason)
                    return
                self._wake.wait(self.poll_s)
                continue
            wave = next((w for w in self.store.waves(name) if w.state is not WaveState.DONE), None)
            if wave is None:  # done, unless later waves are still being planned (start/resume adds them)
                if leading and not record.unplanned:
                    failed, _ = self.store.failed_count(name)
                    if leader.decide("campaign done", self.store.set_state, name, CampaignState.DONE,
                                     f"{failed} node(s) failed" if failed else ""):
                        return
            elif wave.state is WaveState.GATE_FAILED:
                return
            elif wave.state is WaveState.PENDING:
                if leading:
                    stop = self._before_wave(wave.wave)
                    if stop:
                        if leader.decide(f"campaign {stop[0].value}", self.store.set_state, name, *stop):
                            return
                    elif leader.decide(f"wave {wave.wave} started", self.store.wave_state, name, wave.wave,
                                       WaveState.ACTIVE):
                        continue
            else:
                self._look_ahead(record.waves, wave.wave)
                free = pool.size - len(inflight) if locks.fresh() else 0  # late renewals: take no new node
                # one budget over every node of the campaign, those still to be planned included
                budget = self.catalog.policy.waves.budget(record.planned + len(record.unplanned))
                threads = self._threads(record.waves)
                for lease in claims.claim(wave.wave, reachable, free, budget, self._failures):
                    if lease.owner == claims.owner:  # else another run's: the turn is refused, naming it
                        locks.adopt([lease])
                    inflight[lease.node] = pool.submit(lambda x: self._turn(ctx, x, settle_s), [lease])[0]
                if inflight and pool.size < threads:  # start-up that overlaps the first wave's turns
                    pool.grow(threads)
                if leading and not inflight and leader.close_wave(wave):
                    continue
            self._wake.wait(self.poll_s)

    def _threads(self, waves: list[list[str]]) -> int:
        """Turn threads: as many as the largest wave can use among the nodes this controller reaches."""
        return min(self.catalog.policy.concurrency, max([1, *(sum(n in self.targets for n in w) for w in waves)]))

    def _plan_rest(self, rest: Rest) -> threading.Thread:
        """Read the campaign's unplanned targets and add their waves (the first waves run meanwhile); a failure
        ends the run as a turn's does, and leaves them unplanned for resume."""
        def plan() -> None:
            try:
                self._first_updates_sent()
                record = self.store.get(self.catalog.name)
                self.store.add_waves(record.name, rest.waves(record.planned))
            except BaseException as exc:
                self._errors.append(exc)
            finally:
                self._wake.set()
        thread = threading.Thread(target=plan, name="plan-rest", daemon=True)
        thread.start()
        return thread

    def _first_updates_sent(self) -> None:
        """Until every node planned so far (the canary) has sent its updates or finished, the campaign stopped
        running, or READ_REST_AFTER_S passed: the reads of the rest would otherwise hold up the canary's turns'
        own reads and requests (on whichever controller) in the BMCs' and this controller's queues."""
        name, pause = self.catalog.name, threading.Event()
        deadline = time.monotonic() + READ_REST_AFTER_S
        while time.monotonic() < deadline:
            record = self.store.get(name)
            if record.state is not CampaignState.RUNNING or record.request is not None or all(
                    n.flashed or n.state in (NodeState.DONE, NodeState.FAILED) for n in self.store.nodes(name)):
                return
            pause.wait(0.1)

    def _before_wave(self, wave: int) -> tuple[CampaignState, str] | None:
        """Why the leader may not start wave `wave` now (WaveLeader.before_wave), or None."""
        assert self._leader is not None
        return self._leader.before_wave(wave)

    def _look_ahead(self, waves: list[list[str]], wave: int) -> None:
        """Once per wave, once every turn of it this controller could take has begun (here or on another
        controller: a controller counts only its own turns): the next wave's BMCs this controller reaches are
        logged in to and observed while this wave waits on its hosts (provision.campaign.ahead)."""
        if wave in self._prepared or wave + 1 >= len(waves):
            return
        name = self.catalog.name
        if any(n.state is NodeState.PENDING and n.node in self.targets for n in self.store.nodes(name, wave)):
            return
        self._prepared.add(wave)
        ahead = [self.targets[n] for n in waves[wave + 1] if n in self.targets]
        if ahead:
            self.updater.prepare(ahead, self.catalog.ordered(), after_turns=None)

    def _failures(self, count: SinceStart) -> str | None:
        """max_failures on the nodes finished since the latest start/resume, decided as nodes are claimed."""
        return self.catalog.policy.halt.failures_reason(count.failed, count.last_failed)

    def _any_active(self) -> bool:
        return any(n.state is NodeState.ACTIVE for n in self.store.nodes(self.catalog.name))

    def _turn(self, ctx: NodeContext, lease: Lease, settle_s: float) -> None:
        """One node's turn under its claim's lease (lease.previous: the controller it was taken over from)."""
        try:
            self._one(ctx, lease, settle_s)
        except JournalError as exc:  # the journal is gone: this node's lease expires; another re-observes it
            self._errors.append(exc)
        except BaseException as exc:
            self._errors.append(exc)
            raise
        finally:
            self._wake.set()

    def _one(self, ctx: NodeContext, lease: Lease, settle_s: float) -> None:
        name, node, previous = self.catalog.name, lease.node, lease.previous
        started = time.monotonic()
        target = self.targets[node]
        if previous:  # a request the previous holder sent before its lease ran out reaches the BMC first
            assert ctx.locks is not None
            until = lease.previous_until
            settle = 0.0 if until is None else max(0.0, min(settle_s, until + settle_s - ctx.locks.clock()))
            action = ctx.store.journal.action_started(ctx.run_id, node, "campaign", "take-over", previous)
            ctx.store.journal.action_finished(action, "ok", f"taken over from {previous}: its BMC's inventory "
                                              f"and update tasks are read again, {settle:g} s from now, "
                                              "before anything is sent")
            time.sleep(settle)
        with self.updater.session(target, afresh=bool(previous)):
            state = process_node(ctx, target)  # under the adopted lease; released as it ends
            if state is NodeState.DONE:  # gated as it finishes: the wave's gate overlaps its flashing
                self.store.node_gated(name, node, self.gate.run([target], self.catalog))
        if state is NodeState.FAILED:  # halt now for everyone; every claim decides it again (Claims.claim)
            reason = self.catalog.policy.halt.failures_reason(self.store.since_start(name).failed, node)
            if reason:
                self.store.halt(name, reason)
        if state is NodeState.ACTIVE and self.alone:  # the turn fenced itself: nobody else would take it
            self.store.halt(name, f"{node}: turn abandoned (its node lease went stale); resume re-reads its BMC")
        if self._on_node is not None:
            self._on_node(self.store.node(name, node), time.monotonic() - started)

    def _check_targets(self) -> None:
        name = self.catalog.name
        planned = {n.node for n in self.store.nodes(name)} | set(self.store.get(name).unplanned)
        missing = sorted(planned - set(self.targets))
        if missing:
            raise InputError(f"campaign {self.catalog.name}: host(s) {', '.join(missing)} not in the inventory")

    def outcome(self, state: CampaignState, reason: str) -> Outcome:
        nodes = self.store.nodes(self.catalog.name)
        count = {s: sum(1 for n in nodes if n.state is s) for s in NodeState}
        return Outcome(
            campaign=self.catalog.name, state=state, reason=reason, done=count[NodeState.DONE],
            failed=count[NodeState.FAILED], pending=count[NodeState.PENDING] + count[NodeState.ACTIVE],
        )


class SharedEngine(Engine):
    """A controller that others may join (a PostgreSQL journal): a turn that abandoned itself leaves its node,
    still active, to whichever controller claims it next, and Ctrl-C stops this controller alone."""

    alone = False


HALTED_BY_REQUEST = "halted by request"


def requested_outcome(request: Request) -> tuple[CampaignState, str]:
    """The state and reason a pause, abort or halt request ends a campaign in (the engine and the CLI)."""
    if request is Request.ABORT:
        return CampaignState.ABORTED, "aborted by request"
    if request is Request.HALT:
        return CampaignState.HALTED, HALTED_BY_REQUEST
    return CampaignState.PAUSED, "paused by request"


def waves_for(nodes: Sequence[str], catalog: Catalog) -> list[list[str]]:
    from provision.campaign.waves import plan_waves

    return plan_waves(list(nodes), catalog.policy.waves)
