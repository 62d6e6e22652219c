"""Several controllers on one campaign: the leader lease, and node claims that skip what another holds.

A controller claims nodes of the current wave in one transaction: it locks the campaign's row (FOR UPDATE:
the max-unavailable budget and the campaign's state are read and spent by one controller at a time), then
the wave's pending rows with `FOR UPDATE SKIP LOCKED` (rows another claim is taking are passed over, not
waited for), and gives each node it takes a node lease (provision.journal.locks: the same leases bring-up
holds, so a bring-up and a campaign never change one node at once). A lease is taken by compare-and-swap on
its row (insert when there is none, update only the stale token read), so two controllers never both win.

The leader lease is fenced as the node leases are (provision.journal.locks): every take of it is a new term
with a new token, a renewal is a compare-and-set on (owner, token) that fails once another took it, and the
leader decides nothing (a wave started, a gate's verdict, halt, done) once its lease has FENCE_SHARE of its TTL
or less left or its renewal failed. Each decision is written in `Claims.decide`'s transaction, which re-reads the
lease's token under its row lock: a leader stopped past its lease (GC, SIGSTOP) writes nothing once it wakes.

A node whose controller died stays `active` with a lease that nobody renews; when it has expired the node is
claimable again and its next turn starts by observing the BMC (provision.campaign.node), afresh (the lease
says whom it was taken over from: nothing observed before the claim is used), FirmwareInventory and the update
tasks (provision.campaign.evidence): nothing is flashed twice, nothing skipped. It still counts as
unavailable meanwhile (it may be mid-flash).

On SQLite every transaction holds the file's write lock, so the same claims, leases and leader serve the one
controller a SQLite journal has (one file on one machine; `campaign join` refuses it).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from provision.errors import ProvisionError
from provision.journal.campaigns import CampaignState, NodeState, SinceStart, since_start
from provision.journal.locks import FENCE_SHARE, Lease, alive, swap
from provision.journal.store import Journal

LEADER = "leader"


class NotDecided(ProvisionError):
    """A leader decision was not written: the campaign is no longer running, or (LeaderFenced) this
    controller no longer leads."""


class LeaderFenced(NotDecided):
    """This controller's leader lease was taken over, or is too old to decide on: nothing was written."""


class Claims:
    """One controller's leases on one campaign."""

    def __init__(self, journal: Journal, campaign: str, ttl_s: float, clock: Callable[[], float] = time.time) -> None:
        self.journal, self.campaign, self.ttl_s, self.clock = journal, campaign, ttl_s, clock
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.token = uuid.uuid4().hex
        self.owner = f"campaign {campaign} controller {self.host}:{self.pid}/{self.token[:6]}"
        self.term: str | None = None
        """The token of this controller's current term as the leader (None: not leading); every take is a new one."""
        self.expires_at = 0.0
        """When that term's lease expires unless renewed (as last written)."""

    def _stale(self, expires_at: float, host: str, pid: int, now: float) -> bool:
        return expires_at <= now or (host == self.host and pid != self.pid and not alive(pid))

    # -- the leader -------------------------------------------------------------------------------------
    def lead(self) -> bool:
        """Renew this controller's term when it holds one, else take the leader lease when free or expired (a
        new term, a new token); True when this controller leads now. A renewal is a compare-and-set on
        (owner, token): it fails, and this call says False, when another took the lease meanwhile."""
        now = self.clock()
        if self.term is not None and self.expires_at > now:
            term: str | None = self.term
            with self.journal.transaction() as db:
                cur = db.execute("UPDATE campaign_leases SET expires_at = ? WHERE campaign = ? AND role = ?"
                                 " AND owner = ? AND token = ?",
                                 (now + self.ttl_s, self.campaign, LEADER, self.owner, self.term))
                renewed = int(cur.rowcount) == 1
        else:
            term, renewed = uuid.uuid4().hex, False
            with self.journal.transaction() as db:
                renewed = self._take(db, term, now)
        self.term = term if renewed else None
        self.expires_at = now + self.ttl_s if renewed else 0.0
        return renewed

    def _take(self, db: Any, term: str, now: float) -> bool:
        row = db.execute("SELECT * FROM campaign_leases WHERE campaign = ? AND role = ?" +
                         self.journal.dialect.for_update(), (self.campaign, LEADER)).fetchone()
        values = (self.owner, term, self.pid, self.host, now, now + self.ttl_s, self.campaign, LEADER)
        if row is None:
            cur = db.execute("INSERT INTO campaign_leases(owner, token, pid, host, since, expires_at, campaign, role)"
                             " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (campaign, role) DO NOTHING", values)
        elif self._stale(row["expires_at"], row["host"], row["pid"], now):
            cur = db.execute("UPDATE campaign_leases SET owner = ?, token = ?, pid = ?, host = ?, since = ?,"
                             " expires_at = ? WHERE campaign = ? AND role = ? AND token = ?", (*values, row["token"]))
        else:
            return False
        return int(cur.rowcount) == 1

    def fresh(self) -> bool:
        """Whether this controller may decide as the leader: it holds a term whose lease has more than
        FENCE_SHARE of its TTL left (a renewal failed, or none succeeded for half a TTL: it decides nothing)."""
        return self.term is not None and self.expires_at - self.clock() > self.ttl_s * FENCE_SHARE

    @contextmanager
    def decide(self, what: str) -> Iterator[Any]:
        """A transaction for one leader decision (a wave started, a gate's verdict, halt, done): NotDecided,
        and nothing written, unless this controller's term is fresh, still the lease's token in the journal
        (read under its row lock, so no other controller takes the lease until the decision is in) and the
        campaign still running. A leader paused past its lease (GC, SIGSTOP) decides nothing once it wakes."""
        if not self.fresh():
            raise LeaderFenced(f"campaign {self.campaign}: {what} not decided: this controller's leader lease is "
                               "not renewed within half its TTL")
        dialect = self.journal.dialect
        with self.journal.transaction(exclusive=False) as db:
            row = db.execute("SELECT owner, token FROM campaign_leases WHERE campaign = ? AND role = ?" +
                             dialect.for_update(), (self.campaign, LEADER)).fetchone()
            if row is None or row["token"] != self.term or row["owner"] != self.owner:
                self.term = None
                raise LeaderFenced(f"campaign {self.campaign}: {what} not decided: another controller took the "
                                   "leader lease")
            camp = db.execute("SELECT state FROM campaigns WHERE name = ?" + dialect.for_update(),
                              (self.campaign,)).fetchone()
            if camp is None or camp["state"] != CampaignState.RUNNING.value:
                raise NotDecided(f"campaign {self.campaign}: {what} not decided: the campaign is "
                                 f"{camp['state'] if camp else 'gone'}")
            if not self.fresh():  # the row locks were waited for
                raise LeaderFenced(f"campaign {self.campaign}: {what} not decided: the leader lease went stale")
            yield db

    def leader(self) -> str | None:
        """Who leads now (None: nobody, or a lease expired)."""
        rows = self.journal.query("SELECT * FROM campaign_leases WHERE campaign = ? AND role = ?",
                                  (self.campaign, LEADER))
        if not rows or self._stale(rows[0]["expires_at"], rows[0]["host"], rows[0]["pid"], self.clock()):
            return None
        return str(rows[0]["owner"])

    def resign(self) -> None:
        if self.term is not None:
            self.journal.execute("DELETE FROM campaign_leases WHERE campaign = ? AND role = ? AND token = ?",
                                 (self.campaign, LEADER, self.term))
        self.term = None

    # -- node claims -------------------------------------------------------------------------------------
    def claim(self, wave: int, reachable: Sequence[str], limit: int, max_unavailable: int | None,
              halt_if: Callable[[SinceStart], str | None] | None = None) -> list[Lease]:
        """Up to `limit` nodes of `wave` among `reachable`, pending or stranded (active, lease stale), as leases
        of this controller; none while the campaign is not running or a pause/abort is asked.

        A pending node is taken only while the campaign's unavailable nodes (active, stranded ones included, and
        those failed since its latest start/resume) are fewer than `max_unavailable` (WavePolicy.budget; None:
        no cap). A pending node whose lease another run holds (a bring-up, another campaign) is claimed with that
        holder's lease, not one of this controller's: its turn is refused naming the holder
        (provision.campaign.node). Decided under the campaign's row lock, a reason to halt halts the campaign in
        this transaction and nothing is claimed: `halt_if` (the halt policy on the nodes finished since the
        latest start/resume), or failed nodes alone spending max_unavailable while nodes are still pending."""
        if limit <= 0 or not reachable:
            return []
        dialect, now = self.journal.dialect, self.clock()
        marks = ", ".join("?" for _ in reachable)
        with self.journal.transaction(exclusive=False) as db:
            camp = db.execute("SELECT state, request FROM campaigns WHERE name = ?" + dialect.for_update(),
                              (self.campaign,)).fetchone()
            if camp is None or camp["state"] != CampaignState.RUNNING.value or camp["request"]:
                return []
            count = since_start(lambda q, p: db.execute(q, p).fetchall(), self.campaign)
            reason = (None if halt_if is None else halt_if(count)) or self._spent(db, max_unavailable, count.failed)
            if reason:
                db.execute("UPDATE campaigns SET state = ?, reason = ?, updated_at = ? WHERE name = ?",
                           (CampaignState.HALTED, reason, time.time(), self.campaign))
                return []
            unavailable = count.failed + int(db.execute(
                "SELECT COUNT(*) FROM campaign_nodes WHERE campaign = ? AND state = ?",
                (self.campaign, NodeState.ACTIVE)).fetchone()[0])
            rows = db.execute(
                f"SELECT node, state, controller FROM campaign_nodes WHERE campaign = ? AND wave = ?"
                f" AND state IN (?, ?) AND node IN ({marks}) ORDER BY node" + dialect.skip_locked(),
                (self.campaign, wave, NodeState.PENDING, NodeState.ACTIVE, *reachable)).fetchall()
            if not rows:
                return []
            names = [r["node"] for r in rows]
            held = {r["node"]: r for r in db.execute(
                f"SELECT * FROM node_locks WHERE node IN ({', '.join('?' for _ in names)})", tuple(names)).fetchall()}
            token = uuid.uuid4().hex
            taken: list[Lease] = []
            for row in rows:
                if len(taken) >= limit:
                    break
                node, pending = row["node"], row["state"] == NodeState.PENDING.value
                if pending and max_unavailable is not None and unavailable >= max_unavailable:
                    continue  # a stranded node (already counted) may still be taken
                old = held.get(node)
                if old is not None and not self._stale(old["expires_at"], old["host"], old["pid"], now):
                    if not pending or str(old["owner"]).startswith(f"campaign {self.campaign} controller "):
                        continue  # another controller's turn
                    self._started(db, node)  # another run (a bring-up) holds it: its turn is refused, naming it
                    unavailable += 1
                    taken.append(Lease(**dict(old)))
                    continue
                lease = Lease(node=node, owner=self.owner, token=token, pid=self.pid, host=self.host, since=now,
                              expires_at=now + self.ttl_s,
                              previous="" if pending else str(row["controller"] or "a controller gone"),
                              previous_until=None if pending or old is None else float(old["expires_at"]))
                if not swap(db, lease, None if old is None else str(old["token"])):
                    continue
                self._started(db, node)
                unavailable += pending
                taken.append(lease)
            return taken

    def _started(self, db: Any, node: str) -> None:
        db.execute("UPDATE campaign_nodes SET state = ?, controller = ?, started_at = COALESCE(started_at, ?)"
                   " WHERE campaign = ? AND node = ?",  # the turn begins at its claim
                   (NodeState.ACTIVE, self.owner, time.time(), self.campaign, node))

    def _spent(self, db: Any, max_unavailable: int | None, failed: int) -> str | None:
        """Why the campaign halts now: the nodes failed since its latest start/resume alone use the whole
        max-unavailable budget while nodes are still pending (none could ever be taken), or None."""
        if max_unavailable is None or failed < max_unavailable:
            return None
        pending = int(db.execute("SELECT COUNT(*) FROM campaign_nodes WHERE campaign = ? AND state = ?",
                                 (self.campaign, NodeState.PENDING)).fetchone()[0])
        if not pending:
            return None
        return (f"{failed} failed node(s) stay unavailable: max_unavailable {max_unavailable} is spent "
                f"with {pending} node(s) pending")
