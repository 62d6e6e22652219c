"""Memory checks: visible total (/proc/meminfo), and from dmidecode the DIMMs, type, speed and ECC."""

from __future__ import annotations

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers.dmidecode import DmiReport, parse_dmidecode
from provision.conformance.parsers.meminfo import parse_meminfo
from provision.spec.model import NodeSpec

AREA = "memory"
MEMINFO = "meminfo"
DMI = "dmidecode_memory"
# Firmware, the kernel and reserved ranges keep a few percent of the installed memory.
VISIBLE_FRACTION = 0.95


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    found = [Probe(name=MEMINFO, command="cat /proc/meminfo")]
    if level is not Level.QUICK:
        found.append(Probe(name=DMI, command="dmidecode -t memory"))
    return found


def evaluate(ctx: Context) -> None:
    _visible(ctx)
    if ctx.level is not Level.QUICK:
        _dimms(ctx)


def _visible(ctx: Context) -> None:
    total_gb = ctx.spec.memory.total_gb
    expected = f">= {VISIBLE_FRACTION:.0%} of {total_gb} GB"
    desc = "memory visible to the OS (MemTotal)"
    try:
        info = ctx.parsed(MEMINFO, parse_meminfo)
    except Unreadable as why:
        ctx.unreadable("memory.visible", AREA, desc, expected, why.reason)
        return
    gib = info.mem_total_kib / 1024 / 1024
    ctx.record("memory.visible", AREA, desc, expected, f"{gib:.1f} GiB",
               gib >= total_gb * VISIBLE_FRACTION)


def _dimms(ctx: Context) -> None:
    mem = ctx.spec.memory
    rows: list[tuple[str, str, object]] = [
        ("memory.installed", "installed memory (sum of DIMMs, GB)", mem.total_gb),
        ("memory.dimm_count", "populated DIMMs", mem.dimm_count),
        ("memory.type", "memory type of every DIMM", mem.type),
        ("memory.speed", "slowest DIMM speed (MT/s)", f">= {mem.min_speed_mts}"),
        ("memory.ecc", "ECC on the system memory array", mem.ecc),
    ]
    try:
        dmi = ctx.parsed(DMI, parse_dmidecode)
    except Unreadable as why:
        for cid, desc, expected in rows:
            ctx.unreadable(cid, AREA, desc, expected, why.reason)
        return
    dimms = [d for d in dmi.memory_devices if d.populated]
    types = sorted({d.type or "unknown" for d in dimms})
    speeds = [d.configured_speed_mts or d.speed_mts or 0 for d in dimms]
    slowest = min(speeds) if speeds else None
    ecc = _ecc(dmi)
    installed_gb = dmi.installed_memory_mib // 1024
    ctx.equal(rows[0][0], AREA, rows[0][1], mem.total_gb, installed_gb)
    ctx.equal(rows[1][0], AREA, rows[1][1], mem.dimm_count, len(dimms))
    ctx.record(rows[2][0], AREA, rows[2][1], mem.type, types, types == [mem.type])
    ctx.record(rows[3][0], AREA, rows[3][1], rows[3][2], slowest,
               slowest is not None and slowest >= mem.min_speed_mts)
    ctx.record(rows[4][0], AREA, rows[4][1], mem.ecc, ecc or "no system memory array", _has_ecc(ecc) == mem.ecc)


def _ecc(dmi: DmiReport) -> str | None:
    arrays = [a for a in dmi.memory_arrays if (a.use or "").lower().startswith("system")] or list(dmi.memory_arrays)
    kinds = sorted({a.error_correction or "unknown" for a in arrays})
    return ", ".join(kinds) if kinds else None


def _has_ecc(kinds: str | None) -> bool:
    return bool(kinds) and all("ECC" in k for k in (kinds or "").split(", "))
