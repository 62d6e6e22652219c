"""Fuzzing of spec and inventory loading: nothing escapes but the project's own typed errors."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from provision.errors import InputError
from provision.spec import load_fleet
from provision.spec.loader import _build_spec
from provision.spec.strict_yaml import load_strict
from tests.conftest import EXAMPLE_INVENTORY
from tests.unit.fuzz.mutate import DELETE, paths, set_path

PROFILE_FILE = EXAMPLE_INVENTORY / "group_vars" / "all" / "profile_ml_prod_v4.yml"
BASE_SPEC: dict[str, Any] = yaml.safe_load(PROFILE_FILE.read_text())["provision_profile_ml_prod_v4"]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                    st.text(max_size=20))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8),
                                                                                           inner, max_size=3),
                      max_leaves=8)




ALL_PATHS = paths(BASE_SPEC)






@settings(max_examples=300, deadline=None)
@given(mutations=st.lists(st.tuples(st.sampled_from(ALL_PATHS), values | st.just(DELETE)), min_size=1, max_size=4))
def test_mutated_spec_validates_or_raises_spec_error(mutations: list[tuple[tuple[Any, ...], Any]]) -> None:
    doc = copy.deepcopy(BASE_SPEC)
    for path, value in mutations:
        try:
            set_path(doc, path, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed or replaced the parent
    try:
        spec = _build_spec("fuzz.yml", "node01", "ml_prod_v4", doc)
    except InputError as exc:
        assert "fuzz.yml: host node01:" in str(exc)
        assert "\n" not in str(exc)
    else:
        assert (spec.gpu is None or spec.gpu.count > 0) and spec.memory.total_gb > 0  # gpu is optional


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_random_yaml_text_raises_only_input_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.yml"
    path.write_text(text, encoding="utf-8")
    try:
        load_strict(path)
    except InputError as exc:
        assert str(path) in str(exc)


@pytest.mark.parametrize("seed", range(6))
def test_truncated_inventory_files_fail_cleanly(inventory_copy: Path, seed: int) -> None:
    """Truncate a real inventory file at several points: the loader raises InputError or loads."""
    files = sorted((inventory_copy.parent).rglob("*.yml"))
    target = files[seed % len(files)]
    text = target.read_text()
    target.write_text(text[: max(1, len(text) * (seed + 1) // 9)])
    try:
        load_fleet(inventory_copy)
    except InputError as exc:
        assert "\n" not in str(exc)
