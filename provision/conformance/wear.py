"""The journal half of the NVMe endurance projection: read the node's kept readings, project, keep today's.

Runs after the node-side checks (as the BMC checks do), so evaluation itself stays pure. Like the SEL
window (provision.conformance.since), verify never creates a journal: without one (bring-up creates it)
the projection says so in its detail and nothing is kept.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from provision.conformance.checks._base import Context
from provision.conformance.checks.nvme import project_endurance
from provision.conformance.model import Level
from provision.errors import ProvisionError

if TYPE_CHECKING:
    from provision.journal.location import Location


def keep_wear(ctx: Context, journal_path: Path | Location | None = None, now: float | None = None) -> None:
    """Project every drive's endurance date from the journal's readings and keep today's there."""
    from provision.journal.location import recorded, resolve
    from provision.journal.store import Journal
    from provision.journal.wear import readings, record_readings

    if ctx.level is Level.QUICK:
        return
    when = time.time() if now is None else now
    location = resolve(journal_path)
    path = location.shown
    if not recorded(location):
        project_endurance(ctx, [], when, f"no journal at {path} (bring-up creates it): readings are not kept")
        return
    try:
        journal = Journal(journal_path)
    except ProvisionError as exc:
        project_endurance(ctx, [], when, f"journal {path} unusable ({exc}): readings are not kept")
        return
    with journal:
        today = project_endurance(ctx, readings(journal, ctx.node), when)
        record_readings(journal, today)
