"""Per-node leases in the journal: one holder at a time may change a node.

A lease row names its holder (owner, pid, host, since) and expires `ttl_s` after it was last renewed;
a thread renews every lease this process holds while it runs, and the lease is deleted on exit, error or
not. A lease is taken over when it has expired, or at once when its holder ran on this host and that
process is gone (killed with -9: nothing released it). Taking several nodes is all or none, in one
transaction under the journal's writer lock (SQLite's BEGIN IMMEDIATE, PostgreSQL's advisory lock), so two
processes never both win, on one machine or, with a PostgreSQL journal, on several.

A holder fences itself: it sends nothing to a node (an update, a reset, a BIOS write) once its lease there has
less than FENCE_SHARE of its TTL left, i.e. once its last successful renewal is older than half the TTL
(`check`, called right before each side effect). Another holder takes the node over only after the full TTL,
so a live holder whose renewer was starved (a loaded machine) or which lost the journal has stopped acting
on the node half a TTL before anyone else may start; the hosts' clocks must agree to better than that.

A SQLite journal was never tried across hosts sharing one file over a network filesystem: SQLite's locking there is
only as good as the filesystem's, and a dead holder on another host is known only by its lease expiring.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from provision.errors import ProvisionError
from provision.journal.store import Journal

LEASE_TTL_S = 60.0
RENEW_SHARE = 0.2
"""The renewer runs every RENEW_SHARE of the TTL ..."""
FENCE_SHARE = 0.5
"""... and a holder acts on a node only while its lease there has more than FENCE_SHARE of the TTL left."""


class NodeLocked(ProvisionError):
    """Another run holds the node's lease; nothing was done to the node."""


class LeaseStale(NodeLocked):
    """This run's lease on the node was taken over, or is too old to act on: nothing more was sent to the node."""


class Lease(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    owner: str
    token: str = Field(exclude=True)
    """Which holder this is (never shown: it is what releases the lease)."""
    pid: int
    host: str
    since: float
    expires_at: float
    previous: str = Field(default="", exclude=True)
    """Who had the node before, when a campaign claim took it over from a controller gone or fenced ('' for a
    node nobody had taken): its next turn must read the BMC afresh, nothing observed before the claim."""
    previous_until: float | None = Field(default=None, exclude=True)
    """With `previous`: when that holder's lease ran out (None: it had released it), the latest moment it could
    have sent the BMC a request."""

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"{self.owner} (pid {self.pid} on {self.host}, since {since})"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def swap(db: Any, lease: Lease, old_token: str | None) -> bool:
    """Write `lease` only if the node's lease row is still the one read (`old_token`; None: no row)."""
    values = (lease.owner, lease.token, lease.pid, lease.host, lease.since, lease.expires_at)
    if old_token is None:
        cur = db.execute("INSERT INTO node_locks(owner, token, pid, host, since, expires_at, node)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (node) DO NOTHING", (*values, lease.node))
    else:
        cur = db.execute("UPDATE node_locks SET owner = ?, token = ?, pid = ?, host = ?, since = ?, expires_at = ?"
                         " WHERE node = ? AND token = ?", (*values, lease.node, old_token))
    return int(cur.rowcount) == 1


class NodeLocks:
    """Take, renew and release node leases in one journal; one renewer thread for all this object holds."""

    def __init__(self, journal: Journal, ttl_s: float = LEASE_TTL_S, clock: Callable[[], float] = time.time) -> None:
        self.journal = journal
        self.ttl_s = ttl_s
        self.clock = clock
        self.host = socket.gethostname()
        self._held: dict[str, Lease] = {}  # node -> our lease
        self._lost: set[str] = set()
        self._lost_at: float | None = None  # when a renewal last found a lease taken over
        self._mutex = threading.Lock()
        self._renewer: tuple[threading.Thread, threading.Event] | None = None

    # -- reading ------------------------------------------------------------------------------------
    def held(self) -> list[Lease]:
        """Every lease in the journal that is still live (not expired, holder not known dead)."""
        now = self.clock()
        rows = [Lease(**dict(r)) for r in self.journal.query("SELECT * FROM node_locks ORDER BY node")]
        return [lease for lease in rows if not self._stale(lease, now)]

    def _stale(self, lease: Lease, now: float) -> bool:
        return lease.expires_at <= now or (lease.host == self.host and not alive(lease.pid))

    # -- taking and giving back ---------------------------------------------------------------------------
    def take(self, nodes: Sequence[str], owner: str) -> list[Lease]:
        """Leases on every node, or NodeLocked naming the holder of the first one held by someone else."""
        now = self.clock()
        token = uuid.uuid4().hex
        leases = [Lease(node=n, owner=owner, token=token, pid=os.getpid(), host=self.host, since=now,
                        expires_at=now + self.ttl_s) for n in dict.fromkeys(nodes)]
        with self.journal.transaction() as db:
            stale: dict[str, str | None] = {}
            for lease in leases:
                row = db.execute("SELECT * FROM node_locks WHERE node = ?", (lease.node,)).fetchone()
                if row is not None and not self._stale(current := Lease(**dict(row)), now):
                    raise NodeLocked(f"{lease.node}: locked by {current.describe()}; "
                                     "it is released when that run ends, or expires if it died")
                stale[lease.node] = None if row is None else str(row["token"])
            for lease in leases:  # compare-and-swap: a campaign controller's claim (no writer lock) may race
                if not swap(db, lease, stale[lease.node]):
                    raise NodeLocked(f"{lease.node}: taken by another run meanwhile")
        with self._mutex:
            self._held.update({lease.node: lease for lease in leases})
            self._lost.difference_update(lease.node for lease in leases)
        return leases

    def adopt(self, leases: Sequence[Lease]) -> None:
        """Leases taken elsewhere for this process (a campaign controller's claims): renewed from now on."""
        with self._mutex:
            self._held.update({lease.node: lease for lease in leases})
            self._lost.difference_update(lease.node for lease in leases)
        self._start_renewer()

    def holds(self, node: str) -> bool:
        with self._mutex:
            return node in self._held

    def release(self, leases: Sequence[Lease]) -> None:
        with self._mutex:
            for lease in leases:
                mine = self._held.get(lease.node)
                if mine is not None and mine.token == lease.token:
                    del self._held[lease.node]
        for lease in leases:
            self.journal.execute("DELETE FROM node_locks WHERE node = ? AND token = ?", (lease.node, lease.token))

    def renew(self) -> list[str]:
        """Push back the expiry of every lease held; returns the nodes whose lease was taken over meanwhile."""
        with self._mutex:
            held = list(self._held.values())
        expires = self.clock() + self.ttl_s
        lost = []
        with self.journal.transaction() as db:  # all in one transaction: one round trip per lease, one commit
            for lease in held:
                cur = db.execute("UPDATE node_locks SET expires_at = ? WHERE node = ? AND token = ?",
                                 (expires, lease.node, lease.token))
                if cur.rowcount == 0:
                    lost.append(lease.node)
        with self._mutex:
            for lease in held:  # the expiry now written is what check() measures against
                mine = self._held.get(lease.node)
                if lease.node not in lost and mine is not None and mine.token == lease.token:
                    self._held[lease.node] = mine.model_copy(update={"expires_at": expires})
            for node in lost:
                self._held.pop(node, None)
            self._lost.update(lost)
            if lost:
                self._lost_at = self.clock()
        return lost

    def check(self, node: str, what: str = "the next change") -> None:
        """Right before a side effect on `node`: LeaseStale when this process's lease there was taken over, or
        was last renewed longer ago than (1 - FENCE_SHARE) of the TTL (its renewer starved, or the journal is
        unreachable): the holder sends nothing more and leaves the node to the next holder."""
        now = self.clock()
        with self._mutex:
            lost, lease = node in self._lost, self._held.get(node)
        if lost or lease is None:
            raise LeaseStale(f"{node}: this run's lease was taken over by another (not renewed within "
                             f"{self.ttl_s:g} s); {what} not sent")
        left = lease.expires_at - now
        if left <= self.ttl_s * FENCE_SHARE:
            raise LeaseStale(f"{node}: this run's lease was last renewed {self.ttl_s - left:.1f} s ago, more than "
                             f"{self.ttl_s * (1 - FENCE_SHARE):g} s of its {self.ttl_s:g} s TTL (renewals late or "
                             f"the journal unreachable); {what} not sent, the node is left to its next holder")

    def fresh(self) -> bool:
        """Whether every lease held can still be acted on and none was lost in the last TTL: a campaign
        controller takes no new node while this is False (it is overloaded, or cut off from the journal)."""
        now = self.clock()
        with self._mutex:
            if self._lost_at is not None and now - self._lost_at < self.ttl_s:
                return False
            return all(lease.expires_at - now > self.ttl_s * FENCE_SHARE for lease in self._held.values())

    @contextmanager
    def hold(self, nodes: Sequence[str], owner: str) -> Iterator[list[Lease]]:
        """Leases on `nodes` for the duration of the block, renewed meanwhile, released however it ends.
        Nodes this object already holds (adopted claims) are not taken again; they are released too."""
        with self._mutex:
            mine = [self._held[n] for n in nodes if n in self._held]
        leases = mine + (self.take([n for n in nodes if n not in {x.node for x in mine}], owner)
                         if len(mine) < len(set(nodes)) else [])
        self._start_renewer()
        try:
            yield leases
        finally:
            self.release(leases)
            self._stop_renewer_when_idle()

    # -- the renewer ------------------------------------------------------------------------------------
    def _start_renewer(self) -> None:
        with self._mutex:
            if self._renewer is not None:
                return
            stop = threading.Event()
            thread = threading.Thread(target=self._renew_loop, args=(stop,), name="lease-renewer", daemon=True)
            self._renewer = (thread, stop)
        thread.start()

    def _renew_loop(self, stop: threading.Event) -> None:
        errors: tuple[type[BaseException], ...] = (ProvisionError, *self.journal.dialect.errors)
        while not stop.wait(self.ttl_s * RENEW_SHARE):
            try:
                self.renew()
            except errors:  # the journal is busy, closing or unreachable: again at the next tick
                continue

    def _stop_renewer_when_idle(self) -> None:
        with self._mutex:
            if self._held or self._renewer is None:
                return
            (thread, stop), self._renewer = self._renewer, None
        stop.set()
        thread.join()
