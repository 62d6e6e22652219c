"""Maintenance windows as tables."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from provision.campaign.policy import Window
from provision.campaign.window import inside, next_opening

NIGHT = Window.model_validate({"start": "22:00", "end": "06:00", "days": ["mon", "tue", "wed", "thu", "fri"]})
DAY = Window.model_validate({"start": "09:00", "end": "17:00", "timezone": "Europe/Berlin"})


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("window", "moment", "expected"),
    [
        (None, "2026-11-30T12:00", True),
        (NIGHT, "2026-11-30T23:00", True),  # Monday night
        (NIGHT, "2026-12-01T05:59", True),  # Tuesday early morning belongs to Monday's window
        (NIGHT, "2026-12-01T06:00", False),
        (NIGHT, "2026-11-30T12:00", False),
        (NIGHT, "2026-12-05T23:00", False),  # Saturday
        (NIGHT, "2026-12-05T02:00", True),  # Saturday early morning: Friday's window
        (NIGHT, "2026-11-30T02:00", False),  # Monday early morning: Sunday has no window
        (DAY, "2026-11-30T08:30", True),  # 09:30 in Berlin
        (DAY, "2026-11-30T07:59", False),  # 08:59 in Berlin
        (DAY, "2026-11-30T16:00", False),  # 17:00 in Berlin
    ],
)
def test_inside(window: Window | None, moment: str, expected: bool) -> None:
    assert inside(window, at(moment)) is expected


def test_next_opening() -> None:
    assert next_opening(NIGHT, at("2026-11-30T12:00")) == at("2026-11-30T22:00")
    assert next_opening(NIGHT, at("2026-12-05T12:00")) == at("2026-12-07T22:00")  # Sat -> Mon
    moment = at("2026-11-30T23:30")
    assert next_opening(NIGHT, moment) == moment


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"start": "22:00", "end": "22:00"}, "empty"),
        ({"start": "22:00", "end": "06:00", "timezone": "Mars/Olympus"}, "unknown time zone"),
        ({"start": "22:00", "end": "06:00", "days": ["funday"]}, "unknown day"),
        ({"start": "25:00", "end": "06:00"}, "time"),
    ],
)
def test_bad_windows(data: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Window.model_validate(data)
