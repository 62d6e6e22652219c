"""One test per (host, area): every check of the area passes (checks not run are reported, not failed)."""

from __future__ import annotations

import pytest

from provision.conformance.checks import NODE_AREAS
from provision.conformance.checks._base import Context

AREAS = [module.AREA for module in NODE_AREAS] + ["burnin"]


@pytest.mark.parametrize("area", AREAS)
def test_area(conformance: Context, area: str) -> None:
    results = [r for r in conformance.results if r.area == area]
    failed = [r for r in results if not r.passed and not r.skipped]
    for r in results:
        if r.skipped:
            print(f"not run: {r.id}: {r.detail}")
    assert not failed, "\n".join(f"{r.id}: expected {r.expected}, found {r.found}" for r in failed)
