"""Fuzzing of campaign catalog loading: a catalog loads or raises InputError, nothing else escapes."""

from __future__ import annotations

import copy
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provision.campaign.catalog import Catalog, load_catalog
from provision.errors import InputError
from tests.conftest import ROOT
from tests.unit.fuzz.mutate import DELETE, paths, set_path

CATALOG = ROOT / "campaigns" / "ml_prod_v4_2026q4.yml"
BASE: dict[str, Any] = yaml.safe_load(CATALOG.read_text())

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                    st.text(max_size=20), st.sampled_from(["25%", "0%", "101%", "-1", "Immediate", "OnReset",
                                                           "bmc", "^(", "22:00", "mon", "../firmware/x.bin"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8),
                                                                                           inner, max_size=3),
                      max_leaves=8)




ALL_PATHS = paths(BASE)




@pytest.fixture(scope="module")
def campaign_dir() -> Iterator[Path]:
    """A campaigns/ dir with the project's firmware/ beside it (the catalog's relative image paths)."""
    with tempfile.TemporaryDirectory(prefix="fuzzcat-") as tmp:
        base = Path(tmp)
        shutil.copytree(ROOT / "firmware", base / "firmware")
        (base / "campaigns").mkdir()
        yield base / "campaigns"


def _load(directory: Path, text: str) -> Catalog | None:
    path = directory / "fuzzed.yml"
    path.write_text(text, encoding="utf-8")
    try:
        return load_catalog(path)
    except InputError as exc:
        assert str(exc).startswith(str(path)), f"error does not name the file: {exc}"
        assert "\n" not in str(exc).strip() or "line" in str(exc), str(exc)
        return None


def test_the_shipped_catalog_loads(campaign_dir: Path) -> None:
    catalog = _load(campaign_dir, CATALOG.read_text())
    assert catalog is not None and next(c.component for c in catalog.ordered()) == "bmc"


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(st.tuples(st.sampled_from(ALL_PATHS), values | st.just(DELETE)), min_size=1, max_size=4))
def test_mutated_catalog_loads_or_raises_input_error(campaign_dir: Path,
                                                     mutations: list[tuple[tuple[Any, ...], Any]]) -> None:
    doc = copy.deepcopy(BASE)
    for path, value in mutations:
        try:
            set_path(doc, path, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced the parent
    catalog = _load(campaign_dir, yaml.safe_dump(doc, sort_keys=False))
    if catalog is not None:  # what loads is usable: ordered, every component findable
        assert {c.component for c in catalog.ordered()} == {c.component for c in catalog.components}


yaml_noise = st.text(alphabet=st.sampled_from(list("abc:-[]{}'\"!&*#%@|>?,\n \t0123456789.~")), max_size=200)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=yaml_noise | st.text(max_size=200))
def test_random_text_raises_input_error(campaign_dir: Path, text: str) -> None:
    _load(campaign_dir, text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, len(CATALOG.read_text())), junk=st.text(max_size=10))
def test_truncated_catalog_raises_input_error(campaign_dir: Path, cut: int, junk: str) -> None:
    _load(campaign_dir, CATALOG.read_text()[:cut] + junk)
