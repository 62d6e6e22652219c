"""The fake clock of the lease tests (tests/unit/conftest.py's `clock` fixture): time moves only when a test
moves it (`clock.now += 5`), so lease expiry and self-fencing are decided to the second, never by the machine's
load. Pass it as `clock=` to NodeLocks and Claims."""

from __future__ import annotations

START = 1_000_000.0


class FakeClock:
    def __init__(self, now: float = START) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
