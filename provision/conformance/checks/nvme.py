"""NVMe checks: every boot and scratch drive present; per drive SMART wear and media errors."""

from __future__ import annotations

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import Probe, Section
from provision.conformance.model import Level
from provision.conformance.parsers.nvme import parse_nvme_list, parse_nvme_smart_log
from provision.spec.model import NodeSpec

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
    try:
        log = ctx.parsed(section.name, parse_nvme_smart_log)
    except Unreadable as why:
        ctx.unreadable(f"nvme.{short}.wear", AREA, wear_desc, f"<= {health.max_percentage_used}%", why.reason)
        ctx.unreadable(f"nvme.{short}.media_errors", AREA, err_desc, f"<= {health.max_media_errors}", why.reason)
        return
    ctx.record(f"nvme.{short}.wear", AREA, wear_desc, f"<= {health.max_percentage_used}%",
               f"{log.percentage_used}%", log.percentage_used <= health.max_percentage_used)
    ctx.record(f"nvme.{short}.media_errors", AREA, err_desc, f"<= {health.max_media_errors}",
               log.media_errors, log.media_errors <= health.max_media_errors)
