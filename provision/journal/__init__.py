"""The state journal: one embedded SQLite store for bring-up runs and firmware campaigns."""

from provision.journal.paths import default_path
from provision.journal.records import ActionRecord, RunRecord, StageRecord
from provision.journal.store import Journal

__all__ = ["ActionRecord", "Journal", "RunRecord", "StageRecord", "default_path"]
