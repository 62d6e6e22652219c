"""The twins' stand-in zfs/zpool/sanoid follow snapshots and scrubs; the checkpoint checks judge their output."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from test_personality_helpers import Twin

from provision.conformance.checks import checkpoints
from provision.conformance.model import Outcome
from provision.conformance.parsers.zfs_checkpoints import ScanState, parse_scan, parse_snapshots
from provision.conformance.parsers.zpool_status import parse_zpool_status
from provision.lab.twins.personality import apply_fault
from tests.unit.conformance.helpers import area, run, spec

ROLE_TEMPLATES = Path(__file__).resolve().parents[2] / "roles" / "zfs_scratch" / "templates"


def role_template(name: str, **values: object) -> str:
    """A roles/zfs_scratch template rendered with plain Jinja2: the stand-ins read what the role writes."""
    import jinja2

    env = jinja2.Environment(keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    return env.from_string((ROLE_TEMPLATES / f"{name}.j2").read_text()).render(ansible_managed="test", **values)


ZFS = spec().storage.scratch.zfs
assert ZFS.snapshots is not None and ZFS.zed is not None
SANOID_CONF = role_template("sanoid.conf", zfs_scratch_snapshots=ZFS.snapshots.model_dump(),
                            zfs_scratch_snapshot_datasets=["scratch"])
ZED_RC = role_template("zed.rc", zfs_scratch_zed=ZFS.zed.model_dump())


@pytest.fixture
def twin(tmp_path: Path) -> Twin:
    t = Twin(tmp_path)
    devs = [f"/dev/disk/by-id/{d['by_id']}" for d in t.drives("scratch")]
    t.out("zpool", "create", "-m", "/scratch", "scratch", *devs)
    (tmp_path / "sanoid").mkdir()
    (tmp_path / "sanoid" / "sanoid.conf").write_text(SANOID_CONF)
    return t


def _sanoid(twin: Twin) -> str:
    return twin.out("sanoid", "--cron", "--verbose", "--configdir", str(twin.base / "sanoid"))


def _snapshots(twin: Twin) -> str:
    return twin.out("zfs", "list", "-H", "-p", "-t", "snapshot", "-o", "name,creation", "-r", "scratch")


def test_sanoid_takes_each_period_once_and_prunes(twin: Twin) -> None:
    assert _snapshots(twin).strip() == "no datasets available"
    assert "taking snapshot scratch@autosnap_" in _sanoid(twin)
    snaps = parse_snapshots(_snapshots(twin))
    assert sorted(s.period or "" for s in snaps) == ["daily", "hourly", "weekly"]
    assert abs(min(s.created.timestamp() for s in snaps) - time.time()) < 60
    assert _sanoid(twin) == ""  # nothing due again within the hour
    first = next(s.full_name for s in snaps if s.period == "hourly")
    time.sleep(1.1)
    twin.out("zfs", "snapshot", "scratch@autosnap_2020-01-01_00:00:00_hourly")  # newer, named as sanoid would
    assert len(parse_snapshots(_snapshots(twin))) == 4
    conf = twin.base / "sanoid" / "sanoid.conf"
    conf.write_text(conf.read_text().replace("hourly = 24", "hourly = 1"))
    assert _sanoid(twin) == f"INFO: pruning snapshot {first}\n"  # the oldest of the period goes
    assert [s.name for s in parse_snapshots(_snapshots(twin)) if s.period == "hourly"] == [
        "autosnap_2020-01-01_00:00:00_hourly"]


def test_role_templates_render_as_expected() -> None:
    assert "[scratch]\nuse_template = provision\nrecursive = yes\n" in SANOID_CONF
    assert "hourly = 24\ndaily = 7\nweekly = 4\nmonthly = 0\n" in SANOID_CONF
    zed = checkpoints.parse_zed_rc(ZED_RC)
    assert (zed["ZED_EMAIL_ADDR"], zed["ZED_NOTIFY_VERBOSE"], zed["ZED_NOTIFY_INTERVAL_SECS"]) == (
        "storage-alerts@example.net", "0", "3600"), ZED_RC
    timer = role_template("provision-zfs-scrub@.timer", zfs_scratch_scrub_on_calendar="monthly")
    assert "OnCalendar=monthly\n" in timer


def test_snapshot_destroy_and_duplicates(twin: Twin) -> None:
    twin.out("zfs", "snapshot", "-r", "scratch@manual")
    dup = twin.run("zfs", "snapshot", "scratch@manual", check=False)
    assert dup.returncode == 1 and "dataset already exists" in dup.stderr
    assert twin.run("zfs", "snapshot", "scratch", check=False).returncode == 2
    twin.out("zfs", "destroy", "scratch@manual")
    assert _snapshots(twin).strip() == "no datasets available"
    assert "scratch@" not in twin.out("zfs", "list", "-H", "-o", "name")  # plain list: filesystems only


def test_scrub_shows_in_status_and_scrub_failed_fault(twin: Twin) -> None:
    (pool,) = parse_zpool_status(twin.out("zpool", "status", "scratch"))
    assert parse_scan(pool.scan or "").state is ScanState.NEVER
    twin.out("zpool", "scrub", "scratch")
    (pool,) = parse_zpool_status(twin.out("zpool", "status", "scratch"))
    scan = parse_scan(pool.scan or "")
    assert (scan.state, scan.errors) == (ScanState.FINISHED, 0)
    assert scan.at is not None and abs(scan.at.timestamp() - time.time()) < 120  # the twin's TZ is UTC here
    apply_fault(twin.state, "scrub_failed", clear=False)
    (pool,) = parse_zpool_status(twin.out("zpool", "status", "scratch"))
    assert parse_scan(pool.scan or "").errors == 4 and pool.errors.startswith("4 data errors")


def _facts(twin: Twin) -> dict[str, str | tuple[int, str, str]]:
    return {"node_clock": f"{int(time.time())}\n", "zfs_snapshots": _snapshots(twin),
            "zpool_status_utc": twin.out("zpool", "status", "scratch"),
            "checkpoint_units": "active\nactive\nactive\n",
            "zed_rc": ZED_RC}


@pytest.mark.parametrize("fault,failing", [
    ("snapshot_missing", {"checkpoints.snapshot.scratch.hourly", "checkpoints.snapshot.scratch.daily",
                          "checkpoints.snapshot.scratch.weekly"}),
    ("snapshot_stale", {"checkpoints.snapshot.scratch.hourly", "checkpoints.snapshot.scratch.daily"}),
    ("scrub_failed", {"checkpoints.scrub.errors"}),
])
def test_checks_on_stand_in_output(twin: Twin, fault: str, failing: set[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC0")
    _sanoid(twin)
    twin.out("zpool", "scrub", "scratch")
    healthy = area(run(spec(), _facts(twin)), "checkpoints")
    assert {k for k, r in healthy.items() if r.outcome is not Outcome.PASS} <= {
        "checkpoints.retention.scratch.hourly", "checkpoints.retention.scratch.daily",
        "checkpoints.retention.scratch.weekly"}  # a new pool is short of its retention: warned only
    apply_fault(twin.state, fault, clear=False)
    broken = area(run(spec(), _facts(twin)), "checkpoints")
    assert {k for k, r in broken.items() if r.outcome is Outcome.FAIL} == failing
    apply_fault(twin.state, fault, clear=True)
    assert not [r for r in area(run(spec(), _facts(twin)), "checkpoints").values() if r.outcome is Outcome.FAIL]
    assert checkpoints.AREA == "checkpoints"
