"""Checkpoint protection facts: the `scan:` line of `zpool status` and `zfs list -t snapshot`.

`scan:` forms (OpenZFS cmd/zpool/zpool_main.c print_scan_scrub_resilver_status, 0.7 to 2.2):

    none requested
    scrub repaired 0B in 00:12:41 with 0 errors on Sun Nov 29 00:36:42 2026      (0.8+: 0B, HH:MM:SS)
    scrub repaired 0B in 1 days 12:59:37 with 0 errors on Sat Jan 27 22:59:39 2024
    scrub repaired 0 in 266h29m with 0 errors on Tue Aug 15 01:12:31 2017      (0.7)
    scrub in progress since Tue Aug  1 23:20:24 2017  (+ progress lines)
    scrub paused since ... / scrub canceled on ...
    resilvered 64M in 00:00:01 with 0 errors on ... / resilver in progress since ...

The date is ctime(3) in the node's local time zone: the probe runs zpool with TZ=UTC0 so it reads as UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum

from provision.conformance.parsers._base import Model, fail, tool_parser

SCAN_TOOL = "zpool status (scan)"
SNAP_TOOL = "zfs list -t snapshot"

_SIZE = re.compile(r"^(?P<num>\d+(?:[.,]\d+)?)(?P<unit>[BKMGTPE]?)$")
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
_DATE = r"(?P<date>[A-Z][a-z]{2} [A-Z][a-z]{2} \d{1,2} \d\d:\d\d:\d\d \d{4})"
_FINISHED = re.compile(
    r"^(?P<kind>scrub repaired|resilvered)(?: \([^)]*\))? (?P<size>\S+) in (?P<took>.+?) with (?P<errors>\d+) errors?"
    rf" on {_DATE}"
)
_SINCE = re.compile(rf"^(?P<kind>scrub|resilver)(?: \([^)]*\))? (?P<what>in progress|paused) since {_DATE}")
_CANCELED = re.compile(rf"^(?P<kind>scrub|resilver) canceled on {_DATE}")
# sanoid names its snapshots autosnap_<YYYY-mm-dd_HH:MM:SS>_<period> (sanoid's sanoid, take_snapshots)
_AUTOSNAP = re.compile(
    r"^autosnap_\d{4}-\d\d-\d\d_\d\d:\d\d:\d\d_(?P<period>frequently|hourly|daily|weekly|monthly|yearly)$")


class ScanState(StrEnum):
    """What the pool's last (or current) scan is."""

    NEVER = "never"
    """`none requested`: the pool was never scrubbed nor resilvered since import."""
    FINISHED = "finished"
    IN_PROGRESS = "in progress"
    PAUSED = "paused"
    CANCELED = "canceled"


class ScanKind(StrEnum):
    NONE = "none"
    SCRUB = "scrub"
    RESILVER = "resilver"


class Scan(Model):
    """The `scan:` line of one pool."""

    kind: ScanKind
    state: ScanState
    at: datetime | None
    """Finished (or canceled) on, or in progress / paused since; None when never scanned."""
    repaired_bytes: int | None = None
    errors: int | None = None
    duration: str | None = None


def _when(text: str) -> datetime:
    return datetime.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y").replace(tzinfo=UTC)


def _bytes(value: str) -> int:
    match = _SIZE.match(value)
    if not match:
        fail(SCAN_TOOL, f"repaired size {value!r} is not a size")
    return int(float(match["num"].replace(",", ".")) * _UNITS[match["unit"]])


@tool_parser(SCAN_TOOL)
def parse_scan(text: str) -> Scan:
    """The value of a pool's `scan:` field (continuation lines joined, as parse_zpool_status keeps it).

    A pool without a scan line at all (zpool 0.6 before its first scan): pass "none requested"."""
    line = " ".join(text.split())
    if line == "none requested":
        return Scan(kind=ScanKind.NONE, state=ScanState.NEVER, at=None)
    if match := _FINISHED.match(line):
        kind = ScanKind.SCRUB if match["kind"].startswith("scrub") else ScanKind.RESILVER
        return Scan(kind=kind, state=ScanState.FINISHED, at=_when(match["date"]), repaired_bytes=_bytes(match["size"]),
                    errors=int(match["errors"]), duration=match["took"])
    if match := _SINCE.match(line):
        state = ScanState.IN_PROGRESS if match["what"] == "in progress" else ScanState.PAUSED
        return Scan(kind=ScanKind(match["kind"]), state=state, at=_when(match["date"]))
    if match := _CANCELED.match(line):
        return Scan(kind=ScanKind(match["kind"]), state=ScanState.CANCELED, at=_when(match["date"]))
    fail(SCAN_TOOL, f"unknown scan line {line[:120]!r}")


class Snapshot(Model):
    """One snapshot: dataset@name, created at (UTC), and its sanoid period when sanoid took it."""

    dataset: str
    name: str
    created: datetime
    period: str | None

    @property
    def full_name(self) -> str:
        return f"{self.dataset}@{self.name}"


@tool_parser(SNAP_TOOL)
def parse_snapshots(text: str) -> tuple[Snapshot, ...]:
    """`zfs list -H -p -t snapshot -o name,creation [-r DATASET]`; "no datasets available" is none."""
    out: list[Snapshot] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.strip() == "no datasets available":
            continue
        cells = line.split("\t")
        if len(cells) != 2 or "@" not in cells[0]:
            fail(SNAP_TOOL, f"line {number}: expected 'dataset@snapshot<TAB>creation', got {line[:120]!r}")
        if not cells[1].strip().isdigit():
            fail(SNAP_TOOL, f"line {number}: creation {cells[1]!r} is not seconds since the epoch (-p missing?)")
        dataset, name = cells[0].split("@", 1)
        auto = _AUTOSNAP.match(name)
        out.append(Snapshot(dataset=dataset, name=name, created=datetime.fromtimestamp(int(cells[1]), UTC),
                            period=auto["period"] if auto else None))
    return tuple(out)


@tool_parser("date +%s")
def parse_epoch(text: str) -> datetime:
    """The node's clock (`date +%s`)."""
    value = text.strip()
    if not value.isdigit():
        fail("date +%s", f"{value[:40]!r} is not seconds since the epoch")
    return datetime.fromtimestamp(int(value), UTC)


_UNIT_STATES = frozenset({"active", "inactive", "failed", "activating", "deactivating", "reloading", "unknown",
                          "maintenance", "refreshing"})


@tool_parser("systemctl is-active")
def parse_active_states(text: str, units: list[str]) -> tuple[str, ...]:
    """`systemctl is-active UNIT...`: one state per unit, in order (it exits 3 when one is not active)."""
    states = tuple(line.strip() for line in text.splitlines() if line.strip())
    if len(states) != len(units):
        fail("systemctl is-active", f"{len(states)} state line(s) for {len(units)} unit(s)")
    bad = [s for s in states if s not in _UNIT_STATES]
    if bad:
        fail("systemctl is-active", f"unknown unit state(s) {bad}")
    return states
