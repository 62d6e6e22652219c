"""When a node was last brought up, from the journal: the SEL check only counts entries after it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from provision.errors import ProvisionError

if TYPE_CHECKING:
    from provision.journal.location import Location


def last_bringup(node: str, journal_path: Path | Location | None = None) -> datetime | None:
    """Start of the node's most recent bring-up run; None when no journal or no bring-up is recorded.

    Never creates a journal: verify is read-only.
    """
    from provision.journal.location import recorded, resolve

    if not recorded(resolve(journal_path)):
        return None
    from provision.journal.store import Journal

    try:
        with Journal(journal_path, read_only=True) as journal:
            stages = journal.stages(node)
            bringups = {r.id for r in journal.runs(kind="bringup", limit=1000)}
    except ProvisionError:
        return None
    mine = [s for s in stages if s.run_id in bringups]
    if not mine:
        return None
    last_run = max(s.run_id for s in mine)
    started = min(s.started_at for s in mine if s.run_id == last_run)
    return datetime.fromtimestamp(started, tz=UTC)
