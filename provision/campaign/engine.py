"""The campaign engine: waves in order, a health gate between them, halt, pause, resume.

The gate of a wave is checked on each node as soon as it finishes (so it overlaps the rest of the
wave) and on any node of the wave finished by an earlier run; the next wave starts only when all passed.

State lives in the journal; the BMCs are the truth about firmware. A controller killed at
any moment is resumed with `resume`: finished waves are skipped, every other node is
observed again before anything is done to it (see provision.campaign.node).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provision.campaign.catalog import Catalog, file_digest
from provision.campaign.gates import GateRunner
from provision.campaign.hooks import run_hook
from provision.campaign.node import HookRunner, NodeContext, process_node
from provision.campaign.updater import NodeUpdater, Target
from provision.campaign.window import inside, next_opening
from provision.campaign.workers import Workers
from provision.errors import InputError
from provision.journal.campaigns import CampaignNode, CampaignState, CampaignStore, NodeState, Request, WaveState
from provision.journal.locks import NodeLocks


class Outcome(BaseModel):
    """How a start/resume ended."""

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


@dataclass
class _Tally:
    """Guards the turns' gate results and the halt decision. The halt thresholds count the nodes finished
    since the campaign's latest start/resume as the journal records them (CampaignStore.since_start), the
    count several controllers share (provision.campaign.shared)."""

    lock: threading.Lock = field(default_factory=threading.Lock)


class _RecentRequest:
    """The campaign's pause/abort request as read at most MAX_AGE_S ago: each node checks it before it
    starts, and a wave of 250 asking the journal at once queued them all behind its lock."""

    MAX_AGE_S = 0.25

    def __init__(self, store: CampaignStore, name: str) -> None:
        self._store, self._name = store, name
        self._read_at = -1.0
        self._value: Request | None = None
        self._lock = threading.Lock()

    def pending(self) -> Request | None:
        with self._lock:
            if time.monotonic() - self._read_at > self.MAX_AGE_S:
                self._value = self._store.pending_request(self._name)
                self._read_at = time.monotonic()
            return self._value


class Engine:
    def __init__(
        self,
        catalog: Catalog,
        store: CampaignStore,
        targets: dict[str, Target],
        updater: NodeUpdater,
        gate: GateRunner,
        *,
        run_hook: HookRunner = run_hook,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        poll_s: float = 2.0,
        on_node: Callable[[CampaignNode, float], None] | None = None,
    ) -> None:
        self.catalog = catalog
        self.store = store
        self.targets = targets
        self.updater = updater
        self.gate = gate
        self.now = now
        self.poll_s = poll_s
        self._run_hook = run_hook
        self._on_node = on_node  # (the node's record, seconds) as its turn ends: the CLI's event lines
        self._halt = threading.Event()
        self._halt_reason = ""
        self._gated: dict[str, list[str]] = {}
        self._pool: Workers | None = None
        self._requests = _RecentRequest(store, catalog.name)

    def _workers(self) -> Workers:
        """As many threads as the largest wave can use, started before its first wave."""
        name = self.catalog.name
        largest = max((len(self._todo(w.wave)) for w in self.store.waves(name)), default=1)
        self._pool = Workers(min(self.catalog.policy.concurrency, largest), prefix="node")
        return self._pool

    # -- entry points ------------------------------------------------------------------------
    def start(self, source: Path, waves: list[list[str]]) -> Outcome:
        """Create the campaign in the journal with its waves, then run it."""
        self.store.create(self.catalog.name, str(source), file_digest(source), waves)
        return self._drive("start")

    def resume(self, retry_failed: bool = False) -> Outcome:
        record = self.store.get(self.catalog.name)
        if record.state in (CampaignState.DONE, CampaignState.ABORTED) and not (
            retry_failed and record.state is CampaignState.DONE
        ):
            raise InputError(f"campaign {record.name} is {record.state}; nothing to resume")
        if retry_failed:
            self.store.reset_failed(self.catalog.name)
        return self._drive("resume")

    # -- the loop ---------------------------------------------------------------------------------
    def _drive(self, how: str) -> Outcome:
        name = self.catalog.name
        self._check_targets()
        self.store.claim(name, os.getpid())
        run_id = self.store.journal.start_run("campaign", name, {"how": how})
        ctx = NodeContext(self.catalog, self.store, run_id, self.updater, self._run_hook, poll_s=self.poll_s,
                          locks=NodeLocks(self.store.journal))
        tally = _Tally()
        try:
            with self._workers():
                state, reason = self._waves(ctx, tally)
        except KeyboardInterrupt:  # nodes in flight were finished; the rest stay pending
            self.store.set_state(name, CampaignState.PAUSED, "interrupted")
            self.store.journal.finish_run(run_id, "interrupted")
            raise
        finally:
            self.updater.release()
        self.store.set_state(name, state, reason)
        outcome = self.outcome(state, reason)
        self.store.journal.finish_run(run_id, state.value)
        return outcome

    def _waves(self, ctx: NodeContext, tally: _Tally) -> tuple[CampaignState, str]:
        name = self.catalog.name
        waves = [w for w in self.store.waves(name) if w.state is not WaveState.DONE]
        for i, wave in enumerate(waves):
            stop = self._before_wave(wave.wave)
            if stop:
                return stop
            self.store.wave_state(name, wave.wave, WaveState.ACTIVE)
            todo = self._todo(wave.wave)
            if i + 1 < len(waves):  # read-only work for the next wave while this one waits on its BMCs
                self.updater.prepare([self.targets[n] for n in self._todo(waves[i + 1].wave)], self.catalog.ordered(),
                                     after_turns=len(todo))
            self._run_wave(ctx, todo, tally)
            if self._halt.is_set():
                return CampaignState.HALTED, self._halt_reason
            request = self.store.pending_request(name)
            if request is not None and self._unfinished(wave.wave):
                return requested_outcome(request)
            stop = self._after_wave(wave.wave, tally)
            if stop:
                return stop
        failed = sum(1 for n in self.store.nodes(name) if n.state is NodeState.FAILED)
        return CampaignState.DONE, f"{failed} node(s) failed" if failed else ""

    def _before_wave(self, wave: int) -> tuple[CampaignState, str] | None:
        request = self.store.pending_request(self.catalog.name)
        if request is not None:
            return requested_outcome(request)
        window = self.catalog.policy.window
        moment = self.now()
        if not inside(window, moment):
            assert window is not None
            opens = next_opening(window, moment).isoformat(timespec="minutes")
            return CampaignState.PAUSED, f"outside the maintenance window before wave {wave}; opens {opens}"
        return None

    def _after_wave(self, wave: int, tally: _Tally) -> tuple[CampaignState, str] | None:
        name = self.catalog.name
        count = self.store.since_start(name)
        too_many = self.catalog.policy.halt.share_reason(wave, count.failed, count.finished)
        if too_many:
            return CampaignState.HALTED, too_many
        done = [n.node for n in self.store.nodes(name, wave) if n.state is NodeState.DONE]
        late = [self.targets[n] for n in done if n not in self._gated]  # e.g. done before a crash
        problems = [p for n in done if n in self._gated for p in self._gated[n]]
        problems += self.gate.run(late, self.catalog)
        if problems:
            self.store.wave_state(name, wave, WaveState.GATE_FAILED, "; ".join(problems))
            return CampaignState.HALTED, f"health gate failed after wave {wave}: {problems[0]}" + (
                f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            )
        self.store.wave_state(name, wave, WaveState.DONE, "ok")
        return None

    def _todo(self, wave: int) -> list[str]:
        return [n.node for n in self.store.nodes(self.catalog.name, wave)
                if n.state in (NodeState.PENDING, NodeState.ACTIVE)]

    def _run_wave(self, ctx: NodeContext, todo: list[str], tally: _Tally) -> None:
        if not todo:
            return
        assert self._pool is not None
        futures = self._pool.submit(lambda node: self._one(ctx, node, tally), todo)
        try:
            for future in futures:
                future.result()  # in order, as Executor.map; a bug in a node's turn surfaces here
        except KeyboardInterrupt:
            self._halt_reason = "interrupted"
            self._halt.set()  # queued nodes return at once; those in flight are waited for
            wait(futures)
            raise

    def _one(self, ctx: NodeContext, node: str, tally: _Tally) -> None:
        if self._halt.is_set() or self._requests.pending() is not None:
            return  # stays pending: a known state, taken up on resume
        target = self.targets[node]
        started = time.monotonic()
        with self.updater.session(target):
            state = process_node(ctx, target)
            if state is NodeState.DONE:  # gate each node as it finishes: the wave's gate overlaps its flashing
                found = self.gate.run([target], self.catalog)
                with tally.lock:
                    self._gated[node] = found
        if state is NodeState.ACTIVE:  # the turn fenced itself (its lease went stale): halt, resume re-reads it
            with tally.lock:
                if not self._halt.is_set():
                    self._halt_reason = f"{node}: turn abandoned (its node lease went stale); resume re-reads its BMC"
                    self._halt.set()
        if state is NodeState.FAILED:
            with tally.lock:
                count = self.store.since_start(self.catalog.name)
                reason = self.catalog.policy.halt.failures_reason(count.failed, node)
                if reason and not self._halt.is_set():
                    self._halt_reason = reason
                    self._halt.set()
        if self._on_node is not None:
            self._on_node(self.store.node(self.catalog.name, node), time.monotonic() - started)

    def _unfinished(self, wave: int) -> bool:
        return any(n.state in (NodeState.PENDING, NodeState.ACTIVE)
                   for n in self.store.nodes(self.catalog.name, wave))

    def _check_targets(self) -> None:
        planned = {n.node for n in self.store.nodes(self.catalog.name)}
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


HALTED_BY_REQUEST = "halted by request"


def requested_outcome(request: Request) -> tuple[CampaignState, str]:
    """The state and reason a pause, abort or halt request ends a campaign in (every engine and the CLI)."""
    if request is Request.ABORT:
        return CampaignState.ABORTED, "aborted by request"
    if request is Request.HALT:
        return CampaignState.HALTED, HALTED_BY_REQUEST
    return CampaignState.PAUSED, "paused by request"


def waves_for(nodes: Sequence[str], catalog: Catalog) -> list[list[str]]:
    from provision.campaign.waves import plan_waves

    return plan_waves(list(nodes), catalog.policy.waves)
