"""The CPUs as SMBIOS describes them (`dmidecode -t processor -t cache`): each socket's base clock and L3 size.

Type 4's Current Speed is the speed the processor ran at boot, which firmware reports as the part's base (nominal)
clock (the linuxhw captures: a Xeon Platinum 8470N 1700 MHz, a Xeon Gold 5416S 2000 MHz, their data sheets' base
clocks; Max Speed is a board figure, 4000 MHz on both). Type 7 (Level 3), linked from each processor's L3 Cache
Handle, is that socket's whole L3 (8470N: 99840 kB, its 97.5 MB). lscpu's "L3 cache" is no stand-in: util-linux
before 2.34 prints one instance's size, later ones the sum over all instances.
"""

from __future__ import annotations

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.parsers.dmidecode import CacheInfo, DmiReport, ProcessorInfo, parse_dmidecode

AREA = "cpu"
SECTION = "dmidecode_cpu"
COMMAND = "dmidecode -t processor -t cache"


def judge(ctx: Context) -> None:
    cpu = ctx.spec.cpu
    rows = (("cpu.base_clock", "base clock of every socket (SMBIOS Current Speed)",
             f"{round(cpu.base_clock_ghz * 1000)} MHz"),
            ("cpu.l3_cache", "L3 of every socket (SMBIOS Level 3 cache)", f"{cpu.l3_cache_mb_per_socket} MB"))
    try:
        dmi = ctx.parsed(SECTION, parse_dmidecode)
        sockets = [p for p in dmi.processors if p.populated]
        if not sockets:
            raise Unreadable("no populated processor (type 4) record")
    except Unreadable as why:
        for cid, desc, expected in rows:
            ctx.unreadable(cid, AREA, desc, expected, why.reason)
        return
    _base_clock(ctx, rows[0], sockets)
    _l3(ctx, rows[1], dmi, sockets)


def _base_clock(ctx: Context, row: tuple[str, str, str], sockets: list[ProcessorInfo]) -> None:
    cid, desc, expected = row
    unknown = [p.socket for p in sockets if p.current_speed_mhz is None]
    if unknown:
        ctx.unreadable(cid, AREA, desc, expected, f"no Current Speed for {', '.join(unknown)}")
        return
    want = round(ctx.spec.cpu.base_clock_ghz * 1000)
    off = [f"{p.socket} {p.current_speed_mhz} MHz" for p in sockets if p.current_speed_mhz != want]
    found = sorted({f"{p.current_speed_mhz} MHz" for p in sockets})
    ctx.record(cid, AREA, desc, expected, found, not off, f"not the base clock: {', '.join(off)}" if off else "")


def _l3_of(dmi: DmiReport, sockets: list[ProcessorInfo]) -> list[tuple[str, CacheInfo]] | None:
    """Each socket's L3 record: the one its L3 Cache Handle names; where no socket links one, the level-3
    records in order when there is one per socket; None when that cannot be told."""
    by_handle = {c.handle: c for c in dmi.caches}
    linked = [(p.socket, by_handle.get(p.l3_cache_handle or "")) for p in sockets]
    if all(c is not None and c.level == 3 for _, c in linked):
        return [(s, c) for s, c in linked if c is not None]
    level3 = [c for c in dmi.caches if c.level == 3]
    if all(p.l3_cache_handle is None for p in sockets) and len(level3) == len(sockets):
        return [(p.socket, c) for p, c in zip(sockets, level3, strict=True)]
    return None


def _l3(ctx: Context, row: tuple[str, str, str], dmi: DmiReport, sockets: list[ProcessorInfo]) -> None:
    cid, desc, expected = row
    pairs = _l3_of(dmi, sockets)
    if pairs is None or any(c.installed_kib is None for _, c in pairs):
        ctx.unreadable(cid, AREA, desc, expected, "no Level 3 cache record (type 7) with an Installed Size for "
                       "each socket")
        return
    want_kib = ctx.spec.cpu.l3_cache_mb_per_socket * 1024
    sizes = [(s, c.installed_kib or 0) for s, c in pairs]
    off = [f"{s} {kib / 1024:g} MB" for s, kib in sizes if kib != want_kib]
    found = sorted({f"{kib / 1024:g} MB" for _, kib in sizes})
    ctx.record(cid, AREA, desc, expected, found, not off, f"not the spec's L3: {', '.join(off)}" if off else "")
