"""`$expand` on GET (`*`, `.`, `~` with `($levels=n)`), as the captured service roots advertise it."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from provision.lab.bmcsim.tree import Json, Resources, norm

_EXPR = re.compile(r"^([*.~])(?:\(\$levels=(\d+)\))?$")


def parse(query: str, max_levels: int) -> tuple[str, int] | None:
    """(kind, levels) from a query string, or None when it asks for no (valid) expansion."""
    values = parse_qs(query, keep_blank_values=True).get("$expand")
    if not values or max_levels <= 0:
        return None
    m = _EXPR.match(values[0].strip())
    if not m:
        return None
    levels = int(m.group(2) or 1)
    return m.group(1), max(1, min(levels, max_levels))


def encoded(res: Resources, uri: str, kind: str, levels: int) -> bytes:
    """The expanded body of `uri`, encoded (shared per seed while unchanged: Resources.derived)."""

    def build(fetch: Callable[[str], Json | None]) -> bytes:
        return json.dumps(expand(fetch(uri) or {}, kind, levels, fetch)).encode()

    return res.derived(("$expand", uri, kind, levels), build)


def expand(obj: Json, kind: str, levels: int, fetch: Callable[[str], Json | None]) -> Json:
    """A copy of `obj` with its links replaced by the linked resources, `levels` deep."""
    return _walk(obj, kind, levels, fetch, in_links=False)


def _walk(node: Any, kind: str, levels: int, fetch: Callable[[str], Json | None], in_links: bool) -> Any:
    if levels <= 0:
        return node  # nothing left to expand below: shared, not copied (the reply is only encoded)
    if isinstance(node, dict):
        if set(node) == {"@odata.id"} and levels > 0 and _wanted(kind, in_links):
            target = fetch(norm(str(node["@odata.id"])))
            if target is not None:
                return _walk(target, kind, levels - 1, fetch, in_links=False)
            return node
        return {k: _walk(v, kind, levels, fetch, in_links or k == "Links") for k, v in node.items()}
    if isinstance(node, list):
        return [_walk(v, kind, levels, fetch, in_links) for v in node]
    return node


def _wanted(kind: str, in_links: bool) -> bool:
    if kind == "*":
        return True
    return in_links if kind == "~" else not in_links
