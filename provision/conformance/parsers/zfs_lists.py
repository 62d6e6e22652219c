"""Script-mode ZFS listings: `zpool list -Hp`, `zfs list -Hp`, `zfs get -Hp`.

`-H` gives tab-separated rows without a header, `-p` exact numbers. The caller passes the
`-o` columns it asked for (defaults are the tools' own defaults). Numeric properties become
int/float ('-' becomes None); other properties stay text. Property names are normalised to
their long form (alloc -> allocated, frag -> fragmentation, avail -> available, ...).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from provision.conformance.parsers._base import Model, fail, lines_of, present, tool_parser

TOOL_ZPOOL_LIST = "zpool list -Hp"
TOOL_ZFS_LIST = "zfs list -Hp"
TOOL_ZFS_GET = "zfs get -Hp"

ZPOOL_LIST_DEFAULT = (
    "name",
    "size",
    "alloc",
    "free",
    "ckpoint",
    "expandsz",
    "frag",
    "cap",
    "dedup",
    "health",
    "altroot",
)
ZFS_LIST_DEFAULT = ("name", "used", "avail", "refer", "mountpoint")
ZFS_GET_DEFAULT = ("name", "property", "value", "source")

_ALIASES = {
    "alloc": "allocated",
    "ckpoint": "checkpoint",
    "expandsz": "expandsize",
    "frag": "fragmentation",
    "cap": "capacity",
    "dedup": "dedupratio",
    "avail": "available",
    "refer": "referenced",
    "usedsnap": "usedbysnapshots",
    "usedds": "usedbydataset",
    "usedchild": "usedbychildren",
    "usedrefreserv": "usedbyrefreservation",
    "ratio": "compressratio",
    "refratio": "refcompressratio",
    "reserv": "reservation",
    "refreserv": "refreservation",
    "recsize": "recordsize",
    "compress": "compression",
    "lrefer": "logicalreferenced",
    "lused": "logicalused",
}
_INTEGER = frozenset(
    {
        "size",
        "allocated",
        "free",
        "checkpoint",
        "expandsize",
        "fragmentation",
        "capacity",
        "freeing",
        "leaked",
        "used",
        "available",
        "referenced",
        "usedbysnapshots",
        "usedbydataset",
        "usedbychildren",
        "usedbyrefreservation",
        "quota",
        "refquota",
        "reservation",
        "refreservation",
        "recordsize",
        "volsize",
        "volblocksize",
        "logicalreferenced",
        "logicalused",
        "written",
        "guid",
        "ashift",
    }
)
_RATIO = frozenset({"dedupratio", "compressratio", "refcompressratio"})
_RATIO_VALUE = re.compile(r"^(\d+(?:\.\d+)?)x?$")
_INT_VALUE = re.compile(r"^(\d+)%?$")

Scalar = int | float | str | None


def canonical(prop: str) -> str:
    """The long name of a ZFS property (`avail` -> `available`)."""
    return _ALIASES.get(prop, prop)


def _typed(tool: str, what: str, prop: str, raw: str) -> Scalar:
    value = present(raw)
    if value is None:
        return None
    if prop in _INTEGER:
        if value == "none":
            return None
        match = _INT_VALUE.match(value)
        if not match:
            fail(tool, f"{what}: {prop} {value!r} is not an exact integer (was -p given?)")
        return int(match[1])
    if prop in _RATIO:
        match = _RATIO_VALUE.match(value)
        if not match:
            fail(tool, f"{what}: {prop} {value!r} is not a ratio")
        return float(match[1])
    return value


class ZfsRow(Model):
    """One row of a listing, keyed by long property name."""

    values: dict[str, Scalar]

    @property
    def name(self) -> str:
        """The pool or dataset name (first column)."""
        return str(self.values["name"])

    def get(self, prop: str) -> Scalar:
        """The value of `prop` (short or long name); ParseError if the listing lacks it."""
        key = canonical(prop)
        if key not in self.values:
            fail("zfs", f"property {prop!r} was not listed")
        return self.values[key]


def _split(tool: str, text: str, width: int) -> list[list[str]]:
    rows = [line.split("\t") for line in lines_of(text) if line.strip()]
    for number, cells in enumerate(rows, start=1):
        if len(cells) != width:
            fail(tool, f"row {number} has {len(cells)} tab-separated cells, expected {width} (truncated or not -H?)")
    return rows


def _listing(tool: str, text: str, columns: Sequence[str]) -> tuple[ZfsRow, ...]:
    names = tuple(canonical(c.strip()) for c in columns)
    if not names or names[0] != "name":
        fail(tool, "the first column must be 'name'")
    rows = []
    for cells in _split(tool, text, len(names)):
        what = f"row {cells[0]!r}"
        values = {n: c if n == "name" else _typed(tool, what, n, c) for n, c in zip(names, cells, strict=True)}
        rows.append(ZfsRow(values=values))
    return tuple(rows)


@tool_parser(TOOL_ZPOOL_LIST)
def parse_zpool_list(text: str, columns: Sequence[str] = ZPOOL_LIST_DEFAULT) -> tuple[ZfsRow, ...]:
    """Parse `zpool list -Hp [-o columns]`."""
    return _listing(TOOL_ZPOOL_LIST, text, columns)


@tool_parser(TOOL_ZFS_LIST)
def parse_zfs_list(text: str, columns: Sequence[str] = ZFS_LIST_DEFAULT) -> tuple[ZfsRow, ...]:
    """Parse `zfs list -Hp [-o columns]`."""
    return _listing(TOOL_ZFS_LIST, text, columns)


class ZfsProperty(Model):
    """One row of `zfs get -Hp`."""

    dataset: str
    property: str
    value: Scalar
    source: str | None


@tool_parser(TOOL_ZFS_GET)
def parse_zfs_get(text: str, columns: Sequence[str] = ZFS_GET_DEFAULT) -> tuple[ZfsProperty, ...]:
    """Parse `zfs get -Hp [-o name,property,value,source] PROPS [DATASET...]`."""
    names = tuple(c.strip() for c in columns)
    if set(names) - set(ZFS_GET_DEFAULT) or "property" not in names or "value" not in names:
        fail(TOOL_ZFS_GET, f"columns {names} must be drawn from {ZFS_GET_DEFAULT} and include property, value")
    result = []
    for cells in _split(TOOL_ZFS_GET, text, len(names)):
        row = dict(zip(names, cells, strict=True))
        prop = canonical(row["property"])
        what = f"dataset {row.get('name', '?')!r}"
        result.append(
            ZfsProperty(
                dataset=row.get("name", ""),
                property=prop,
                value=_typed(TOOL_ZFS_GET, what, prop, row["value"]),
                source=present(row.get("source")),
            )
        )
    return tuple(result)
