"""One of several controllers on one campaign, through a shared PostgreSQL journal.

`provision campaign start` (on a PostgreSQL journal) and `provision campaign join CAMPAIGN [--shard GROUP]`
both run this loop, every `poll_s`:

1. take or renew the leader lease (provision.journal.claims); the leader alone, and only while its lease is
   fresh and still its own (each decision re-checks it in the transaction that writes it), starts a wave (after the
   pause/abort request and the maintenance window, as the one-controller engine does), runs the gate of a
   wave whose every node is finished (on nodes no controller gated, e.g. one killed after a turn), marks it
   done or halts the campaign, and marks the campaign done after the last wave;
2. read the campaign: halted, paused, aborted or done, or a pause/abort asked, and it claims nothing more;
3. claim nodes of the active wave, among those it reaches (its shard), up to its free workers and the
   campaign's max unavailable, and run each node's turn (provision.campaign.node: observe first) under the
   claim's lease, then its health gate; a failure past max_failures halts the campaign for every controller
   (counted, as the one-controller engine does, over the nodes finished since the latest start/resume, and
   decided again in each claim's transaction; max_fail_percentage once a wave's turns are over).
   While a renewal of its node leases is late (NodeLocks.fresh: it is overloaded, or cut off from the
   journal) it claims nothing; a turn whose lease went stale abandons itself before its next side effect
   (provision.campaign.node) and its node, still active, is claimable at once by any controller.

Everything that more than one controller decides is decided in a journal transaction. A controller killed at
any moment leaves leases that expire; a controller that loses the journal stops claiming, lets the turns in
flight end (their writes fail; their leases expire and another controller re-observes those nodes) and
exits with JournalUnreachable.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from contextlib import suppress
from pathlib import Path
from typing import Any

from provision.campaign.catalog import file_digest
from provision.campaign.engine import Engine, Outcome, requested_outcome
from provision.campaign.node import NodeContext, process_node
from provision.campaign.waves import resolve_count
from provision.campaign.workers import Workers
from provision.errors import InputError
from provision.journal.campaigns import CampaignState, NodeState, SinceStart, WaveRecord, WaveState
from provision.journal.claims import Claims, NotDecided
from provision.journal.locks import LEASE_TTL_S, NodeLocks
from provision.journal.store import JournalError, JournalUnreachable

LOG = logging.getLogger(__name__)

TAKEOVER_SETTLE_S = 5.0
"""A node taken over is first observed this long after the claim (at most half the lease): a request its previous
holder sent just before it was killed (an image upload, whose Task the BMC creates only once the upload is in)
has reached the BMC's TaskService by then, so the observation sees it instead of flashing the node again."""


class SharedEngine(Engine):
    """The campaign engine for a controller that shares the campaign with others."""

    def __init__(self, *args: object, lease_s: float = LEASE_TTL_S, settle_s: float | None = None,
                 clock: Callable[[], float] = time.time, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.lease_s = lease_s
        self.clock = clock
        """What the leases are measured with (the leader's and the nodes'; tests pass a fake one)."""
        self.settle_s = min(TAKEOVER_SETTLE_S, lease_s / 2) if settle_s is None else settle_s
        self.leader_seen = False
        """Whether this controller led at any moment (tests and the report)."""
        self._errors: list[BaseException] = []
        self._prepared: set[int] = set()

    # -- entry points ----------------------------------------------------------------------------------
    def start(self, source: Path, waves: list[list[str]]) -> Outcome:
        self.store.create(self.catalog.name, str(source), file_digest(source), waves)
        return self._shared("start")

    def join(self) -> Outcome:
        record = self.store.get(self.catalog.name)
        if record.state is not CampaignState.RUNNING:
            raise InputError(f"campaign {record.name} is {record.state}; join takes part in a running campaign "
                             "(resume it first)")
        return self._shared("join")

    def resume(self, retry_failed: bool = False) -> Outcome:
        record = self.store.get(self.catalog.name)
        if record.state in (CampaignState.DONE, CampaignState.ABORTED) and not retry_failed:
            raise InputError(f"campaign {record.name} is {record.state}; nothing to resume")
        if retry_failed:
            self.store.reset_failed(self.catalog.name)
        self.store.claim(self.catalog.name, os.getpid())
        return self._shared("resume")

    # -- the loop ----------------------------------------------------------------------------------------
    def _shared(self, how: str) -> Outcome:
        name, journal = self.catalog.name, self.store.journal
        claims = Claims(journal, name, ttl_s=self.lease_s, clock=self.clock)
        locks = NodeLocks(journal, ttl_s=self.lease_s, clock=self.clock)
        run_id = journal.start_run("campaign", name, {"how": how, "controller": claims.owner})
        ctx = NodeContext(self.catalog, self.store, run_id, self.updater, self._run_hook, poll_s=self.poll_s,
                          locks=locks)
        largest = max((len(w) for w in self.store.get(name).waves), default=1)
        inflight: dict[str, Future[object]] = {}
        lost: JournalUnreachable | None = None
        try:
            with Workers(min(self.catalog.policy.concurrency, largest), prefix="node") as pool:
                try:
                    self._loop(ctx, claims, locks, pool, inflight)
                except JournalUnreachable as exc:  # stop taking nodes; the turns in flight end below
                    lost = exc
                except KeyboardInterrupt:
                    wait(list(inflight.values()))
                    raise
                wait(list(inflight.values()))
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

    def _loop(self, ctx: NodeContext, claims: Claims, locks: NodeLocks, pool: Workers,
              inflight: dict[str, Future[object]]) -> None:
        name = self.catalog.name
        reachable = sorted(self.targets)
        budget = self._budget()
        while True:
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
                        self._decide(claims, f"campaign {state.value}", self.store.set_state, name, state, reason)
                    return
                time.sleep(self.poll_s)
                continue
            wave = next((w for w in self.store.waves(name) if w.state is not WaveState.DONE), None)
            if wave is None:
                if leading:
                    failed, _ = self.store.failed_count(name)
                    if self._decide(claims, "campaign done", self.store.set_state, name, CampaignState.DONE,
                                    f"{failed} node(s) failed" if failed else ""):
                        return
            elif wave.state is WaveState.GATE_FAILED:
                return
            elif wave.state is WaveState.PENDING:
                if leading:
                    stop = self._before_wave(wave.wave)
                    if stop:
                        if self._decide(claims, f"campaign {stop[0].value}", self.store.set_state, name, *stop):
                            return
                    elif self._decide(claims, f"wave {wave.wave} started", self.store.wave_state, name, wave.wave,
                                      WaveState.ACTIVE):
                        continue
            else:
                self._look_ahead(record.waves, wave.wave, pool.size)
                free = pool.size - len(inflight) if locks.fresh() else 0  # late renewals: take no new node
                for lease in claims.claim(wave.wave, reachable, free, budget, self._failures):
                    locks.adopt([lease])
                    inflight[lease.node] = pool.submit(lambda x: self._turn(ctx, x.node, x.previous), [lease])[0]
                if leading and not inflight:
                    self._close_wave(claims, wave)
            time.sleep(self.poll_s)

    def _look_ahead(self, waves: list[list[str]], wave: int, slots: int) -> None:
        """Once per wave: the next wave's BMCs this controller reaches are logged in to and observed while
        this wave waits on its hosts (provision.campaign.ahead), as the one-controller engine does."""
        if wave in self._prepared or wave + 1 >= len(waves):
            return
        self._prepared.add(wave)
        mine = [n for n in waves[wave] if n in self.targets]
        ahead = [self.targets[n] for n in waves[wave + 1] if n in self.targets]
        if ahead:
            self.updater.prepare(ahead, self.catalog.ordered(), after_turns=min(slots, len(mine)))

    def _budget(self) -> int | None:
        waves = self.catalog.policy.waves
        if waves.max_unavailable is None:
            return None
        total = len(self.store.nodes(self.catalog.name))
        return max(1, resolve_count(waves.max_unavailable, total, round_up=False))

    def _failures(self, count: SinceStart) -> str | None:
        """max_failures on the nodes finished since the latest start/resume, decided as nodes are claimed."""
        return self.catalog.policy.halt.failures_reason(count.failed, count.last_failed)

    def _any_active(self) -> bool:
        return any(n.state is NodeState.ACTIVE for n in self.store.nodes(self.catalog.name))

    def _turn(self, ctx: NodeContext, node: str, previous: str = "") -> None:
        """One node's turn; `previous`: the controller it was taken over from (gone, or fenced)."""
        name = self.catalog.name
        started = time.monotonic()
        try:
            target = self.targets[node]
            if previous:
                action = ctx.store.journal.action_started(ctx.run_id, node, "campaign", "take-over", previous)
                ctx.store.journal.action_finished(action, "ok", f"taken over from {previous}: its BMC's inventory "
                                                  f"and update tasks are read again, {self.settle_s:g} s from now, "
                                                  "before anything is sent")
                time.sleep(self.settle_s)  # a request the previous holder sent as it died reaches the BMC first
            with self.updater.session(target, afresh=bool(previous)):
                state = process_node(ctx, target)  # under the adopted lease; released as it ends
                if state is NodeState.DONE:
                    self.store.node_gated(name, node, self.gate.run([target], self.catalog))
            if state is NodeState.FAILED:  # halt now for everyone; every claim decides it again (Claims.claim)
                reason = self.catalog.policy.halt.failures_reason(self.store.since_start(name).failed, node)
                if reason:
                    self.store.halt(name, reason)
            if self._on_node is not None:
                self._on_node(self.store.node(name, node), time.monotonic() - started)
        except JournalError as exc:  # the journal is gone: this node's lease expires; another re-observes it
            self._errors.append(exc)
        except BaseException as exc:
            self._errors.append(exc)
            raise

    @staticmethod
    def _decide(claims: Claims, what: str, write: Callable[..., object], *args: Any) -> bool:
        """One leader decision, `write(*args, db=the transaction)`, written only while this controller's term is
        fresh and still the lease's (Claims.decide); False, and a line in the log, when it was not."""
        try:
            with claims.decide(what) as db:
                write(*args, db=db)
        except NotDecided as exc:
            LOG.warning("%s", exc)
            return False
        return True

    def _close_wave(self, claims: Claims, wave: WaveRecord) -> None:
        """The leader, once every node of the wave is finished: gate what nobody gated, then done or halt."""
        name = self.catalog.name
        nodes = self.store.nodes(name, wave.wave)
        if any(n.state in (NodeState.PENDING, NodeState.ACTIVE) for n in nodes) or not claims.fresh():
            return
        count = self.store.since_start(name)  # as the one-controller engine: after the wave's turns, before its gate
        too_many = self.catalog.policy.halt.share_reason(wave.wave, count.failed, count.finished)
        if too_many:
            self._decide(claims, "halt", self.store.halt, name, too_many)
            return
        problems: list[str] = []
        for n in nodes:
            if n.state is not NodeState.DONE:
                continue
            found = n.gate
            if found is None:
                if n.node in self.targets:
                    found = self.gate.run([self.targets[n.node]], self.catalog)
                    self.store.node_gated(name, n.node, found)
                else:
                    found = [f"{n.node}: not gated (its controller is gone and this one does not reach it)"]
            problems += found
        if problems:
            reason = f"health gate failed after wave {wave.wave}: {problems[0]}" + (
                f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")

            def failed(db: Any) -> None:
                self.store.wave_state(name, wave.wave, WaveState.GATE_FAILED, "; ".join(problems), db=db)
                self.store.halt(name, reason, db=db)
            self._decide(claims, f"wave {wave.wave}'s gate", failed)
            return
        self._decide(claims, f"wave {wave.wave} done", self.store.wave_state, name, wave.wave, WaveState.DONE, "ok")
