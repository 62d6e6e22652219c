"""Memory checks: visible total (/proc/meminfo), and from dmidecode the DIMMs, type, speed, ECC, population and
(where the spec says RDIMM or UDIMM) each DIMM's Type Detail."""

from __future__ import annotations

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.checks.memory_layout import layout
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers.dmidecode import DmiReport, MemoryDevice, parse_dmidecode
from provision.conformance.parsers.meminfo import parse_meminfo
from provision.spec.model import NodeSpec

AREA = "memory"
MEMINFO = "meminfo"
DMI = "dmidecode_memory"
# Firmware, the kernel and reserved ranges keep a few percent of the installed memory.
VISIBLE_FRACTION = 0.95
# SMBIOS type 17 Type Detail flags (dmidecode's wording, DMTF DSP0134 7.18.3): bit 13 Registered (Buffered),
# bit 14 Unbuffered (Unregistered).
TYPE_DETAIL = {"RDIMM": "Registered (Buffered)", "UDIMM": "Unbuffered (Unregistered)"}


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
        ("memory.speed", "slowest configured DIMM speed (MT/s)", f">= {mem.min_speed_mts}"),
        ("memory.ecc", "ECC on the system memory array", mem.ecc),
        ("memory.population", "DIMMs per channel on every socket (Locator/Bank Locator)",
         f"{ctx.spec.cpu.sockets} socket(s) x {mem.channels_per_socket} channel(s) x {mem.dimms_per_channel} "
         "DIMM(s)"),
    ]
    try:
        dmi = ctx.parsed(DMI, parse_dmidecode)
    except Unreadable as why:
        for cid, desc, expected in rows:
            ctx.unreadable(cid, AREA, desc, expected, why.reason)
        return
    dimms = [d for d in dmi.memory_devices if d.populated]
    types = sorted({d.type or "unknown" for d in dimms})
    speeds = [d.configured_speed_mts for d in dimms]
    ecc = _ecc(dmi)
    installed_gb = dmi.installed_memory_mib // 1024
    ctx.equal(rows[0][0], AREA, rows[0][1], mem.total_gb, installed_gb)
    ctx.equal(rows[1][0], AREA, rows[1][1], mem.dimm_count, len(dimms))
    ctx.record(rows[2][0], AREA, rows[2][1], mem.type, types, types == [mem.type])
    _speed(ctx, rows[3], dimms, speeds)
    ctx.record(rows[4][0], AREA, rows[4][1], mem.ecc, ecc or "no system memory array", _has_ecc(ecc) == mem.ecc)
    _population(ctx, rows[5], dmi)
    if mem.module is not None:
        _module(ctx, mem.module, dimms)


def _module(ctx: Context, module: str, dimms: list[MemoryDevice]) -> None:
    """Every populated DIMM's Type Detail carries the flag of the spec's module kind (a DIMM that says neither
    cannot be judged: ERROR, never a pass)."""
    cid, desc, want = "memory.module", f"every DIMM is {module} (SMBIOS Type Detail)", TYPE_DETAIL[module]
    flags = {d.locator: [k for k, flag in TYPE_DETAIL.items() if flag in (d.type_detail or "")] for d in dimms}
    unknown = [loc for loc, kinds in flags.items() if len(kinds) != 1]
    if unknown or not dimms:
        ctx.unreadable(cid, AREA, desc, want, f"no Registered/Unbuffered flag in the Type Detail of "
                       f"{', '.join(unknown[:4]) or 'any DIMM'}")
        return
    other = sorted(loc for loc, kinds in flags.items() if kinds != [module])
    found = sorted({kinds[0] for kinds in flags.values()})
    ctx.record(cid, AREA, desc, want, found, not other, f"not {module}: {', '.join(other[:8])}" if other else "")


def _speed(ctx: Context, row: tuple[str, str, object], dimms: list[MemoryDevice], speeds: list[int | None]) -> None:
    """The speed the memory runs at is Configured Memory Speed; the module's rated Speed is no stand-in."""
    cid, desc, expected = row
    unknown = [d.locator for d, mts in zip(dimms, speeds, strict=True) if mts is None]
    if unknown or not speeds:
        ctx.unreadable(cid, AREA, desc, expected,
                       f"no Configured Memory Speed for {', '.join(unknown[:4]) or 'any DIMM'}")
        return
    slowest = min(s for s in speeds if s is not None)
    slow = sorted({d.locator for d, mts in zip(dimms, speeds, strict=True)
                   if mts is not None and mts < ctx.spec.memory.min_speed_mts})
    ctx.record(cid, AREA, desc, expected, slowest, not slow,
               f"below the minimum: {', '.join(slow[:8])}" if slow else "")


def _population(ctx: Context, row: tuple[str, str, object], dmi: DmiReport) -> None:
    cid, desc, expected = row
    mem = ctx.spec.memory
    found = layout(dmi.memory_devices, ctx.spec.cpu.sockets, mem.channels_per_socket, mem.dimms_per_channel)
    if found.unmapped:
        ctx.unreadable(cid, AREA, desc, expected,
                       f"locators carry no socket/channel: {', '.join(found.unmapped[:4])}")
        return
    ctx.record(cid, AREA, desc, expected, found.summary, not found.problems, "; ".join(found.problems))


def _ecc(dmi: DmiReport) -> str | None:
    arrays = [a for a in dmi.memory_arrays if (a.use or "").lower().startswith("system")] or list(dmi.memory_arrays)
    kinds = sorted({a.error_correction or "unknown" for a in arrays})
    return ", ".join(kinds) if kinds else None


def _has_ecc(kinds: str | None) -> bool:
    return bool(kinds) and all("ECC" in k for k in (kinds or "").split(", "))
