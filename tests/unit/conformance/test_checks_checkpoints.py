"""Checkpoint protection checks as tables: snapshots per period, retention, scrub age/errors, timers, ZED."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from provision.conformance.checks import checkpoints
from provision.conformance.model import Level, Outcome
from provision.spec.model import NodeSpec
from tests.unit.conformance.helpers import area, facts, fixture, run, spec

NOW = datetime(2026, 12, 2, 3, 0, 0, tzinfo=UTC)
STATUS = fixture("zfs/handwritten/zpool-status.degraded.txt").split("\n\n  pool: tank")[0] + "\n"
LAST_SCRUB = "scrub repaired 0B in 00:12:41 with 0 errors on Sun Nov 29 00:36:42 2026"
ZED_RC = "# zed.rc\nZED_EMAIL_ADDR=\"storage-alerts@example.net\"\nZED_NOTIFY_VERBOSE=0\n"


def _snap(period: str, age: timedelta, dataset: str = "scratch") -> str:
    at = NOW - age
    return f"{dataset}@autosnap_{at:%Y-%m-%d_%H:%M:%S}_{period}\t{int(at.timestamp())}\n"


def _healthy_snaps(hourly: int = 24, daily: int = 7, weekly: int = 4) -> str:
    return ("".join(_snap("hourly", timedelta(minutes=10 + 60 * i)) for i in range(hourly))
            + "".join(_snap("daily", timedelta(hours=3 + 24 * i)) for i in range(daily))
            + "".join(_snap("weekly", timedelta(days=2 + 7 * i)) for i in range(weekly)))


def _sections(**over: str | tuple[int, str, str]) -> dict[str, str | tuple[int, str, str]]:
    base: dict[str, str | tuple[int, str, str]] = {
        "node_clock": f"{int(NOW.timestamp())}\n",
        "zfs_snapshots": _healthy_snaps(),
        "zpool_status_utc": STATUS,
        "checkpoint_units": "active\nactive\nactive\n",
        "zed_rc": ZED_RC,
    }
    base.update(over)
    return base


def _outcomes(node_spec: NodeSpec | None = None, **over: str | tuple[int, str, str]) -> dict[str, Outcome]:
    ctx = run(node_spec or spec(), _sections(**over))
    return {k: r.outcome for k, r in area(ctx, "checkpoints").items()}


def test_healthy_node_passes_everything() -> None:
    got = _outcomes()
    assert got and set(got.values()) == {Outcome.PASS}, got
    assert "checkpoints.snapshot.scratch.hourly" in got and "checkpoints.scrub.errors" in got
    assert "checkpoints.snapshot.scratch.monthly" not in got  # monthly: 0 is not taken


def _scan(line: str) -> str:
    return STATUS.replace(LAST_SCRUB, line)


# (case, section overrides, check id, expected outcome)
TABLE: list[tuple[str, dict[str, str | tuple[int, str, str]], str, Outcome]] = [
    ("no snapshot at all", {"zfs_snapshots": "no datasets available\n"}, "checkpoints.snapshot.scratch.hourly",
     Outcome.FAIL),
    ("too many hourly kept", {"zfs_snapshots": _healthy_snaps(hourly=30)}, "checkpoints.retention.scratch.hourly",
     Outcome.FAIL),
    ("short of hourly", {"zfs_snapshots": _healthy_snaps(hourly=3)}, "checkpoints.retention.scratch.hourly",
     Outcome.WARN),
    ("only old hourly", {"zfs_snapshots": "".join(_snap("hourly", timedelta(hours=2 + i)) for i in range(24))},
     "checkpoints.snapshot.scratch.hourly", Outcome.FAIL),
    ("hourly 1h20m old is within grace", {"zfs_snapshots": _snap("hourly", timedelta(minutes=80))},
     "checkpoints.snapshot.scratch.hourly", Outcome.PASS),
    ("daily 25h old is late", {"zfs_snapshots": _snap("daily", timedelta(hours=25))},
     "checkpoints.snapshot.scratch.daily", Outcome.FAIL),
    ("manual snapshots do not count", {"zfs_snapshots": f"scratch@before-upgrade\t{int(NOW.timestamp())}\n"},
     "checkpoints.snapshot.scratch.hourly", Outcome.FAIL),
    ("other dataset's snapshots do not count", {"zfs_snapshots": _snap("hourly", timedelta(0), "scratch/x")},
     "checkpoints.snapshot.scratch.hourly", Outcome.FAIL),
    ("snapshot list unreadable", {"zfs_snapshots": (1, "", "cannot open 'scratch': dataset does not exist")},
     "checkpoints.snapshots", Outcome.ERROR),
    ("scrub with errors", {"zpool_status_utc": _scan(LAST_SCRUB.replace("with 0 errors", "with 3 errors"))},
     "checkpoints.scrub.errors", Outcome.FAIL),
    ("scrub too old", {"zpool_status_utc": _scan(LAST_SCRUB.replace("Sun Nov 29", "Thu Oct 15"))},
     "checkpoints.scrub.age", Outcome.FAIL),
    ("never scrubbed warns", {"zpool_status_utc": _scan("none requested")}, "checkpoints.scrub.age", Outcome.WARN),
    ("in progress warns", {"zpool_status_utc": _scan("scrub in progress since Wed Dec  2 01:00:00 2026")},
     "checkpoints.scrub.age", Outcome.WARN),
    ("canceled warns", {"zpool_status_utc": _scan("scrub canceled on Wed Dec  2 01:00:00 2026")},
     "checkpoints.scrub.age", Outcome.WARN),
    ("last scan a resilver", {"zpool_status_utc": _scan("resilvered 64M in 00:00:01 with 0 errors on Wed Dec  2 "
                                                        "01:00:00 2026")}, "checkpoints.scrub.age", Outcome.WARN),
    ("garbage scan line", {"zpool_status_utc": _scan("scrub exploded")}, "checkpoints.scrub.age", Outcome.ERROR),
    ("zpool missing", {"zpool_status_utc": (127, "", "zpool: not found")}, "checkpoints.scrub.age", Outcome.ERROR),
    ("sanoid timer inactive", {"checkpoint_units": (3, "inactive\nactive\nactive\n", "")},
     "checkpoints.unit.sanoid.timer", Outcome.FAIL),
    ("scrub timer failed", {"checkpoint_units": (3, "active\nfailed\nactive\n", "")},
     "checkpoints.unit.provision-zfs-scrub@scratch.timer", Outcome.FAIL),
    ("systemctl lines missing", {"checkpoint_units": (3, "active\n", "")}, "checkpoints.unit.zfs-zed.service",
     Outcome.ERROR),
    ("zed address differs", {"zed_rc": ZED_RC.replace("storage-alerts@", "root@")},
     "checkpoints.zed.ZED_EMAIL_ADDR", Outcome.FAIL),
    ("zed.rc unreadable", {"zed_rc": (1, "", "cat: /etc/zfs/zed.d/zed.rc: No such file or directory")},
     "checkpoints.zed.rc", Outcome.ERROR),
    ("clock unreadable", {"node_clock": "soon\n"}, "checkpoints.clock", Outcome.ERROR),
]


@pytest.mark.parametrize("over,check,outcome", [t[1:] for t in TABLE], ids=[t[0] for t in TABLE])
def test_checkpoint_table(over: dict[str, str | tuple[int, str, str]], check: str, outcome: Outcome) -> None:
    got = _outcomes(**over)
    assert got.get(check) is outcome, {k: v for k, v in got.items() if v is not Outcome.PASS}


def test_custom_calendar_uses_max_age() -> None:
    s = spec(**{"storage.scratch.zfs.scrub": {"on_calendar": "Sun *-*-01..07 03:00:00", "max_age_days": 2}})
    assert _outcomes(s)["checkpoints.scrub.age"] is Outcome.FAIL  # finished 3 days ago


def test_named_datasets_are_checked_not_the_root() -> None:
    s = spec(**{"storage.scratch.zfs.snapshots": {"hourly": 1, "daily": 0, "weekly": 0, "datasets": ["ckpt"]}})
    got = _outcomes(s, zfs_snapshots=_snap("hourly", timedelta(minutes=5), "scratch/ckpt"))
    assert got["checkpoints.snapshot.scratch/ckpt.hourly"] is Outcome.PASS
    assert "checkpoints.snapshot.scratch.hourly" not in got


def test_no_protection_sections_means_no_checks_and_no_probes() -> None:
    s = spec(**{"storage.scratch.zfs.snapshots": None, "storage.scratch.zfs.scrub": None,
                "storage.scratch.zfs.zed": None})
    assert checkpoints.probes(s, Level.FULL) == []
    assert _outcomes(s) == {}


def test_probes_name_the_pool_and_utc() -> None:
    cmds = {p.name: p.command for p in checkpoints.probes(spec(), Level.QUICK)}
    assert cmds["zpool_status_utc"] == "TZ=UTC0 zpool status scratch"
    assert cmds["zfs_snapshots"] == "zfs list -H -p -t snapshot -o name,creation -r scratch"
    assert cmds["checkpoint_units"] == ("systemctl is-active sanoid.timer provision-zfs-scrub@scratch.timer "
                                        "zfs-zed.service")


def test_summary_lists_newest_first() -> None:
    s = spec()
    summary = checkpoints.summarize("n1", s, facts(_sections(zfs_snapshots=_healthy_snaps(2, 1, 0))))
    assert summary is not None and summary.error is None
    assert [r.age_s for r in summary.snapshots] == sorted(r.age_s for r in summary.snapshots)
    assert summary.snapshots[0].period == "hourly" and summary.snapshots[0].age_s == 600
    assert summary.scrub is not None and summary.scrub.errors == 0
    broken = checkpoints.summarize("n1", s, facts(_sections(zpool_status_utc=(127, "", ""))))
    assert broken is not None and broken.error and "command not found" in broken.error
