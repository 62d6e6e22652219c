"""Platform identities as read from nodes' BMCs: one row per reading (`bmc inventory`, preflight, a firmware
plan), so the journal shows what a node was when a profile or an image was judged against it, and when its
board, BMC or firmware changed."""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict

from provision.journal.store import Journal
from provision.spec.platforms import PlatformIdentity


class IdentityReading(BaseModel):
    """One reading of a node's identity: when (epoch seconds), by what command, and what it was."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    at: float
    source: str
    identity: PlatformIdentity


def record_identity(journal: Journal, node: str, identity: PlatformIdentity, source: str,
                    at: float | None = None) -> IdentityReading:
    """Keep one reading (one transaction)."""
    reading = IdentityReading(node=node, at=time.time() if at is None else at, source=source, identity=identity)
    journal.execute("INSERT INTO platform_identities(node, at, source, identity) VALUES (?, ?, ?, ?)",
                    (node, reading.at, source, identity.model_dump_json()))
    return reading


def identities(journal: Journal, node: str) -> list[IdentityReading]:
    """Every reading kept for the node, oldest first."""
    rows = journal.query("SELECT node, at, source, identity FROM platform_identities WHERE node = ? "
                         "ORDER BY at, id", (node,))
    return [IdentityReading(node=r["node"], at=r["at"], source=r["source"],
                            identity=PlatformIdentity.model_validate_json(r["identity"])) for r in rows]
