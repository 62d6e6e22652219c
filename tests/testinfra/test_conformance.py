"""One test per (host, area): no check of the area fails or could not be made (warned and waived ones are
reported, not failed). Every check of the area is printed, `<outcome>: <id>: <found> (<detail>)`, so a CI that
keeps the output (`-rA`, or `-o junit_logging=system-out` with `--junitxml`) has each check's outcome."""

from __future__ import annotations

import pytest

from provision.conformance.checks import NODE_AREAS
from provision.conformance.checks._base import Context

AREAS = [module.AREA for module in NODE_AREAS] + ["burnin"]


@pytest.mark.parametrize("area", AREAS)
def test_area(conformance: Context, area: str) -> None:
    results = [r for r in conformance.results if r.area == area]
    failed = [r for r in results if not r.accepted]
    for r in results:
        print(f"{r.outcome.value}: {r.id}: {r.found}" + (f" ({r.detail})" if r.detail else ""))
    assert not failed, "\n".join(f"{r.id} ({r.outcome.value}): expected {r.expected}, found {r.found}" for r in failed)
