"""`nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]` -> typed rows.

Generic: the header (or the `fields` the caller asked for, with `noheader`) names the
columns. Numeric fields (memory, power, temperature, clocks, utilization, PCIe link,
counters) become int/float with their unit stripped; N/A-style values become None; every
other field stays text. A row with the wrong number of cells is an error (truncated output).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence

from provision.conformance.parsers._base import Model, fail, lines_of, present, tool_parser

TOOL = "nvidia-smi --query-gpu"

Scalar = int | float | str | None

_NUMERIC_PREFIXES = (
    "memory.",
    "power.",
    "enforced.power.limit",
    "module.power.",
    "module.enforced.power.limit",
    "temperature.",
    "utilization.",
    "clocks.current.",
    "clocks.max.",
    "clocks.applications.",
    "clocks.default_applications.",
    "clocks.gr",
    "clocks.sm",
    "clocks.mem",
    "clocks.video",
    "pcie.link.gen.",
    "pcie.link.width.",
    "fan.speed",
    "ecc.errors.",
    "retired_pages.single_bit_ecc.count",
    "retired_pages.double_bit.count",
    "remapped_rows.correctable",
    "remapped_rows.uncorrectable",
    "remapped_rows.histogram.",
    "encoder.stats.",
    "accounting.buffer_size",
    "protected_memory.",
)
_NUMERIC_EXACT = frozenset({"index", "count"})
_NOT_NUMERIC = frozenset({"ecc.errors.uncorrected.aggregate.sram.thresholdExceeded"})
_HEADER = re.compile(r"^(?P<name>[A-Za-z0-9_.]+)(?:\s*\[(?P<unit>[^\]]+)\])?$")
_VALUE = re.compile(r"^(?P<num>[+-]?\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z%/]+(?:\(s\))?)?$")


def _is_numeric(name: str) -> bool:
    if name in _NOT_NUMERIC:
        return False
    return name in _NUMERIC_EXACT or name.startswith(_NUMERIC_PREFIXES)


class QueryGpuRow(Model):
    """One GPU's row: values keyed by field name (e.g. "memory.total" -> 81559)."""

    values: dict[str, Scalar]

    def get(self, name: str) -> Scalar:
        """The value of `name`; ParseError if the query did not ask for that field."""
        if name not in self.values:
            fail(TOOL, f"field {name!r} was not queried")
        return self.values[name]


class QueryGpuTable(Model):
    """The whole answer: column names, their units (from the header) and one row per GPU."""

    fields: tuple[str, ...]
    units: tuple[str | None, ...]
    rows: tuple[QueryGpuRow, ...]


def _split_header(cells: list[str]) -> tuple[tuple[str, ...], tuple[str | None, ...]]:
    names: list[str] = []
    units: list[str | None] = []
    for cell in cells:
        match = _HEADER.match(cell.strip())
        if not match:
            fail(TOOL, f"header cell {cell!r} is not a field name")
        names.append(match.group("name"))
        units.append(match.group("unit"))
    return tuple(names), tuple(units)


def _convert(name: str, raw: str) -> Scalar:
    text = raw.strip()
    if text.startswith("[") and text.endswith("]"):
        return None
    value = present(text)
    if value is None or not _is_numeric(name):
        return value
    match = _VALUE.match(value)
    if not match:
        fail(TOOL, f"field {name!r}: expected a number, got {value!r}")
    number = match.group("num")
    return float(number) if "." in number else int(number)


def _is_header(cells: list[str], names: tuple[str, ...]) -> bool:
    """True when the first row repeats the requested field names (csv without noheader)."""
    if len(cells) != len(names):
        return False
    return all(c.split(" [")[0].strip() == n for c, n in zip(cells, names, strict=True))


def _rows(text: str) -> list[list[str]]:
    body = [line for line in lines_of(text) if line.strip()]
    try:
        rows = list(csv.reader(io.StringIO("\n".join(body)), skipinitialspace=True))
    except csv.Error as exc:
        fail(TOOL, f"not CSV: {exc}")
    return [[cell.strip() for cell in row] for row in rows]


@tool_parser(TOOL)
def parse_query_gpu_csv(text: str, *, fields: Sequence[str] | None = None) -> QueryGpuTable:
    """Parse the CSV. Pass `fields` (the --query-gpu list) when the output has no header."""
    rows = _rows(text)
    if fields is None:
        names, units = _split_header(rows[0])
        rows = rows[1:]
    else:
        names, units = tuple(f.strip() for f in fields), tuple(None for _ in fields)
        if _is_header(rows[0], names):
            names, units = _split_header(rows[0])
            rows = rows[1:]
    if not rows:
        fail(TOOL, "header but no GPU rows")
    parsed = []
    for number, cells in enumerate(rows, start=1):
        if len(cells) != len(names):
            fail(TOOL, f"row {number} has {len(cells)} cells, header has {len(names)} (truncated output?)")
        parsed.append(QueryGpuRow(values={n: _convert(n, c) for n, c in zip(names, cells, strict=True)}))
    return QueryGpuTable(fields=names, units=units, rows=tuple(parsed))
