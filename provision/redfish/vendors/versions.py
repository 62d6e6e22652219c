"""Firmware version parsing that copes with vendor formats; the ordering of two versions is by scheme
(provision/spec/versions.py: dotted, hex-dotted, date, opaque) and is re-exported here."""

from __future__ import annotations

import re

from provision.spec.versions import (
    VersionScheme,
    VersionsNotComparable,
    classify,
    compare,
    fits,
    normalise,
)

__all__ = ["VersionScheme", "VersionsNotComparable", "classify", "compare", "fits", "normalise", "parse_version"]

# a token after "Ver"/"v" (P79 v1.45), or a dotted token standing alone: never one cut out of a longer word
# (G520.0200.00.05, HGX-22.10-1-rc34 and 00.02.0134.0000_n00 are opaque as a whole, not 0200.00.05 or 22.10)
_AFTER_VER = re.compile(r"(?i)\b(?:ver(?:sion)?|v)\.?\s*:?\s*([0-9][0-9A-Za-z]*(?:[.\-_][0-9A-Za-z]+)*)(?![\w.\-])")
_DOTTED = re.compile(r"(?<![\w.])([0-9][0-9A-Za-z]*(?:\.[0-9A-Za-z]+)+)(?![\w.\-])")
_DATE = re.compile(r"(?<![\w/\-])([0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{2}/[0-9]{2}/[0-9]{4})(?![\w/\-])")


def parse_version(raw: str | None) -> str | None:
    """The version token of a vendor string: 'BIOS Date: 08/04/2023 Ver 1.4' -> '1.4',
    'P79 v1.45' -> '1.45', '6.00.30.00' -> '6.00.30.00', 'BIOS Date: 08/04/2023' -> '08/04/2023'. A string
    with no such token is its own (opaque) version: 'buildbrain-gcid-38635631' stays whole, never '38635631'."""
    if raw is None:
        return None
    text = str(raw).strip()
    if not text:
        return None
    if classify(text) is not VersionScheme.OPAQUE:
        return text
    for pat in (_AFTER_VER, _DOTTED, _DATE):
        m = pat.search(text)
        if m:
            return m.group(1)
    return text
