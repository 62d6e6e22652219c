"""Shared test helpers: paths of the project and its example inventory."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_INVENTORY = ROOT / "inventory"


@pytest.fixture
def inventory_copy(tmp_path: Path) -> Path:
    """A writable copy of the example inventory (with the firmware dir beside it); returns hosts.yml."""
    shutil.copytree(EXAMPLE_INVENTORY, tmp_path / "inventory")
    shutil.copytree(ROOT / "firmware", tmp_path / "firmware")
    return tmp_path / "inventory" / "hosts.yml"
