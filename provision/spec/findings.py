"""What `spec validate` reports about a profile past its schema: one finding per key (pure data)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    ERROR = "error"
    """The spec cannot be true (exit 2)."""
    FINDING = "finding"
    """A figure of the profile differs from its part's data sheet, or the power budget does not hold: reported,
    and `spec validate` still exits 0 (with --strict, 1)."""
    WARNING = "warning"
    """Something could not be judged (a part not in the table), or is unused."""


@dataclass(frozen=True)
class Finding:
    severity: Severity
    key: str  # under the profile, e.g. memory.channels_per_socket
    message: str
