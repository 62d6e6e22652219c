#!/usr/bin/env python3
"""Mutation sweep: every mechanical mutant of one module (comparison flipped, `and`/`or` swapped, a `not`
dropped, a boolean constant flipped, an integer constant off by one), each run against the unit tests named.

Where scripts/mutation_check.py holds a list of hand-written plausible bugs, this finds the ones nobody thought
of: a survivor is a line whose behaviour no test pins. Same copy and same rules as mutation_check.py (a temporary
copy of the tree, SQLite only, the working tree never written); the module is re-written from its AST, so a
mutant differs from the original only in the one node.

    python scripts/mutation_sweep.py provision/redfish/ops/counting.py tests/unit/redfish/test_counting_tables.py

Prints each survivor (line, what was changed) and a summary; exit 0 when none survived, 1 otherwise, 2 when the
tests fail on the unmutated copy. Some survivors cannot change behaviour (an equivalent mutant: a cache size, a
default every caller overrides): read each before writing a test for it. A developer's tool, not run by CI.
"""

from __future__ import annotations

import argparse
import ast
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mutation_check import ROOT, copy_tree, run_tests, verdict_of

FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
}  # fmt: skip


@dataclass(frozen=True)
class Mutant:
    """The `index`-th node of the module's ast.walk order, changed as `kind` says (`op` for a comparison)."""

    index: int
    kind: str
    line: int
    what: str
    op: int = 0


def mutants(source: str) -> Iterator[Mutant]:
    for i, node in enumerate(ast.walk(ast.parse(source))):
        if isinstance(node, ast.Compare):
            for j, op in enumerate(node.ops):
                if type(op) in FLIP:
                    yield Mutant(i, "compare", node.lineno, f"{type(op).__name__} -> {FLIP[type(op)].__name__}", j)
        elif isinstance(node, ast.BoolOp):
            yield Mutant(i, "boolop", node.lineno, f"{type(node.op).__name__.lower()} swapped")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield Mutant(i, "not", node.lineno, "`not` dropped")
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            yield Mutant(i, "bool", node.lineno, f"{node.value} -> {not node.value}")
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            yield Mutant(i, "int", node.lineno, f"{node.value} -> {node.value + 1}")


def mutated(source: str, m: Mutant) -> str:
    """The module with `m` applied, as ast.unparse writes it."""
    tree = ast.parse(source)
    nodes = list(ast.walk(tree))
    node = nodes[m.index]
    if isinstance(node, ast.Compare):
        node.ops[m.op] = FLIP[type(node.ops[m.op])]()
    elif isinstance(node, ast.BoolOp):
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif isinstance(node, ast.UnaryOp):
        _replace(nodes, node, node.operand)
    elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
        node.value = not node.value
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        node.value = node.value + 1
    return ast.unparse(tree)


def _replace(nodes: list[ast.AST], old: ast.AST, new: ast.AST) -> None:
    for parent in nodes:
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                value[[id(v) for v in value].index(id(old))] = new
                return


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", help="the module to mutate, relative to the repository root")
    parser.add_argument("tests", nargs="+", help="the unit tests that should catch each mutant")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant's tests (default 300)")
    args = parser.parse_args(argv)
    if not (ROOT / args.module).is_file():
        raise SystemExit(f"{args.module}: no such module")
    with tempfile.TemporaryDirectory(prefix="provision-sweep-") as tmp:
        copy = Path(tmp)
        copy_tree(ROOT, copy)
        path = copy / args.module
        source = path.read_text()
        code, tail = run_tests(copy, tuple(args.tests), args.timeout * 2)
        if code != 0:
            print(f"the tests fail without any mutant (exit {code}); fix that first:\n{tail}")
            return 2
        found = list(mutants(source))
        survived = []
        for m in found:
            path.write_text(mutated(source, m))
            try:
                verdict = verdict_of(run_tests(copy, tuple(args.tests), args.timeout)[0])
            finally:
                path.write_text(source)
            if verdict != "killed" and verdict != "killed (timeout)":
                survived.append(m)
                print(f"{verdict:9} {args.module}:{m.line}: {m.what}", flush=True)
    print(f"\n{len(found) - len(survived)} killed, {len(survived)} not killed of {len(found)} mutant(s)")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
