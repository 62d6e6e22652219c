"""Retry policy: exponential backoff with jitter, Retry-After honoured (capped)."""

from __future__ import annotations

import random
from collections.abc import Callable
from email.utils import parsedate_to_datetime

from pydantic import BaseModel, ConfigDict, Field

RETRY_STATUSES = frozenset({500, 502, 503, 504})


class RetryPolicy(BaseModel):
    """How hard the connector tries before giving up on one request."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    attempts: int = Field(default=5, ge=1, description="Tries per request, the first included")
    base_delay_s: float = Field(default=0.5, ge=0)
    max_delay_s: float = Field(default=20.0, ge=0)
    jitter: float = Field(default=0.25, ge=0, le=1, description="Fraction of the delay randomised")
    timeout_s: float = Field(default=30.0, gt=0, description="Per-request connect+read timeout")

    def delay(self, attempt: int, retry_after: str | None = None, rng: Callable[[], float] = random.random) -> float:
        """Seconds to wait before try number attempt+1 (attempt counts from 1)."""
        hinted = parse_retry_after(retry_after)
        if hinted is not None:
            return min(hinted, self.max_delay_s)
        raw = min(self.base_delay_s * (2 ** (attempt - 1)), self.max_delay_s)
        return max(0.0, raw * (1 - self.jitter + 2 * self.jitter * rng()))


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        from datetime import UTC, datetime

        when = parsedate_to_datetime(value)
        return max(0.0, (when - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError):
        return None
