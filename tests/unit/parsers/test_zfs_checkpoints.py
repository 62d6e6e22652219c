"""The scan line of `zpool status` and `zfs list -t snapshot`: real captures, then a table of forms."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from provision.conformance.parsers.zfs_checkpoints import (
    ScanKind,
    ScanState,
    parse_epoch,
    parse_scan,
    parse_snapshots,
)
from provision.conformance.parsers.zpool_status import parse_zpool_status
from provision.errors import ParseError
from tests.unit.parsers._fixtures import text


def _scan_of(relpath: str) -> str:
    (pool,) = parse_zpool_status(text(relpath))[:1]
    assert pool.scan is not None
    return pool.scan


def test_finished_scrub_capture_zfs07() -> None:
    scan = parse_scan(_scan_of("zfs/check_zpool_scrub/zpool-status.finished-scrub.zfs07.txt"))
    assert (scan.kind, scan.state) == (ScanKind.SCRUB, ScanState.FINISHED)
    assert scan.at == datetime(2017, 8, 15, 1, 12, 31, tzinfo=UTC)
    assert (scan.errors, scan.repaired_bytes, scan.duration) == (0, 0, "266h29m")


def test_in_progress_capture_with_progress_lines_and_padded_day() -> None:
    # The source's author renamed the pool line only (config still lists `data`): zpool_status refuses it, so
    # the scan field (with its two progress lines) is cut out here as parse_zpool_status would join it.
    raw = text("zfs/check_zpool_scrub/zpool-status.scrub-in-progress.zfs07.txt")
    with pytest.raises(ParseError, match="does not list the pool itself"):
        parse_zpool_status(raw)
    scan = parse_scan(raw.split("scan:", 1)[1].split("config:", 1)[0])
    assert (scan.kind, scan.state) == (ScanKind.SCRUB, ScanState.IN_PROGRESS)
    assert scan.at == datetime(2017, 8, 1, 23, 20, 24, tzinfo=UTC)
    assert scan.errors is None


def test_handwritten_pools_both_forms() -> None:
    scratch, tank = parse_zpool_status(text("zfs/handwritten/zpool-status.degraded.txt"))
    assert parse_scan(scratch.scan or "").at == datetime(2026, 11, 29, 0, 36, 42, tzinfo=UTC)
    assert parse_scan(tank.scan or "").state is ScanState.NEVER


# (scan value, kind, state, errors, repaired bytes, at)
SCANS = [
    ("none requested", ScanKind.NONE, ScanState.NEVER, None, None, None),
    ("scrub repaired 0B in 00:12:41 with 0 errors on Sun Nov 29 00:36:42 2026", ScanKind.SCRUB, ScanState.FINISHED,
     0, 0, datetime(2026, 11, 29, 0, 36, 42, tzinfo=UTC)),
    ("scrub repaired 1.50M in 1 days 12:59:37 with 7 errors on Sat Jan 27 22:59:39 2024", ScanKind.SCRUB,
     ScanState.FINISHED, 7, int(1.5 * (1 << 20)), datetime(2024, 1, 27, 22, 59, 39, tzinfo=UTC)),
    ("scrub repaired 0B in 00:00:01 with 1 error on Mon Jun  1 03:12:00 2026", ScanKind.SCRUB, ScanState.FINISHED,
     1, 0, datetime(2026, 6, 1, 3, 12, tzinfo=UTC)),
    ("resilvered 64M in 00:00:01 with 0 errors on Sun Jun  7 03:12:00 2026", ScanKind.RESILVER, ScanState.FINISHED,
     0, 64 << 20, datetime(2026, 6, 7, 3, 12, tzinfo=UTC)),
    ("resilvered (mirror-0) 64M in 00:00:01 with 0 errors on Sun Jun  7 03:12:00 2026", ScanKind.RESILVER,
     ScanState.FINISHED, 0, 64 << 20, datetime(2026, 6, 7, 3, 12, tzinfo=UTC)),
    ("scrub paused since Wed Oct 11 16:32:05 2023", ScanKind.SCRUB, ScanState.PAUSED, None, None,
     datetime(2023, 10, 11, 16, 32, 5, tzinfo=UTC)),
    ("scrub canceled on Wed Oct 11 16:32:05 2023", ScanKind.SCRUB, ScanState.CANCELED, None, None,
     datetime(2023, 10, 11, 16, 32, 5, tzinfo=UTC)),
    ("scrub in progress since Wed Oct 11 16:32:05 2023 808G scanned at 909M/s, 735G issued at 827M/s, 10.2T total "
     "0B repaired, 7.01% done, 03:21:02 to go", ScanKind.SCRUB, ScanState.IN_PROGRESS, None, None,
     datetime(2023, 10, 11, 16, 32, 5, tzinfo=UTC)),
]


@pytest.mark.parametrize("line,kind,state,errors,repaired,at", SCANS, ids=[s[0][:30] for s in SCANS])
def test_scan_forms(line: str, kind: ScanKind, state: ScanState, errors: int | None, repaired: int | None,
                    at: datetime | None) -> None:
    scan = parse_scan(line)
    assert (scan.kind, scan.state, scan.errors, scan.repaired_bytes, scan.at) == (kind, state, errors, repaired, at)


@pytest.mark.parametrize("line", ["", "scrub repaired lots in a while", "scrub repaired 0B in 00:00:01 with 0 errors "
                                  "on 2026-06-01", "trim in progress"])
def test_scan_garbage_is_a_parse_error(line: str) -> None:
    with pytest.raises(ParseError):
        parse_scan(line)


def test_snapshots_sanoid_and_manual() -> None:
    out = ("scratch@autosnap_2026-12-02_02:00:01_hourly\t1796176801\n"
           "scratch@autosnap_2026-12-02_00:00:01_daily\t1796169601\n"
           "scratch/ckpt@before-upgrade\t1796100000\n")
    hourly, daily, manual = parse_snapshots(out)
    assert (hourly.dataset, hourly.period, hourly.created) == ("scratch", "hourly",
                                                                datetime.fromtimestamp(1796176801, UTC))
    assert daily.period == "daily"
    assert (manual.dataset, manual.name, manual.period) == ("scratch/ckpt", "before-upgrade", None)
    assert parse_snapshots("no datasets available\n") == ()


@pytest.mark.parametrize("out", ["scratch\t1796176801\n", "scratch@a\tTue Dec  1 10:00 2026\n", "scratch@a 1 2\n"])
def test_snapshots_bad_rows(out: str) -> None:
    with pytest.raises(ParseError):
        parse_snapshots(out)


def test_epoch() -> None:
    assert parse_epoch("1796176801\n") == datetime.fromtimestamp(1796176801, UTC)
    with pytest.raises(ParseError):
        parse_epoch("Wed Dec  2 02:00:00 UTC 2026")
