"""Fixtures of the campaign engine's tests: a campaign journal on each backend, a campaign file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from provision.journal import Journal
from provision.journal.campaigns import CampaignStore


@pytest.fixture
def store(backend: str | None) -> Iterator[CampaignStore]:
    journal = Journal(backend)  # on SQLite and on PostgreSQL (tests/conftest.py: backend)
    yield CampaignStore(journal)
    journal.close()


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "campaign.yml"
    path.write_text("name: test\n")
    return path
