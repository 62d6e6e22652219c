"""The one rule for a sha256 written in an input file (firmware images, release packages)."""

from __future__ import annotations

import re

SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


def check_sha256(value: str) -> str:
    """`value` when it is 64 lowercase hex characters; ValueError (pydantic's validation error) otherwise."""
    if not SHA256_RE.match(value):
        raise ValueError("sha256 must be 64 lowercase hex characters")
    return value
