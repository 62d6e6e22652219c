"""A small reader of the exposition text the tests write: {(name, frozenset(labels)): value}."""

from __future__ import annotations

import re

_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Series:
    out: Series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = frozenset((k, v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\"))
                           for k, v in _LABEL.findall(m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def value(series: Series, name: str, **labels: str) -> float:
    return series[(name, frozenset(labels.items()))]


def named(series: Series, name: str) -> list[dict[str, str]]:
    """The label sets of every sample of `name`."""
    return [dict(labels) for (n, labels) in series if n == name]
