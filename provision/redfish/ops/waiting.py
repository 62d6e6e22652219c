"""Polling with a deadline: the one loop every wait in the Redfish layer uses."""

from __future__ import annotations

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
