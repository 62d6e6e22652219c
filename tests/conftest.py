"""Shared test helpers: paths of the project and its example inventory."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After a test that passed: every verify report (JSON, JUnit) and metrics file it left in its tmp_path is
    validated (schema, junit-10.xsd, promtool; tests/reportcheck.py), so no test writes an invalid one unseen."""
    result = yield  # a test that failed raises here, and is reported as it failed
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    if isinstance(tmp, Path):
        from tests.reportcheck import check_written

        check_written(tmp)
    return result
