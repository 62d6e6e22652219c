"""Maintenance windows, pure: is a moment inside the window, and when does it next open."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from provision.campaign.policy import DAYS, Window


def inside(window: Window | None, moment: datetime) -> bool:
    """True when `moment` (timezone-aware) falls in the window; no window means always.

    A window whose end is before its start spans midnight and belongs to the day it starts.
    """
    if window is None:
        return True
    local = moment.astimezone(ZoneInfo(window.timezone))
    clock = local.time().replace(tzinfo=None)
    day = DAYS[local.weekday()]
    prev_day = DAYS[(local.weekday() - 1) % 7]
    if window.start < window.end:
        return day in window.days and window.start <= clock < window.end
    return (day in window.days and clock >= window.start) or (prev_day in window.days and clock < window.end)


def next_opening(window: Window, moment: datetime) -> datetime:
    """The first moment at or after `moment` inside the window (searched minute by minute, 8 days)."""
    zone = ZoneInfo(window.timezone)
    local = moment.astimezone(zone).replace(second=0, microsecond=0)
    for minutes in range(0, 8 * 24 * 60 + 1):
        candidate = local + timedelta(minutes=minutes)
        if inside(window, candidate):
            return candidate if minutes else moment.astimezone(zone)
    raise ValueError("the maintenance window never opens")
