"""The deadline of one command's BMC requests: one bound shared by every thread, and waits that stand it still."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class Deadline:
    """When the current command's requests must be done (None: no deadline open)."""

    def __init__(self, default_s: float) -> None:
        self.default_s = default_s
        self.at: float | None = None
        self.length = default_s
        self._lock = threading.Lock()
        self._depth = 0

    @contextmanager
    def scope(self, seconds: float | None = None) -> Iterator[None]:
        """Bound everything inside (from every thread) to `seconds` (default `default_s`) in all; nested
        or concurrent uses share the first one's deadline."""
        with self._lock:
            if self._depth == 0:
                self.length = seconds or self.default_s
                self.at = time.monotonic() + self.length
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self.at = None

    @contextmanager
    def waiting(self, bound: float) -> Iterator[None]:
        """A wait with its own `bound`: the outer deadline stands still while it runs and the requests made
        meanwhile are bounded by `bound` instead. Outside any deadline it opens one of that length."""
        with self._lock:
            outer = self._depth > 0
            saved_len = self.length
            left = (self.at or 0.0) - time.monotonic()
            self._depth += 1
            self.at, self.length = time.monotonic() + bound, bound
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if outer:
                    self.at, self.length = time.monotonic() + left, saved_len
                else:
                    self.at = None

    def left(self) -> float | None:
        """Seconds left (<= 0 once passed); None without a deadline."""
        at = self.at
        return None if at is None else at - time.monotonic()
