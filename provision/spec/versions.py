"""The rules for a version written in a node spec: an upstream release and a Debian package version."""

from __future__ import annotations

import re

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
