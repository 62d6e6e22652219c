"""NVMe checks: every boot and scratch drive present; per drive SMART health from `nvme smart-log`:
wear (the spec's optional warn_percentage_used warns, max_percentage_used fails), available spare (below
the drive's own threshold fails, below the spec's optional warn_available_spare_pct warns), critical
warning (any bit set fails, each bit named per the NVMe spec), media errors (warn/fail tiers) and the
bytes written against the drive's rated endurance (tiers in percent of it).

The endurance projection (when a drive reaches its rated endurance at the write rate between the first
verify run that saw it and this one) needs the readings kept in the journal: `project_endurance` is the
pure half, provision.conformance.wear the journal's.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import Probe, Section
from provision.conformance.model import Level, Outcome, Threshold
from provision.conformance.parsers.nvme import (
    DATA_UNIT_BYTES,
    NvmeNamespace,
    NvmeSmartLog,
    critical_warning_names,
    parse_nvme_list,
    parse_nvme_smart_log,
)
from provision.journal.wear import WearReading
from provision.spec.model import NodeSpec
from provision.spec.storage import NvmeHealth

AREA = "nvme"
LIST = "nvme_list"
SMART = "nvme_smart"
# Two readings closer than this give no write rate worth projecting from.
MIN_PROJECTION_S = 3600.0
DAY_S = 86400.0


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    found = [Probe(name=LIST, command="nvme list -o json")]
    if level is not Level.QUICK:
        found.append(Probe(name=SMART, command='nvme smart-log "$1" -o json', each="/dev/nvme[0-9]*n1"))
    return found


def expected_drives(spec: NodeSpec) -> int:
    st = spec.storage
    return sum(s.count for s in (st.boot, st.scratch) if s is not None and s.interface == "nvme")


def evaluate(ctx: Context) -> None:
    want = expected_drives(ctx.spec)
    desc = "NVMe drives present (boot + scratch)"
    try:
        drives = ctx.parsed(LIST, parse_nvme_list)
    except Unreadable as why:
        ctx.unreadable("nvme.count", AREA, desc, want, why.reason)
        drives = ()
    else:
        ctx.equal("nvme.count", AREA, desc, want, len(drives))
    if ctx.level is not Level.QUICK:
        by_path = {d.device_path: d for d in drives}
        for section in ctx.facts.matching(SMART):
            _smart(ctx, section, by_path.get(_device(section)))


def _device(section: Section) -> str:
    return section.name.split(":", 1)[1]


def _smart(ctx: Context, section: Section, drive: NvmeNamespace | None) -> None:
    health = ctx.spec.storage.nvme_health
    dev = _device(section)
    short = dev.removeprefix("/dev/")
    wear = Threshold(fail=health.max_percentage_used, warn=health.warn_percentage_used, unit="%")
    errors = media_error_threshold(health)
    endurance = endurance_threshold(health)
    try:
        log = ctx.parsed(section.name, parse_nvme_smart_log)
    except Unreadable as why:
        for key, desc, expected in (
            ("wear", "SMART percentage used", wear.describe()),
            ("media_errors", "SMART media errors", errors.describe()),
            ("spare", "SMART available spare", "above the drive's spare threshold"),
            ("critical_warning", "SMART critical warning", "0 (no bit set)"),
            ("endurance", "bytes written of the rated endurance", endurance.describe()),
        ):
            ctx.unreadable(f"nvme.{short}.{key}", AREA, f"{dev} {desc}", expected, why.reason)
        return
    ctx.tiered(f"nvme.{short}.wear", AREA, f"{dev} SMART percentage used", log.percentage_used, wear)
    ctx.tiered(f"nvme.{short}.spare", AREA, f"{dev} SMART available spare", log.available_spare_pct,
               spare_threshold(health, log),
               f"the drive's spare threshold is {log.available_spare_threshold_pct}%"
               if log.available_spare_threshold_pct is not None else "the drive reports no spare threshold")
    ctx.tiered(f"nvme.{short}.media_errors", AREA, f"{dev} SMART media errors", log.media_errors, errors)
    _critical_warning(ctx, dev, short, log.critical_warning)
    _endurance(ctx, dev, short, log, drive, health, endurance)


def _critical_warning(ctx: Context, dev: str, short: str, value: int) -> None:
    names = critical_warning_names(value)
    found = f"0x{value:02x}" + (f" ({'; '.join(names)})" if names else "")
    ctx.record(f"nvme.{short}.critical_warning", AREA, f"{dev} SMART critical warning", "0 (no bit set)", found,
               value == 0)


def _endurance(ctx: Context, dev: str, short: str, log: NvmeSmartLog, drive: NvmeNamespace | None,
               health: NvmeHealth, threshold: Threshold) -> None:
    check_id, desc = f"nvme.{short}.endurance", f"{dev} bytes written of the rated endurance"
    rated = health.rated_bytes(drive.physical_size if drive else None)
    written = log.written_bytes
    if written is None:
        ctx.error(check_id, AREA, desc, threshold.describe(), "the smart-log has no data_units_written")
        return
    if rated is None:
        ctx.error(check_id, AREA, desc, threshold.describe(),
                  f"{dev}: capacity unknown (not in nvme list) for an endurance given in DWPD")
        return
    ctx.tiered(check_id, AREA, desc, round(100 * written / rated, 1), threshold,
               f"{written / 10**12:.1f} TB written of {rated / 10**12:.0f} TBW rated ({_rating(health)})")


def _rating(health: NvmeHealth) -> str:
    if health.endurance_tbw is not None:
        return f"spec endurance_tbw {health.endurance_tbw:g}"
    return f"spec {health.endurance_dwpd:g} DWPD x capacity x {health.endurance_years} years"


def spare_threshold(health: NvmeHealth, log: NvmeSmartLog) -> Threshold:
    """Available spare below the drive's own threshold (NVMe spare_thresh) fails; below the spec's tier warns.

    At the threshold itself passes: the NVMe spec sets critical warning bit 0 when the spare falls *below* it.
    """
    fail = float(log.available_spare_threshold_pct or 0)
    warn = health.warn_available_spare_pct
    return Threshold(fail=fail, warn=warn if warn is not None and warn > fail else None, above=False, unit="%")


def media_error_threshold(health: NvmeHealth) -> Threshold:
    return Threshold(fail=health.max_media_errors, warn=health.warn_media_errors)


def endurance_threshold(health: NvmeHealth) -> Threshold:
    return Threshold(fail=health.max_endurance_used_pct, warn=health.warn_endurance_used_pct, unit="%")


def days_threshold(health: NvmeHealth) -> Threshold:
    return Threshold(fail=health.max_endurance_days, warn=health.warn_endurance_days, above=False, unit="days")


# -- the projection: today's readings against the first one kept for the same drive -----------------------

def todays_readings(ctx: Context, now: float) -> list[WearReading]:
    """One reading per drive whose smart-log and serial could be read (nothing for an unreadable one)."""
    try:
        drives = {d.device_path: d for d in ctx.parsed(LIST, parse_nvme_list)}
    except Unreadable:
        return []
    out = []
    for section in ctx.facts.matching(SMART):
        dev, drive = _device(section), drives.get(_device(section))
        try:
            log = ctx.parsed(section.name, parse_nvme_smart_log)
        except Unreadable:
            continue
        if drive is None or log.data_units_written is None:
            continue
        out.append(WearReading(node=ctx.node, device=dev, serial=drive.serial, at=now,
                               data_units_written=log.data_units_written))
    return out


def project_endurance(ctx: Context, history: Sequence[WearReading], now: float, kept: str = "") -> list[WearReading]:
    """Record `nvme.<dev>.endurance_date` for each drive read today; return today's readings to keep.

    `history` is what the journal kept for this node (oldest first); `kept` is said in the detail when the
    readings cannot be kept (no journal).
    """
    health = ctx.spec.storage.nvme_health
    today = todays_readings(ctx, now)
    try:
        drives = {d.device_path: d for d in ctx.parsed(LIST, parse_nvme_list)}
    except Unreadable:
        return today
    for reading in today:
        drive = drives[reading.device]
        rated = health.rated_bytes(drive.physical_size)
        if rated is None:
            continue
        _project_one(ctx, reading, [h for h in history if h.node == reading.node], rated, health, kept)
    return today


def _project_one(ctx: Context, now: WearReading, history: Sequence[WearReading], rated: int, health: NvmeHealth,
                 kept: str) -> None:
    short = now.device.removeprefix("/dev/")
    check_id, desc = f"nvme.{short}.endurance_date", f"{now.device} projected date of reaching its rated endurance"
    threshold = days_threshold(health)
    mine = [h for h in history if h.serial == now.serial and h.at < now.at]
    first = next((h for h in mine if h.data_units_written <= now.data_units_written), None)
    if first is None:
        before = next((h.serial for h in reversed(history) if h.device == now.device and h.serial != now.serial), None)
        why = (f"drive replaced (serial {before} -> {now.serial}): the projection restarts with this reading"
               if before else f"first reading of serial {now.serial}: a projection needs a second verify run")
        ctx.waive(check_id, AREA, desc, threshold.describe(), why + (f"; {kept}" if kept else ""))
        return
    span = now.at - first.at
    if span < MIN_PROJECTION_S:
        ctx.waive(check_id, AREA, desc, threshold.describe(),
                  f"readings {span / 60:.0f} min apart: a projection needs them at least "
                  f"{MIN_PROJECTION_S / 3600:g} h apart")
        return
    days, rate = projected_days(first, now, rated)
    since = datetime.fromtimestamp(first.at, tz=UTC)
    detail = f"{rate * DAY_S / 10**9:.1f} GB/day written since {since:%Y-%m-%d %H:%M} UTC"
    if days is None:
        ctx.result(check_id, AREA, desc, threshold.describe(), "never (nothing written since the first reading)",
                   Outcome.PASS, detail)
        return
    when = datetime.fromtimestamp(now.at, tz=UTC) + timedelta(days=min(days, 365 * 1000))
    found = f"{when:%Y-%m-%d} (in {days:.0f} days)" if days > 0 else "already reached"
    ctx.result(check_id, AREA, desc, threshold.describe(), found, threshold.judge(days), detail)


def projected_days(first: WearReading, now: WearReading, rated: int) -> tuple[float | None, float]:
    """(days until `rated` bytes are written at the rate from first to now, or None at no writes; bytes/s).

    0 when the drive has written its rating already."""
    rate = (now.data_units_written - first.data_units_written) * DATA_UNIT_BYTES / (now.at - first.at)
    remaining = rated - now.data_units_written * DATA_UNIT_BYTES
    if remaining <= 0:
        return 0.0, rate
    if rate <= 0:
        return None, rate
    return round(remaining / rate / DAY_S, 3), rate  # rounded: a tier's own day is not lost to float error
