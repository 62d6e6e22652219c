"""Polling with a deadline: the one loop every wait in the Redfish layer uses."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from provision.redfish.errors import RedfishTimeout

T = TypeVar("T")


class Clock:
    """Time source and sleeper (tests pass a fast one)."""

    def __init__(self, poll_s: float = 1.0, sleep: Callable[[float], None] = time.sleep,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.poll_s = poll_s
        self.sleep = sleep
        self.now = now


def wait_for(probe: Callable[[], T | None], timeout_s: float, what: str, clock: Clock) -> T:
    """Call probe until it returns something (not None); RedfishTimeout naming `what` after timeout_s."""
    deadline = clock.now() + timeout_s
    while True:
        got = probe()
        if got is not None:
            return got
        if clock.now() >= deadline:
            raise RedfishTimeout(f"{what}: not done after {timeout_s:.0f}s")
        clock.sleep(clock.poll_s)


class Durations:
    """Thread-safe: the shortest time each kind of wait (a component's update task, a host reset) has
    taken. A later wait of that kind sleeps that long before its first poll: it then needs about one
    poll, and the end is seen within the detection latency of the fastest one so far rather than
    within a poll interval. The shortest, since every measurement includes its own detection delay
    and so is never shorter than the work itself."""

    def __init__(self) -> None:
        self._shortest: dict[str, float] = {}
        self._lock = threading.Lock()

    def expected(self, kind: str) -> float:
        """Seconds to wait before polling (0 until one was seen)."""
        with self._lock:
            return self._shortest.get(kind, 0.0)

    def seen(self, kind: str, took: float) -> None:
        with self._lock:
            self._shortest[kind] = min(took, self._shortest.get(kind, took))
