"""The mutation sweep (scripts/mutation_sweep.py) makes each mechanical mutant it lists, and only it: one node
changed, the rest of the module the same program."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SOURCE = '''\
def fits(a, b, items):
    if a == b and not items:
        return True
    return a < 3 or b in items
'''


def _sweep() -> ModuleType:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        spec = importlib.util.spec_from_file_location("mutation_sweep", ROOT / "scripts" / "mutation_sweep.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "scripts"))


def _fits(source: str, *args: object) -> object:
    scope: dict[str, object] = {}
    exec(compile(source, "<mutant>", "exec"), scope)  # the test's own small source
    return scope["fits"](*args)  # type: ignore[operator]


def test_each_mutant_changes_one_node_and_the_listed_ones_are_all_there() -> None:
    sweep = _sweep()
    found = list(sweep.mutants(SOURCE))
    assert sorted(m.what for m in found) == sorted([
        "Eq -> NotEq", "Lt -> LtE", "In -> NotIn", "and swapped", "or swapped", "`not` dropped", "True -> False",
        "3 -> 4"])  # fmt: skip
    original = ast.dump(ast.parse(SOURCE))
    for m in found:
        text = sweep.mutated(SOURCE, m)
        assert ast.dump(ast.parse(text)) != original, m
        assert sweep.mutated(SOURCE, m) == text  # the same mutant each time
    assert sweep.mutated(SOURCE, found[0]) != sweep.mutated(SOURCE, found[1])


def test_mutants_behave_as_their_names_say() -> None:
    sweep = _sweep()
    by_name = {m.what: sweep.mutated(SOURCE, m) for m in sweep.mutants(SOURCE)}
    assert _fits(SOURCE, 1, 1, []) is True and _fits(by_name["True -> False"], 1, 1, []) is False
    assert _fits(SOURCE, 5, 5, [6]) is False and _fits(by_name["`not` dropped"], 5, 5, [6]) is True
    assert _fits(SOURCE, 3, 4, []) is False and _fits(by_name["3 -> 4"], 3, 4, []) is True
    assert _fits(SOURCE, 3, 9, [9]) is True and _fits(by_name["In -> NotIn"], 3, 9, [9]) is False
