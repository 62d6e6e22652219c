"""Mutating parsed YAML/JSON documents for the fuzz tests: every key path, and a setter that can delete."""

from __future__ import annotations

from typing import Any

DELETE = object()


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key/index path into a document of dicts and lists."""
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += paths(v, (*prefix, i))
    return out


def set_path(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    """Set (or, with DELETE, remove) the value at `path`."""
    for key in path[:-1]:
        doc = doc[key]
    if value is DELETE:
        del doc[path[-1]]
    else:
        doc[path[-1]] = value
