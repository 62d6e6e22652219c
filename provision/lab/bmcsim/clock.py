"""A simulated clock: durations are in simulated seconds, run `speed` times faster than real time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta


class SimClock:
    """Simulated time; `later` schedules a callback after simulated seconds on the running loop."""

    def __init__(self, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError("clock speed must be positive")
        self.speed = speed
        self._t0 = time.monotonic()
        self._wall0 = datetime.now(UTC)

    def now(self) -> float:
        """Simulated seconds since the simulator started."""
        return (time.monotonic() - self._t0) * self.speed

    def iso(self) -> str:
        """Simulated wall-clock time, ISO 8601 with offset."""
        when = self._wall0 + timedelta(seconds=self.now())
        return when.replace(microsecond=0).isoformat()

    def real(self, sim_seconds: float) -> float:
        return sim_seconds / self.speed

    def later(self, sim_seconds: float, callback: Callable[[], None]) -> asyncio.TimerHandle:
        loop = asyncio.get_running_loop()
        return loop.call_later(self.real(sim_seconds), callback)
