"""Work for the next wave done while the wave at work waits on its BMCs and hosts (read-only).

While a wave flashes (the controller idles for tens of seconds), the next wave's BMCs are logged in
to, once the nodes now starting have sent their updates. While that wave's hosts power-cycle (idle
again, once each of its nodes has sent its host reset), the next wave's firmware is observed. A
turn then takes its connection and, when at most LOOKAHEAD_S old, that observation from here
instead of reading again at its start, when 250 nodes would read at once through one GIL. Older,
or never made, the turn reads as usual. Nothing here writes to a BMC.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from provision.campaign.updater import Target
from provision.errors import ProvisionError

C = TypeVar("C")  # a connection (a logged-in Node with what was read on login)
S = TypeVar("S")  # an observation (what was seen)

CONNECT_WORKERS = 2  # few: logging in must not compete with the nodes at work
OBSERVE_WORKERS = 4  # the hosts' power cycle is the window: seconds
WAIT_S = 60.0  # logging in waits (at most this long) until the nodes now starting have sent their updates
LOOKAHEAD_S = 10.0  # an observation made ahead is acted on at most this old
IDLE_POLL_S = 0.05


@dataclass
class Ahead(Generic[C, S]):
    """A connection made ahead of its node's turn, with what was observed through it (and when)."""

    conn: C
    observed: S | None = None
    observed_at: float = 0.0

    def fresh(self) -> S | None:
        return self.observed if time.monotonic() - self.observed_at <= LOOKAHEAD_S else None


@dataclass
class _Ledger(Generic[C, S]):
    """What the preparer made and handed out: connections ready per node, the nodes whose turn claimed theirs,
    its worker threads, the signal that stops them, and how many turns started."""

    ready: dict[str, Ahead[C, S]] = field(default_factory=dict)
    claimed: set[str] = field(default_factory=set)
    threads: list[threading.Thread] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    taken: int = 0  # turns started so far


class Preparer(Generic[C, S]):
    """Thread-safe. `connect(target)` logs in; `observe(conn)` reads; `close(conn)` logs out;
    `starting()`: a turn has not sent its first update yet; `resetting()`: every turn at work waits
    on its host's reset. Connect and observe raise ProvisionError (then the turn does it itself)."""

    def __init__(self, connect: Callable[[Target], C], observe: Callable[[C], S], close: Callable[[C], None],
                 starting: Callable[[], bool], resetting: Callable[[], bool]) -> None:
        self._connect, self._observe, self._close = connect, observe, close
        self._starting, self._resetting = starting, resetting
        self._ledger: _Ledger[C, S] = _Ledger()
        self._lock = threading.Lock()

    def prepare(self, targets: Sequence[Target], after_turns: int | None) -> None:
        """Start the background work for these nodes (best effort); they are observed only once
        `after_turns` more turns (the wave at work) have begun and all wait on their host's reset (None: every
        turn of the wave at work has begun already, as when the next wave was planned while it ran)."""
        with self._lock:
            todo = [t for t in targets if t.bmc is not None and t.name not in self._ledger.ready]
            self._ledger.claimed.difference_update(t.name for t in todo)
            taken = self._ledger.taken
        if todo:
            thread = threading.Thread(target=self._run, args=(todo, taken, after_turns), name="prepare", daemon=True)
            self._ledger.threads.append(thread)
            thread.start()

    def take(self, target: Target) -> Ahead[C, S] | None:
        """The node's turn starts: what was made ahead for it, if anything (never again after)."""
        with self._lock:
            self._ledger.claimed.add(target.name)
            self._ledger.taken += 1
            return self._ledger.ready.pop(target.name, None)

    def release(self) -> None:
        """Stop; log out of what no turn took."""
        self._ledger.stop.set()
        for thread in self._ledger.threads:
            thread.join()
        with self._lock:
            ready, self._ledger.ready = self._ledger.ready, {}
            self._ledger.threads.clear()
        for ahead in ready.values():
            self._close(ahead.conn)
        self._ledger.stop.clear()

    # -- the background work ----------------------------------------------------------------------
    def _run(self, todo: list[Target], taken: int, after_turns: int | None) -> None:
        names = {t.name for t in todo}
        begun = after_turns is None
        self._wait(lambda: (begun or self._ledger.taken != taken) and not self._starting(), WAIT_S)
        with ThreadPoolExecutor(max_workers=CONNECT_WORKERS, thread_name_prefix="prepare") as pool:
            list(pool.map(self._connect_one, todo))
        self._wait(lambda: self._waiting_on_hosts(taken + (after_turns or 0)) or self._taken_any(names), None)
        if self._ledger.stop.is_set() or self._taken_any(names):
            return  # their turns have begun: observing now would compete with them
        with ThreadPoolExecutor(max_workers=OBSERVE_WORKERS, thread_name_prefix="look-ahead") as pool:
            list(pool.map(self._observe_one, todo))

    def _wait(self, done: Callable[[], bool], limit_s: float | None) -> None:
        """Until `done()`, release() or `limit_s` (when given) passed."""
        deadline = None if limit_s is None else time.monotonic() + limit_s
        while not done() and not self._ledger.stop.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(IDLE_POLL_S)

    def _waiting_on_hosts(self, turns: int) -> bool:
        """`turns` turns have begun (none of the wave at work is left queued) and all wait on hosts."""
        return self._ledger.taken >= turns and self._resetting()

    def _taken_any(self, names: set[str]) -> bool:
        with self._lock:
            return bool(names & self._ledger.claimed)

    def _connect_one(self, target: Target) -> None:
        with self._lock:
            if self._unwanted(target):
                return
        try:
            conn = self._connect(target)
        except ProvisionError:
            return  # its turn connects (and reports) as usual
        if not self._keep(target, Ahead(conn)):
            self._close(conn)

    def _observe_one(self, target: Target) -> None:
        with self._lock:
            if self._unwanted(target):
                return
            ahead = self._ledger.ready.pop(target.name, None)  # in use here: a turn starting now connects itself
        if ahead is None:
            return
        try:
            ahead.observed, ahead.observed_at = self._observe(ahead.conn), time.monotonic()
        except ProvisionError:
            ahead.observed = None
        if not self._keep(target, ahead):
            self._close(ahead.conn)

    def _unwanted(self, target: Target) -> bool:
        """Stopped, or the node's turn has begun (call with the lock held)."""
        return self._ledger.stop.is_set() or target.name in self._ledger.claimed

    def _keep(self, target: Target, ahead: Ahead[C, S]) -> bool:
        with self._lock:
            if self._unwanted(target):
                return False
            self._ledger.ready[target.name] = ahead
            return True
