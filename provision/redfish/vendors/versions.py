"""Firmware version parsing and comparison that copes with vendor formats."""

from __future__ import annotations

import re

_AFTER_VER = re.compile(r"(?i)\b(?:ver(?:sion)?|v)\.?\s*:?\s*([0-9][0-9A-Za-z]*(?:[.\-_][0-9A-Za-z]+)*)")
_DOTTED = re.compile(r"\b([0-9][0-9A-Za-z]*(?:\.[0-9A-Za-z]+)+)\b")
_NUMBER = re.compile(r"\b([0-9]+)\b")
_HEX = re.compile(r"^[0-9A-Fa-f]+$")


def parse_version(raw: str | None) -> str | None:
    """The version token of a vendor string: 'BIOS Date: 08/04/2023 Ver 1.4' -> '1.4',
    'P79 v1.45' -> '1.45', '6.00.30.00' -> '6.00.30.00'."""
    if raw is None:
        return None
    text = str(raw).strip()
    for pat in (_AFTER_VER, _DOTTED, _NUMBER):
        m = pat.search(text)
        if m:
            return m.group(1)
    return text or None


def _parts(version: str) -> list[str]:
    return [p for p in re.split(r"[.\-_]", version) if p != ""]


def _cmp_part(a: str, b: str) -> int:
    if a.isdigit() and b.isdigit():
        x, y = int(a), int(b)
    elif _HEX.match(a) and _HEX.match(b):
        x, y = int(a, 16), int(b, 16)
    else:
        x, y = a.lower(), b.lower()  # type: ignore[assignment]
    return (x > y) - (x < y)


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as a is older, equal or newer than b. Parts compare as numbers (hex where
    either has hex letters, e.g. GPU '96.00.9F.00.04'); missing trailing parts count as zero."""
    pa, pb = _parts(a), _parts(b)
    width = max(len(pa), len(pb))
    pa += ["0"] * (width - len(pa))
    pb += ["0"] * (width - len(pb))
    hexy = any(re.search(r"[A-Fa-f]", p) for p in pa + pb)
    for x, y in zip(pa, pb, strict=True):
        if hexy and _HEX.match(x) and _HEX.match(y):
            c = (int(x, 16) > int(y, 16)) - (int(x, 16) < int(y, 16))
        else:
            c = _cmp_part(x, y)
        if c:
            return c
    return 0
