"""Learned waits: Durations keeps the shortest time seen; a power wait settles before its first poll."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from provision.redfish.ops import power
from provision.redfish.ops.waiting import Clock, Durations

# PowerState over (fake) time after a PowerCycle: as the lab simulator steps it at speed 3
TIMELINE = [(0.1, "On"), (1.0, "PoweringOff"), (1.17, "Off"), (2.83, "PoweringOn")]


@dataclass
class FakeTime:
    t: float = 0.0
    gets: list[float] = field(default_factory=list)

    def sleep(self, s: float) -> None:
        self.t += s

    def state(self) -> str:
        return next((s for until, s in TIMELINE if self.t < until), "On")


def _node(ft: FakeTime) -> Any:
    def get(uri: str) -> dict[str, str]:
        ft.gets.append(ft.t)
        return {"@odata.id": uri, "PowerState": ft.state()}

    conn = SimpleNamespace(get=get, opts=SimpleNamespace(where="bmc01"), waiting=lambda seconds: nullcontext())
    return SimpleNamespace(conn=conn, system=SimpleNamespace(uri="/redfish/v1/Systems/1"))


@pytest.mark.parametrize(("first_poll_at", "seen_on_at", "polls_for_on"), [
    (0.0, 3.0, 5),    # no learning: every poll_s from the moment the host left On (0.5 ... 3.0)
    (2.9, 2.9, 1),    # learned: one poll, just after the end
    (2.5, 3.0, 2),    # learned a little short: the next poll_s
])
def test_a_power_wait_first_polls_when_it_settles(first_poll_at: float, seen_on_at: float, polls_for_on: int) -> None:
    ft = FakeTime()
    clock = Clock(poll_s=0.5, sleep=ft.sleep, now=lambda: ft.t)
    act = power.PowerAction(reset_type="PowerCycle", expect="On")
    assert power.wait_power(_node(ft), act, clock, timeout_s=60, first_poll_at=first_poll_at) == "On"
    assert ft.t == pytest.approx(seen_on_at)
    left_on = next(t for t in ft.gets if t >= 0.1)
    assert len([t for t in ft.gets if t > left_on]) == polls_for_on


def test_durations_keep_the_shortest_per_kind() -> None:
    d = Durations()
    assert d.expected("bmc") == 0.0
    for took in (23.4, 21.9, 30.0):
        d.seen("bmc", took)
    d.seen("host reset", 3.1)
    assert (d.expected("bmc"), d.expected("host reset"), d.expected("bios")) == (21.9, 3.1, 0.0)
