"""`/proc/meminfo`: memory totals and huge pages."""

from __future__ import annotations

import re

from provision.conformance.parsers._base import Model, fail, lines_of, tool_parser

TOOL = "/proc/meminfo"

_LINE = re.compile(r"^(?P<key>[A-Za-z0-9_()]+):\s+(?P<value>\d+)(?: (?P<unit>kB))?$")


class MemInfo(Model):
    """All counters (kB values in KiB, counts as-is) plus the ones we check."""

    values: dict[str, int]
    mem_total_kib: int
    mem_free_kib: int
    mem_available_kib: int
    hugepages_total: int | None
    hugepages_free: int | None
    hugepage_size_kib: int | None


@tool_parser(TOOL)
def parse_meminfo(text: str) -> MemInfo:
    """Parse /proc/meminfo."""
    values: dict[str, int] = {}
    for line in lines_of(text):
        if not line.strip():
            continue
        match = _LINE.match(line.strip())
        if match is None:
            fail(TOOL, f"unexpected line {line.strip()[:120]!r}")
        values[match["key"]] = int(match["value"])
    for key in ("MemTotal", "MemFree", "MemAvailable"):
        if key not in values:
            fail(TOOL, f"no '{key}' line")
    return MemInfo(
        values=values,
        mem_total_kib=values["MemTotal"],
        mem_free_kib=values["MemFree"],
        mem_available_kib=values["MemAvailable"],
        hugepages_total=values.get("HugePages_Total"),
        hugepages_free=values.get("HugePages_Free"),
        hugepage_size_kib=values.get("Hugepagesize"),
    )
