"""The mutation check's sites (scripts/mutation_check.py) stay well-formed: each original snippet occurs exactly
once in its file, each mutant is valid Python that differs from it, and each site's tests exist, so a site cannot
silently stop applying (or stop being checked) when the code around it changes."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("mutation_check", ROOT / "scripts" / "mutation_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


CHECK = _script()
SITES = {site.name: site for site in CHECK.SITES}


def test_site_names_are_unique() -> None:
    assert len(SITES) == len(CHECK.SITES)


@pytest.mark.parametrize("name", sorted(SITES))
def test_each_site_applies_once_and_yields_valid_python(name: str) -> None:
    site = SITES[name]
    text = (ROOT / site.file).read_text()
    assert text.count(site.original) == 1, f"{site.file}: the original snippet of {name} is not there exactly once"
    mutated = CHECK.apply(site, text)
    assert mutated != text
    ast.parse(mutated, filename=site.file)  # a mutant is a plausible bug, not a syntax error


@pytest.mark.parametrize("name", sorted(SITES))
def test_each_sites_tests_exist(name: str) -> None:
    site = SITES[name]
    assert site.tests and site.bug
    for selection in site.tests:
        path, _, test = selection.partition("::")
        assert path.startswith("tests/unit/") and (ROOT / path).is_file(), selection  # unit tests only: fast
        if test:
            assert re.search(rf"^def {re.escape(test)}\(", (ROOT / path).read_text(), re.M), selection


def test_apply_refuses_a_snippet_that_is_not_there_once() -> None:
    site = CHECK.Site("x", "f.py", "a = 1", "a = 2", ("tests/unit/x.py",), "bug")
    assert CHECK.apply(site, "a = 1\n") == "a = 2\n"
    for text in ("", "a = 1\na = 1\n"):
        with pytest.raises(ValueError, match="not once"):
            CHECK.apply(site, text)


@pytest.mark.parametrize(("code", "verdict"), [(0, "survived"), (1, "killed"), (2, "killed"), (None, "killed (timeout)"),
                                               (4, "error"), (5, "error")])
def test_a_run_that_collects_nothing_is_no_kill(code: int | None, verdict: str) -> None:
    assert CHECK.verdict_of(code) == verdict
