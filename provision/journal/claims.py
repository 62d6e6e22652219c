"""Several controllers on one campaign: the leader lease, and node claims that skip what another holds.

A controller claims nodes of the current wave in one transaction: it locks the campaign's row (FOR UPDATE:
the max-unavailable budget and the campaign's state are read and spent by one controller at a time), then
the wave's pending rows with `FOR UPDATE SKIP LOCKED` (rows another claim is taking are passed over, not
waited for), and gives each node it takes a node lease (provision.journal.locks: the same leases bring-up
holds, so a bring-up and a campaign never change one node at once). A lease is taken by compare-and-swap on
its row (insert when there is none, update only the stale token read), so two controllers never both win.

A node whose controller died stays `active` with a lease that nobody renews; when it has expired the node is
claimable again and its next turn starts by observing the BMC (provision.campaign.node), afresh (the lease
says whom it was taken over from: nothing observed before the claim is used), FirmwareInventory and the update
tasks (provision.campaign.evidence): nothing is flashed twice, nothing skipped. It still counts as
unavailable meanwhile (it may be mid-flash).

On SQLite every transaction holds the file's write lock, so these claims are correct there too; but one file
on one machine serves one controller, and `campaign join` refuses a SQLite journal.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence

from provision.journal.campaigns import CampaignState, NodeState, SinceStart, since_start
from provision.journal.locks import Lease, alive, swap
from provision.journal.store import Journal

LEADER = "leader"


class Claims:
    """One controller's leases on one campaign."""

    def __init__(self, journal: Journal, campaign: str, ttl_s: float, clock: Callable[[], float] = time.time) -> None:
        self.journal, self.campaign, self.ttl_s, self.clock = journal, campaign, ttl_s, clock
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.token = uuid.uuid4().hex
        self.owner = f"campaign {campaign} controller {self.host}:{self.pid}/{self.token[:6]}"

    def _stale(self, expires_at: float, host: str, pid: int, now: float) -> bool:
        return expires_at <= now or (host == self.host and pid != self.pid and not alive(pid))

    # -- the leader -------------------------------------------------------------------------------------
    def lead(self) -> bool:
        """Take the leader lease when free or expired, renew it when ours; True when this controller leads."""
        now = self.clock()
        with self.journal.transaction() as db:
            row = db.execute("SELECT * FROM campaign_leases WHERE campaign = ? AND role = ?" +
                             self.journal.dialect.for_update(), (self.campaign, LEADER)).fetchone()
            if row is None:
                db.execute("INSERT INTO campaign_leases(campaign, role, owner, token, pid, host, since, expires_at)"
                           " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (self.campaign, LEADER, self.owner, self.token, self.pid, self.host, now, now + self.ttl_s))
                return True
            if row["token"] != self.token and not self._stale(row["expires_at"], row["host"], row["pid"], now):
                return False
            since = row["since"] if row["token"] == self.token else now
            db.execute("UPDATE campaign_leases SET owner = ?, token = ?, pid = ?, host = ?, since = ?, expires_at = ?"
                       " WHERE campaign = ? AND role = ?",
                       (self.owner, self.token, self.pid, self.host, since, now + self.ttl_s, self.campaign, LEADER))
            return True

    def leader(self) -> str | None:
        """Who leads now (None: nobody, or a lease expired)."""
        rows = self.journal.query("SELECT * FROM campaign_leases WHERE campaign = ? AND role = ?",
                                  (self.campaign, LEADER))
        if not rows or self._stale(rows[0]["expires_at"], rows[0]["host"], rows[0]["pid"], self.clock()):
            return None
        return str(rows[0]["owner"])

    def resign(self) -> None:
        self.journal.execute("DELETE FROM campaign_leases WHERE campaign = ? AND role = ? AND token = ?",
                             (self.campaign, LEADER, self.token))

    # -- node claims -------------------------------------------------------------------------------------
    def claim(self, wave: int, reachable: Sequence[str], limit: int, max_unavailable: int | None,
              halt_if: Callable[[SinceStart], str | None] | None = None) -> list[Lease]:
        """Up to `limit` nodes of `wave` among `reachable`, pending or stranded (active, lease stale), as leases
        of this controller; none while the campaign is not running or a pause/abort is asked. `halt_if` (the
        halt policy on the nodes finished since the latest start/resume) is decided under the campaign's row
        lock: a reason halts the campaign in this transaction and nothing is claimed."""
        if limit <= 0 or not reachable:
            return []
        dialect, now = self.journal.dialect, self.clock()
        marks = ", ".join("?" for _ in reachable)
        with self.journal.transaction(exclusive=False) as db:
            camp = db.execute("SELECT state, request FROM campaigns WHERE name = ?" + dialect.for_update(),
                              (self.campaign,)).fetchone()
            if camp is None or camp["state"] != CampaignState.RUNNING.value or camp["request"]:
                return []
            reason = None if halt_if is None else halt_if(since_start(lambda q, p: db.execute(q, p).fetchall(),
                                                                      self.campaign))
            if reason:
                db.execute("UPDATE campaigns SET state = ?, reason = ?, updated_at = ? WHERE name = ?",
                           (CampaignState.HALTED, reason, time.time(), self.campaign))
                return []
            active = int(db.execute("SELECT COUNT(*) FROM campaign_nodes WHERE campaign = ? AND state = ?",
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
                if pending and max_unavailable is not None and active >= max_unavailable:
                    continue  # a stranded node (already counted) may still be taken
                old = held.get(node)
                if old is not None and not self._stale(old["expires_at"], old["host"], old["pid"], now):
                    continue
                lease = Lease(node=node, owner=self.owner, token=token, pid=self.pid, host=self.host, since=now,
                              expires_at=now + self.ttl_s,
                              previous="" if pending else str(row["controller"] or "a controller gone"))
                if not swap(db, lease, None if old is None else str(old["token"])):
                    continue
                db.execute("UPDATE campaign_nodes SET state = ?, controller = ? WHERE campaign = ? AND node = ?",
                           (NodeState.ACTIVE, self.owner, self.campaign, node))
                active += pending
                taken.append(lease)
            return taken
