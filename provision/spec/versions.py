"""The rules for a version written in a node spec: an upstream release and a Debian package version; and the
schemes firmware versions are written in, with the one comparison that orders two of them."""

from __future__ import annotations

import datetime as _dt
import re
from enum import StrEnum

from provision.errors import ChecksIncomplete

VERSION_RE = re.compile(r"^[0-9]+(?:[.\-][0-9A-Za-z]+)*$")
APT_VERSION_RE = re.compile(r"^(?:[0-9]+:)?[0-9][0-9A-Za-z.+~\-]*$")  # [epoch:]upstream[-revision]


def check_version(value: str) -> str:
    """`value` when it is an upstream version (550.127.08, 2.27.3-1); ValueError otherwise."""
    if not VERSION_RE.match(value):
        raise ValueError(f"{value!r} is not a version (expected digits separated by dots, e.g. 550.127.08)")
    return value


def check_apt_version(value: str, *, unpinned_ok: bool = False) -> str:
    """`value` when it is a Debian package version (or empty, when `unpinned_ok`: no pin); ValueError otherwise."""
    if (value or not unpinned_ok) and not APT_VERSION_RE.match(value):
        raise ValueError(f"{value!r} is not a Debian package version")
    return value


# ---- firmware versions by scheme -------------------------------------------------------------------
class VersionScheme(StrEnum):
    """How a firmware version is written, and so how two of them are ordered (`version_scheme:` in a baseline
    or catalog image names one of these values)."""

    DOTTED = "dotted"
    """Decimal parts joined by dots: 2.1, 1.4.2, Dell's 2.19.1, a lone number of up to six digits (12)."""
    HEX_DOTTED = "hex-dotted"
    """Three or more hexadecimal parts of (up to) two digits: NVIDIA/HGX VBIOS and NVSwitch 96.00.9F.00.04."""
    DATE = "date"
    """A release date: 2023-08-04, 08/04/2023 (month first, as AMI writes it), 20230804."""
    OPAQUE = "opaque"
    """Anything else (build ids, hashes, vendor tags): equal or not, never older or newer."""


class VersionsNotComparable(ChecksIncomplete):
    """Two versions that are not in one orderable scheme (or one is opaque): they cannot be ordered, so
    nothing can say which is newer; a caller reports it as an error outcome naming both strings."""

    def __init__(self, a: str, b: str, why: str) -> None:
        super().__init__(f"cannot compare {a!r} with {b!r}: {why}")
        self.a, self.b, self.why = a, b, why

    def against(self, what: str) -> str:
        """One line naming both strings, the second as `what` ("baseline", "catalog"):
        "cannot compare 'buildbrain-gcid-38635631' with baseline '2.1': ..."."""
        return f"cannot compare {self.a!r} with {what} {self.b!r}: {self.why}"


_DOTTED_RE = re.compile(r"^(?:[0-9]{1,6}|[0-9]+(?:\.[0-9]+)+)$")  # a lone number of 7+ digits is a build id
_HEX_DOTTED_RE = re.compile(r"^[0-9a-f]{1,2}(?:\.[0-9a-f]{1,2}){2,}$")
_DATES = (
    (re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$"), (1, 2, 3)),  # 2023-08-04
    (re.compile(r"^([0-9]{2})/([0-9]{2})/([0-9]{4})$"), (3, 1, 2)),  # 08/04/2023 (AMI, month first)
    (re.compile(r"^([0-9]{4})([0-9]{2})([0-9]{2})$"), (1, 2, 3)),  # 20230804
)
_PREFERENCE: tuple[VersionScheme, ...] = (VersionScheme.DOTTED, VersionScheme.HEX_DOTTED, VersionScheme.DATE)


def normalise(version: str) -> str:
    """The form two versions are compared in: surrounding blanks dropped, case folded ('9F' is '9f')."""
    return version.strip().casefold()


def _date(version: str) -> _dt.date | None:
    for pattern, (y, m, d) in _DATES:
        found = pattern.match(version)
        if found:
            try:
                return _dt.date(int(found.group(y)), int(found.group(m)), int(found.group(d)))
            except ValueError:
                return None
    return None


def fits(version: str) -> frozenset[VersionScheme]:
    """Every orderable scheme `version` can be read in (empty: opaque). Three or more short decimal parts
    (96.00.61.00.01, 1.4.2) read as dotted and as hex-dotted; an eight-digit date (20230804) is only a date."""
    text = normalise(version)
    out: set[VersionScheme] = set()
    if _date(text) is not None:
        return frozenset({VersionScheme.DATE})
    if _DOTTED_RE.match(text):
        out.add(VersionScheme.DOTTED)
    if _HEX_DOTTED_RE.match(text):
        out.add(VersionScheme.HEX_DOTTED)
    return frozenset(out)


def classify(version: str) -> VersionScheme:
    """The scheme `version` is written in (dotted before hex-dotted where both read it; else opaque)."""
    found = fits(version)
    return next((s for s in _PREFERENCE if s in found), VersionScheme.OPAQUE)


def check_scheme(version: str, scheme: VersionScheme | None) -> str:
    """`version` when it can be read in `scheme` (None: any); ValueError naming both otherwise."""
    if scheme is not None and scheme is not VersionScheme.OPAQUE and scheme not in fits(version):
        raise ValueError(f"{version!r} is not a {scheme.value} version (it reads as {classify(version).value})")
    return version


def _key(version: str, scheme: VersionScheme) -> tuple[int, ...]:
    text = normalise(version)
    if scheme is VersionScheme.DATE:
        day = _date(text)
        assert day is not None
        return (day.toordinal(),)
    return tuple(int(p, 16 if scheme is VersionScheme.HEX_DOTTED else 10) for p in text.split("."))


def compare(a: str, b: str, scheme: VersionScheme | None = None) -> int:
    """-1, 0 or 1 as `a` is older, equal or newer than `b`, read in one scheme: `scheme` when declared (both
    must read in it), else one both read in. Equal strings (normalised) are equal in any scheme, opaque
    ones too; missing trailing parts count as zero (2.1 == 2.1.0 < 2.1.1). Raises VersionsNotComparable
    for two versions of different schemes, or an opaque one."""
    if normalise(a) == normalise(b):
        return 0
    common: VersionScheme
    if scheme is not None:
        missing = [v for v in (a, b) if scheme not in fits(v)]
        if scheme is VersionScheme.OPAQUE:
            raise VersionsNotComparable(a, b, "opaque versions are only equal or not")
        if missing:
            raise VersionsNotComparable(a, b, f"{missing[0]!r} is not a {scheme.value} version")
        common = scheme
    else:
        shared = fits(a) & fits(b)
        if not shared:
            raise VersionsNotComparable(a, b, _why(a, b))
        common = next(s for s in _PREFERENCE if s in shared)
    ka, kb = _key(a, common), _key(b, common)
    width = max(len(ka), len(kb))
    ka, kb = ka + (0,) * (width - len(ka)), kb + (0,) * (width - len(kb))
    return (ka > kb) - (ka < kb)


def _why(a: str, b: str) -> str:
    sa, sb = classify(a), classify(b)
    opaque = [v for v, s in ((a, sa), (b, sb)) if s is VersionScheme.OPAQUE]
    if opaque:
        return f"{opaque[0]!r} is not a version in any known scheme (an opaque build id is only equal or not)"
    return f"a {sa.value} version and a {sb.value} version are not ordered"
