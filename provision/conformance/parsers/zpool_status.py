"""`zpool status`: per pool its state, messages and the vdev tree with error counters.

Each pool ends with an `errors:` line; a pool without one is reported as truncated.
"""

from __future__ import annotations

import re

from provision.conformance.parsers._base import Model, fail, lines_of, tool_parser

TOOL = "zpool status"

_FIELD = re.compile(r"^\s*(?P<key>pool|id|state|status|action|see|scan|remove|config|errors|comment):\s?(?P<value>.*)$")
_COUNT = re.compile(r"^(?P<num>\d+(?:\.\d+)?)(?P<suffix>[KMGTPE]?)$")
_GROUPS = frozenset({"logs", "cache", "spares", "special", "dedup"})
_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
_NO_POOLS = "no pools available"


class Vdev(Model):
    """One row of the config tree: the pool itself, a raidz/mirror group, a disk, or a group header."""

    name: str
    state: str | None
    read_errors: int | None
    write_errors: int | None
    checksum_errors: int | None
    note: str | None
    children: tuple[Vdev, ...] = ()

    def leaves(self) -> tuple[Vdev, ...]:
        """The devices at the bottom of this subtree."""
        if not self.children:
            return (self,)
        return tuple(leaf for child in self.children for leaf in child.leaves())


class Pool(Model):
    """One pool of `zpool status`."""

    name: str
    state: str
    status: str | None
    action: str | None
    scan: str | None
    errors: str
    config: tuple[Vdev, ...]

    @property
    def root(self) -> Vdev:
        """The pool's own row (top of the data vdev tree)."""
        return next(v for v in self.config if v.name == self.name)


def _count(what: str, value: str) -> int:
    match = _COUNT.match(value)
    if not match:
        fail(TOOL, f"{what}: error counter {value!r} is not a number")
    return int(float(match["num"]) * _SUFFIX[match["suffix"]])


def _row(pool: str, cells: list[str]) -> Vdev:
    name = cells[0]
    if len(cells) == 1:
        if name not in _GROUPS:
            fail(TOOL, f"pool {pool}: config row {name!r} has no state")
        return Vdev(name=name, state=None, read_errors=None, write_errors=None, checksum_errors=None, note=None)
    if len(cells) == 2 or (len(cells) > 2 and not _COUNT.match(cells[2])):
        return Vdev(
            name=name,
            state=cells[1],
            read_errors=None,
            write_errors=None,
            checksum_errors=None,
            note=" ".join(cells[2:]) or None,
        )
    if len(cells) < 5:
        fail(TOOL, f"pool {pool}: config row {' '.join(cells)!r} is incomplete (truncated output?)")
    what = f"pool {pool} vdev {name}"
    return Vdev(
        name=name,
        state=cells[1],
        read_errors=_count(what, cells[2]),
        write_errors=_count(what, cells[3]),
        checksum_errors=_count(what, cells[4]),
        note=" ".join(cells[5:]) or None,
    )


def _tree(pool: str, rows: list[tuple[int, Vdev]]) -> tuple[Vdev, ...]:
    """Nest rows by indentation, bottom-up (models are frozen)."""

    def build(start: int, depth: int) -> tuple[list[Vdev], int]:
        nodes: list[Vdev] = []
        i = start
        while i < len(rows) and rows[i][0] >= depth:
            level, vdev = rows[i]
            if level > depth:
                fail(TOOL, f"pool {pool}: vdev {vdev.name} is indented deeper than its parent allows")
            children, i = build(i + 1, depth + 1)
            nodes.append(vdev.model_copy(update={"children": tuple(children)}) if children else vdev)
        return nodes, i

    nodes, end = build(0, 0)
    if end != len(rows):
        fail(TOOL, f"pool {pool}: config tree is inconsistent")
    return tuple(nodes)


def _config(pool: str, lines: list[str]) -> tuple[Vdev, ...]:
    body = [line.expandtabs(8) for line in lines if line.strip()]
    if not body or body[0].split()[:2] != ["NAME", "STATE"]:
        fail(TOOL, f"pool {pool}: config has no 'NAME STATE READ WRITE CKSUM' header")
    rows = body[1:]
    if not rows:
        fail(TOOL, f"pool {pool}: config lists no vdevs")
    base = len(rows[0]) - len(rows[0].lstrip())
    parsed: list[tuple[int, Vdev]] = []
    for line in rows:
        indent = len(line) - len(line.lstrip())
        if indent < base or (indent - base) % 2:
            fail(TOOL, f"pool {pool}: odd indentation in config row {line.strip()!r}")
        parsed.append(((indent - base) // 2, _row(pool, line.split())))
    tree = _tree(pool, parsed)
    if not any(v.name == pool for v in tree):
        fail(TOOL, f"pool {pool}: config does not list the pool itself")
    return tree


def _pools(text: str) -> list[tuple[dict[str, str], list[str]]]:
    pools: list[tuple[dict[str, str], list[str]]] = []
    last_key: str | None = None
    for line in lines_of(text):
        match = _FIELD.match(line)
        if match:
            key, value = match["key"], match["value"].strip()
            if key == "pool":
                pools.append(({}, []))
            elif not pools:
                fail(TOOL, f"{key!r} line before any 'pool:' line")
            pools[-1][0][key] = value
            last_key = key
        elif not pools:
            if line.strip():
                fail(TOOL, f"unexpected line {line.strip()[:120]!r}")
        elif last_key == "config":
            pools[-1][1].append(line)
        elif line.strip() and last_key is not None:
            fields = pools[-1][0]
            fields[last_key] = f"{fields[last_key]} {line.strip()}".strip()
    return pools


def _pool(fields: dict[str, str], config: list[str]) -> Pool:
    name = fields["pool"]
    for key in ("state", "config", "errors"):
        if key not in fields:
            fail(TOOL, f"pool {name}: no '{key}:' line (truncated output?)")
    return Pool(
        name=name,
        state=fields["state"],
        status=fields.get("status") or None,
        action=fields.get("action") or None,
        scan=fields.get("scan") or None,
        errors=fields["errors"],
        config=_config(name, config),
    )


@tool_parser(TOOL)
def parse_zpool_status(text: str) -> tuple[Pool, ...]:
    """Parse `zpool status [pool...]`; "no pools available" gives an empty tuple."""
    if text.strip() == _NO_POOLS:
        return ()
    pools = _pools(text)
    if not pools:
        fail(TOOL, "no 'pool:' line")
    return tuple(_pool(fields, config) for fields, config in pools)
