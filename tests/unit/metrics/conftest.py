"""Fixtures of the metrics tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.campaign.fakes import halted_journal


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    """Campaign c1 halted in wave 0: n1 updated, n2 failed, n3 (wave 1) pending."""
    return halted_journal(tmp_path / "j.db", [["n1", "n2"], ["n3"]], "after the update: bmc is 1.0")
