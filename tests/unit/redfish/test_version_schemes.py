"""The version-scheme rules as a table: how a string is classified, how two versions of one scheme order
(missing trailing parts pad with zeros), and which pairs are never ordered (VersionsNotComparable, naming
both strings). Also the vendor-string parsing that must not cut a version out of an opaque build id."""

from __future__ import annotations

import pytest

from provision.errors import ChecksIncomplete, ProvisionError
from provision.redfish.vendors.versions import (
    VersionScheme,
    VersionsNotComparable,
    classify,
    compare,
    parse_version,
)
from provision.spec.versions import check_scheme

D, H, DATE, OP = VersionScheme.DOTTED, VersionScheme.HEX_DOTTED, VersionScheme.DATE, VersionScheme.OPAQUE


@pytest.mark.parametrize(("version", "scheme"), [
    ("2.1", D), ("1.4.2", D), ("2.19.1", D), ("12", D), ("550.127.08", D), ("28.39.1002", D),
    ("96.00.61.00.01", D), ("1.4.2", D),  # short decimal parts: dotted first, also hex-dotted (see compare)
    ("96.00.9F.00.04", H), ("1.7.5F", H), ("96.0.9F.0.4", H), ("96.00.a6.00.01", H), ("00.2A.2B", H), (" 96.00.A6.00.01  ", H),
    ("2023-08-04", DATE), ("08/04/2023", DATE), ("20230804", DATE),
    ("buildbrain-gcid-38635631", OP), ("38635631", OP), ("HGX-22.10-1-rc34", OP), ("00.02.0134.0000_n00", OP),
    ("G520.0200.00.05", OP), ("1.45.455b66-rev4", OP), ("2.1-rc1", OP), ("9F.00", OP),
    ("2023-13-04", OP), ("20231345", OP), ("deadbeefcafe", OP), ("", OP), ("v2.1", OP),
])
def test_classify(version: str, scheme: VersionScheme) -> None:
    assert classify(version) is scheme


@pytest.mark.parametrize(("a", "b", "want"), [
    # dotted numeric: parts as numbers, missing trailing parts are zeros
    ("1.4", "2.1", -1), ("2.1", "2.1", 0), ("2.1", "2.1.0", 0), ("2.1.0.0", "2.1", 0),
    ("2.1", "2.1.1", -1), ("2.1.1", "2.1", 1), ("1.10.0", "1.9.9", 1), ("11.02.05", "11.01.01", 1),
    ("2.19.1", "2.9.10", 1), ("3", "2.99", 1), ("28.39.1002", "28.37.10.14", 1),
    # hex-dotted (NVIDIA VBIOS / NVSwitch): parts as hex, padded the same way
    ("96.00.9F.00.04", "96.00.61.00.01", 1), ("96.10.35.00.01", "96.10.6D.00.01", -1),
    ("96.00.61.00", "96.00.61.00.01", -1), ("96.00.61.00.01", "96.00.61.00", 1),
    ("96.00.61.00", "96.00.61.00.00", 0), ("96.00.A0.00.01", "96.00.9F.00.01", 1),
    ("96.00.a6.00.01", "96.00.A6.00.01 ", 0), ("96.0.9F.0.4", "96.00.9F.00.04", 0),
    ("96.00.9F.00.04", "96.0.61.0.1", 1), ("1.4.A", "1.4.9", 1),
    # dates, in any of the three spellings
    ("2023-08-04", "2023-08-05", -1), ("08/04/2023", "2023-08-04", 0), ("20230804", "07/31/2023", 1),
    ("12/01/2022", "01/02/2023", -1),
    # equal strings are equal, opaque ones too (after blanks and case)
    ("buildbrain-gcid-38635631", "buildbrain-gcid-38635631", 0), ("ABCdef01", "abcdef01 ", 0),
])
def test_compare(a: str, b: str, want: int) -> None:
    assert compare(a, b) == want
    assert compare(b, a) == -want


@pytest.mark.parametrize(("a", "b"), [
    ("buildbrain-gcid-38635631", "2.1"),  # opaque vs dotted: never "newer"
    ("2.1", "buildbrain-gcid-38635631"),
    ("buildbrain-gcid-38635631", "buildbrain-gcid-38635632"),  # two opaque ones: equal or not, never ordered
    ("2023-08-04", "2.1"), ("20230804", "1.4"),  # a date and a dotted version
    ("96.00.9F.00.04", "2.1"), ("96.00.9F.00.04", "96.0.161.0.1"),  # hex-dotted and dotted
    ("2023-08-04", "96.00.9F.00.04"),
    ("HGX-22.10-1-rc34", "HGX-22.10-1-rc35"), ("2.1-rc1", "2.1"), ("38635631", "2.1"),
])
def test_never_ordered(a: str, b: str) -> None:
    with pytest.raises(VersionsNotComparable) as caught:
        compare(a, b)
    text = str(caught.value)
    assert repr(a) in text and repr(b) in text and "\n" not in text
    assert isinstance(caught.value, ProvisionError) and isinstance(caught.value, ChecksIncomplete)
    assert caught.value.against("baseline").startswith(f"cannot compare {a!r} with baseline {b!r}")


@pytest.mark.parametrize(("a", "b", "why"), [
    ("buildbrain-gcid-38635631", "2.1", "'buildbrain-gcid-38635631' is not a version in any known scheme"),
    ("2.1", "buildbrain-gcid-38635631", "'buildbrain-gcid-38635631' is not a version in any known scheme"),
    ("2023-08-04", "96.00.9F.00.04", "a date version and a hex-dotted version are not ordered"),
])
def test_the_reason_names_the_version_that_cannot_be_ordered(a: str, b: str, why: str) -> None:
    """The operator is told which string is the opaque one, or which two schemes met."""
    with pytest.raises(VersionsNotComparable) as caught:
        compare(a, b)
    assert caught.value.why.startswith(why), caught.value.why


@pytest.mark.parametrize(("a", "b", "scheme", "want"), [
    ("10.11.12.13", "10.11.12.100", D, -1),  # declared dotted: read as decimal though it looks hex-dotted
    ("96.00.61.00.01", "96.00.9F.00.01", H, -1),
    ("2023-08-04", "08/05/2023", DATE, -1),
    ("abc", "ABC", OP, 0),
])
def test_compare_in_a_declared_scheme(a: str, b: str, scheme: VersionScheme, want: int) -> None:
    assert compare(a, b, scheme) == want


@pytest.mark.parametrize(("a", "b", "scheme"), [
    ("96.00.9F.00.04", "96.00.61.00.01", D),  # 9F is no decimal part
    ("2.1", "2.2", DATE), ("2.1", "2.2", H), ("abc", "abd", OP), ("2.1", "2.2", OP),
])
def test_a_declared_scheme_both_do_not_read_in_is_not_ordered(a: str, b: str, scheme: VersionScheme) -> None:
    with pytest.raises(VersionsNotComparable, match="cannot compare"):
        compare(a, b, scheme)


def test_a_version_is_checked_against_its_declared_scheme() -> None:
    assert check_scheme("2.1", D) == "2.1" and check_scheme("anything", OP) == "anything"
    assert check_scheme("2.1", None) == "2.1"
    with pytest.raises(ValueError, match=r"'2\.1' is not a date version"):
        check_scheme("2.1", DATE)


@pytest.mark.parametrize(("raw", "want"), [
    ("BIOS Date: 08/04/2023 Ver 1.4", "1.4"), ("P79 v1.45", "1.45"), ("U46 v2.76 (02/09/2023)", "2.76"),
    ("Green Compression Type 1 v.1.00.86", "1.00.86"), ("3.50 0x800016DC", "3.50"), ("42S-2.83", "2.83"),
    ("BIOS Date: 08/04/2023", "08/04/2023"), ("96.00.A6.00.01  ", "96.00.A6.00.01"),
    # no version token inside: the whole string is the (opaque) version, never a number cut out of it
    ("buildbrain-gcid-38635631", "buildbrain-gcid-38635631"), ("G520.0200.00.05", "G520.0200.00.05"),
    ("HGX-22.10-1-rc34", "HGX-22.10-1-rc34"), ("00.02.0134.0000_n00", "00.02.0134.0000_n00"),
    ("  ", None), (None, None),
])
def test_parse_version_keeps_opaque_strings_whole(raw: str | None, want: str | None) -> None:
    assert parse_version(raw) == want
