"""The state journal of bring-up runs and firmware campaigns: an embedded SQLite file (the default) or a
PostgreSQL database shared by several controllers (provision.journal.location)."""

from provision.journal.paths import default_path
from provision.journal.records import ActionRecord, RunRecord, StageRecord
from provision.journal.store import Journal

__all__ = ["ActionRecord", "Journal", "RunRecord", "StageRecord", "default_path"]
