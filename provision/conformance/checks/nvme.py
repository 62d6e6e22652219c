"""NVMe checks: every boot and scratch drive present; per drive SMART wear (tiered: the spec's optional
warn_percentage_used warns, max_percentage_used fails), available spare (below the drive's own threshold
fails, below the spec's optional warn_available_spare_pct warns) and media errors."""

from __future__ import annotations

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import Probe, Section
from provision.conformance.model import Level, Threshold
from provision.conformance.parsers.nvme import NvmeSmartLog, parse_nvme_list, parse_nvme_smart_log
from provision.spec.model import NodeSpec, NvmeHealth

AREA = "nvme"
LIST = "nvme_list"
SMART = "nvme_smart"


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    found = [Probe(name=LIST, command="nvme list -o json")]
    if level is not Level.QUICK:
        found.append(Probe(name=SMART, command='nvme smart-log "$1" -o json', each="/dev/nvme[0-9]*n1"))
    return found


def expected_drives(spec: NodeSpec) -> int:
    st = spec.storage
    return sum(s.count for s in (st.boot, st.scratch) if s.interface == "nvme")


def evaluate(ctx: Context) -> None:
    want = expected_drives(ctx.spec)
    desc = "NVMe drives present (boot + scratch)"
    try:
        drives = ctx.parsed(LIST, parse_nvme_list)
    except Unreadable as why:
        ctx.unreadable("nvme.count", AREA, desc, want, why.reason)
        return
    ctx.equal("nvme.count", AREA, desc, want, len(drives))
    if ctx.level is not Level.QUICK:
        for section in ctx.facts.matching(SMART):
            _smart(ctx, section)


def _smart(ctx: Context, section: Section) -> None:
    health = ctx.spec.storage.nvme_health
    dev = section.name.split(":", 1)[1]
    short = dev.removeprefix("/dev/")
    wear_desc = f"{dev} SMART percentage used"
    err_desc = f"{dev} SMART media errors"
    spare_desc = f"{dev} SMART available spare"
    wear = Threshold(fail=health.max_percentage_used, warn=health.warn_percentage_used, unit="%")
    try:
        log = ctx.parsed(section.name, parse_nvme_smart_log)
    except Unreadable as why:
        ctx.unreadable(f"nvme.{short}.wear", AREA, wear_desc, wear.describe(), why.reason)
        ctx.unreadable(f"nvme.{short}.media_errors", AREA, err_desc, f"<= {health.max_media_errors}", why.reason)
        ctx.unreadable(f"nvme.{short}.spare", AREA, spare_desc, "above the drive's spare threshold", why.reason)
        return
    ctx.tiered(f"nvme.{short}.wear", AREA, wear_desc, log.percentage_used, wear)
    ctx.tiered(f"nvme.{short}.spare", AREA, spare_desc, log.available_spare_pct, spare_threshold(health, log),
               f"the drive's spare threshold is {log.available_spare_threshold_pct}%"
               if log.available_spare_threshold_pct is not None else "the drive reports no spare threshold")
    ctx.record(f"nvme.{short}.media_errors", AREA, err_desc, f"<= {health.max_media_errors}",
               log.media_errors, log.media_errors <= health.max_media_errors)


def spare_threshold(health: NvmeHealth, log: NvmeSmartLog) -> Threshold:
    """Available spare below the drive's own threshold (NVMe spare_thresh) fails; below the spec's tier warns."""
    fail = float(log.available_spare_threshold_pct or 0)
    warn = health.warn_available_spare_pct
    return Threshold(fail=fail, warn=warn if warn is not None and warn > fail else None, above=False, unit="%")
