"""Checkpoint protection on the scratch pool: snapshots on schedule, scrubs finished clean, timers and ZED.

Seed 5.4: the scratch stripe has no redundancy, so checkpoints need snapshots (sanoid, roles/zfs_scratch)
and the pool a regular scrub. Checked from the spec's `storage.scratch.zfs` (`snapshots`, `scrub`, `zed`):
- the newest snapshot of each period (sanoid's autosnap_..._hourly etc.) is younger than the period plus
  `grace_minutes`; none at all fails;
- snapshots kept per period: more than the retention fails (pruning is not running and the pool fills),
  fewer warns (a node younger than the retention window has fewer);
- the last scrub finished, with 0 errors, no longer ago than the schedule allows; a pool never scrubbed,
  a scrub in progress, paused or canceled, or a resilver as the last scan warns (never a pass);
- sanoid.timer, the scrub timer and zfs-zed are active; zed.rc holds the spec's address and verbosity.
A spec without a scratch set or without these sections has none of these checks.

Real ZFS was never run here: the forms parsed are OpenZFS's documented and captured output, exercised on
the lab twins' stand-in zfs/zpool only.
"""

from __future__ import annotations

import shlex
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import NodeFacts, Probe
from provision.conformance.model import Level, Outcome
from provision.conformance.parsers.zfs_checkpoints import (
    Scan,
    ScanKind,
    ScanState,
    Snapshot,
    parse_active_states,
    parse_epoch,
    parse_scan,
    parse_snapshots,
)
from provision.conformance.parsers.zpool_status import parse_zpool_status
from provision.errors import ParseError
from provision.spec.model import NodeSpec
from provision.spec.storage import SNAPSHOT_INTERVALS_H, ZfsLayout, scratch_zfs

AREA = "checkpoints"
SNAPSHOTS = "zfs_snapshots"
STATUS_UTC = "zpool_status_utc"
CLOCK = "node_clock"
UNITS = "checkpoint_units"
ZED_RC = "zed_rc"
ZED_RC_PATH = "/etc/zfs/zed.d/zed.rc"
SANOID_TIMER = "sanoid.timer"
ZED_SERVICE = "zfs-zed.service"


def scrub_timer(pool: str) -> str:
    """The scrub timer roles/zfs_scratch installs for `pool` (systemd-escaped instance name)."""
    return f"provision-zfs-scrub@{pool}.timer"


def _protected(spec: NodeSpec) -> ZfsLayout | None:
    z = scratch_zfs(spec)
    if z is None or (z.snapshots is None and z.scrub is None and z.zed is None):
        return None
    return z


def _units(z: ZfsLayout) -> list[str]:
    return ([SANOID_TIMER] if z.snapshots else []) + ([scrub_timer(z.pool)] if z.scrub else []) + (
        [ZED_SERVICE] if z.zed else [])


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    z = _protected(spec)
    if z is None:
        return []
    pool = shlex.quote(z.pool)
    found = [Probe(name=CLOCK, command="date +%s")]
    if z.snapshots:
        found.append(Probe(name=SNAPSHOTS, command=f"zfs list -H -p -t snapshot -o name,creation -r {pool}"))
    if z.scrub:
        # zpool prints the scan date with ctime(3) in local time: TZ=UTC0 makes it UTC, as the parser reads it.
        found.append(Probe(name=STATUS_UTC, command=f"TZ=UTC0 zpool status {pool}"))
    found.append(Probe(name=UNITS, command="systemctl is-active " + " ".join(shlex.quote(u) for u in _units(z))))
    if z.zed:
        found.append(Probe(name=ZED_RC, command=f"cat {ZED_RC_PATH}"))
    return found


def evaluate(ctx: Context) -> None:
    z = _protected(ctx.spec)
    if z is None:
        return
    try:
        now = ctx.parsed(CLOCK, parse_epoch)
    except Unreadable as why:
        ctx.unreadable("checkpoints.clock", AREA, "node clock readable", "seconds since the epoch", why.reason)
        return
    if z.snapshots:
        _snapshots(ctx, z, now)
    if z.scrub:
        _scrub(ctx, z, now)
    _units_active(ctx, z)
    if z.zed:
        _zed(ctx, z)


def _snapshots(ctx: Context, z: ZfsLayout, now: datetime) -> None:
    assert z.snapshots is not None
    try:
        snaps = ctx.parsed(SNAPSHOTS, parse_snapshots)
    except Unreadable as why:
        ctx.unreadable("checkpoints.snapshots", AREA, f"{z.pool} snapshots listed", "readable", why.reason)
        return
    grace = timedelta(minutes=z.snapshots.grace_minutes)
    for dataset in z.dataset_names():
        mine = [s for s in snaps if s.dataset == dataset]
        for period, keep in z.snapshots.retention.items():
            if keep:
                _period(ctx, dataset, period, keep, [s for s in mine if s.period == period], now, grace)


def _period(ctx: Context, dataset: str, period: str, keep: int, snaps: list[Snapshot], now: datetime,
            grace: timedelta) -> None:
    limit = timedelta(hours=SNAPSHOT_INTERVALS_H[period]) + grace
    cid = f"checkpoints.snapshot.{dataset}.{period}"
    desc = f"{dataset} newest {period} snapshot younger than {_age(limit)}"
    if not snaps:
        ctx.record(cid, AREA, desc, f"<= {_age(limit)}", "no snapshot", False)
    else:
        newest = max(s.created for s in snaps)
        age = now - newest
        ctx.record(cid, AREA, desc, f"<= {_age(limit)}", f"{_age(age)} old", age <= limit)
    count = len(snaps)
    rid = f"checkpoints.retention.{dataset}.{period}"
    rdesc = f"{dataset} {period} snapshots kept as the schedule says"
    if count > keep:
        ctx.record(rid, AREA, rdesc, keep, f"{count} (pruning is not running)", False)
    elif count < keep:
        ctx.result(rid, AREA, rdesc, keep, f"{count} (short of the retention)", Outcome.WARN)
    else:
        ctx.record(rid, AREA, rdesc, keep, count, True)


def _scrub(ctx: Context, z: ZfsLayout, now: datetime) -> None:
    assert z.scrub is not None
    allowed = timedelta(days=z.scrub.allowed_age_days)
    desc = f"{z.pool} last scrub finished within {_age(allowed)}"
    try:
        pool = next((p for p in ctx.parsed(STATUS_UTC, parse_zpool_status) if p.name == z.pool), None)
        if pool is None:
            raise Unreadable(f"pool {z.pool} is not in zpool status")
        scan = parse_scan(pool.scan or "none requested")
    except Unreadable as why:
        ctx.unreadable("checkpoints.scrub.age", AREA, desc, f"<= {_age(allowed)}", why.reason)
        return
    except ParseError as exc:  # the scan line itself: the check could not be made
        ctx.unreadable("checkpoints.scrub.age", AREA, desc, f"<= {_age(allowed)}", str(exc))
        return
    _scrub_age(ctx, desc, scan, now, allowed)
    _scrub_errors(ctx, z.pool, scan)


def _scrub_age(ctx: Context, desc: str, scan: Scan, now: datetime, allowed: timedelta) -> None:
    cid, expected = "checkpoints.scrub.age", f"<= {_age(allowed)}"
    if scan.state is ScanState.NEVER:
        ctx.result(cid, AREA, desc, expected, "never scrubbed", Outcome.WARN)
    elif scan.kind is ScanKind.RESILVER:
        ctx.result(cid, AREA, desc, expected, f"last scan a resilver ({scan.state}); scrub time unknown",
                   Outcome.WARN)
    elif scan.state is not ScanState.FINISHED:
        ctx.result(cid, AREA, desc, expected, f"scrub {scan.state} since {_stamp(scan.at)}", Outcome.WARN)
    else:
        assert scan.at is not None
        age = now - scan.at
        ctx.record(cid, AREA, desc, expected, f"finished {_age(age)} ago ({_stamp(scan.at)})", age <= allowed)


def _scrub_errors(ctx: Context, pool: str, scan: Scan) -> None:
    if scan.kind is not ScanKind.SCRUB or scan.errors is None:
        return
    ctx.record("checkpoints.scrub.errors", AREA, f"{pool} last scrub found no errors", 0,
               f"{scan.errors} error(s), repaired {scan.repaired_bytes} bytes", scan.errors == 0)


def _units_active(ctx: Context, z: ZfsLayout) -> None:
    units = _units(z)
    try:
        states = ctx.parsed(UNITS, lambda text: parse_active_states(text, units), allow_rc=(0, 3))
    except Unreadable as why:
        for unit in units:
            ctx.unreadable(f"checkpoints.unit.{unit}", AREA, f"{unit} active", "active", why.reason)
        return
    for unit, state in zip(units, states, strict=True):
        ctx.equal(f"checkpoints.unit.{unit}", AREA, f"{unit} active", "active", state)


def _zed(ctx: Context, z: ZfsLayout) -> None:
    assert z.zed is not None
    wanted = {"ZED_NOTIFY_VERBOSE": "1" if z.zed.notify_verbose else "0"}
    if z.zed.email:
        wanted["ZED_EMAIL_ADDR"] = z.zed.email
    try:
        values = ctx.parsed(ZED_RC, parse_zed_rc)
    except Unreadable as why:
        ctx.unreadable("checkpoints.zed.rc", AREA, f"{ZED_RC_PATH} as the spec says", wanted, why.reason)
        return
    for key, value in wanted.items():
        ctx.equal(f"checkpoints.zed.{key}", AREA, f"{ZED_RC_PATH} {key}", value, values.get(key))


def parse_zed_rc(text: str) -> dict[str, str]:
    """KEY=value assignments of zed.rc (a shell fragment; quotes removed, comments skipped)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        try:
            words = shlex.split(value, comments=True)
        except ValueError:
            continue
        out[key.strip()] = words[0] if words else ""
    return out


def _age(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    if seconds < 0:
        return f"-{_age(-delta)}"
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days}d{hours:02d}h"
    return f"{hours}h{minutes:02d}m"


def _stamp(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC") if at else "unknown"


class SnapshotRow(BaseModel):
    """One snapshot as `provision checkpoints` lists it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    period: str | None
    created: datetime
    age_s: int


class CheckpointSummary(BaseModel):
    """What `provision checkpoints` shows of one node."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    pool: str
    snapshots: tuple[SnapshotRow, ...]
    scrub: Scan | None
    error: str | None = None


def summary_probes(spec: NodeSpec) -> list[Probe]:
    """The probes `provision checkpoints` gathers (the checks' own)."""
    return [p for p in probes(spec, Level.FULL) if p.name in (CLOCK, SNAPSHOTS, STATUS_UTC)]


def summarize(node: str, spec: NodeSpec, facts: NodeFacts) -> CheckpointSummary | None:
    """Snapshots (newest first) and the last scan of the scratch pool, from gathered facts (pure)."""
    z = _protected(spec)
    if z is None:
        return None
    ctx = Context(node=node, spec=spec, facts=facts, level=Level.FULL)
    try:
        now = ctx.parsed(CLOCK, parse_epoch)
        snaps = ctx.parsed(SNAPSHOTS, parse_snapshots) if z.snapshots else ()
        scan = None
        if z.scrub:
            pool = next((p for p in ctx.parsed(STATUS_UTC, parse_zpool_status) if p.name == z.pool), None)
            scan = parse_scan(pool.scan or "none requested") if pool else None
    except Unreadable as why:
        return CheckpointSummary(node=node, pool=z.pool, snapshots=(), scrub=None, error=why.reason)
    except ParseError as exc:
        return CheckpointSummary(node=node, pool=z.pool, snapshots=(), scrub=None, error=str(exc))
    rows = tuple(SnapshotRow(name=s.full_name, period=s.period, created=s.created,
                             age_s=int((now - s.created).total_seconds()))
                 for s in sorted(snaps, key=lambda s: s.created, reverse=True))
    return CheckpointSummary(node=node, pool=z.pool, snapshots=rows, scrub=scan)
