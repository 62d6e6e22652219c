"""Sizes: no module of provision/ over 500 lines and no class over 300 (the lab included), so that a module stays
readable in one sitting (HOUSE_STYLE.md). Read from the source with ast: a class's lines run from its first
decorator to its last statement, nested classes counted inside their outer class and on their own."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "provision"
MAX_MODULE_LINES = 500
MAX_CLASS_LINES = 300


def module_lines(text: str) -> int:
    return len(text.splitlines())


def class_sizes(text: str, filename: str = "<source>") -> Iterator[tuple[str, int, int]]:
    """(qualified name, first line, lines) of every class in `text`, nested ones too."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int, int]]:
        for child in ast.iter_child_nodes(node):
            name = prefix
            if isinstance(child, ast.ClassDef):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                name = f"{prefix}{child.name}."
                yield name[:-1], first, (child.end_lineno or child.lineno) - first + 1
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}.<locals>."
            yield from walk(child, name)

    yield from walk(ast.parse(text, filename), "")


def oversized(root: Path) -> list[str]:
    """One line per module or class of `root` over its limit, largest first."""
    found: list[tuple[int, str]] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(root.parent)
        lines = module_lines(text)
        if lines > MAX_MODULE_LINES:
            found.append((lines, f"{where}: {lines} lines (module limit {MAX_MODULE_LINES})"))
        if lines <= MAX_CLASS_LINES:
            continue  # no class of it can be over the limit: not parsed (the test stays fast)
        for name, first, size in class_sizes(text, str(path)):
            if size > MAX_CLASS_LINES:
                found.append((size, f"{where}:{first}: class {name}: {size} lines (class limit {MAX_CLASS_LINES})"))
    return [line for _size, line in sorted(found, reverse=True)]


def test_no_module_or_class_of_provision_is_over_its_limit() -> None:
    assert oversized(ROOT) == []


def _class(name: str, body_lines: int, indent: str = "") -> str:
    body = "".join(f"{indent}    x{i} = {i}\n" for i in range(body_lines))
    return f"{indent}class {name}:\n{body}"


@pytest.mark.parametrize(("body_lines", "flagged"), [(299, False), (300, True)])
def test_a_class_is_flagged_from_its_301st_line(tmp_path: Path, body_lines: int, flagged: bool) -> None:
    pkg = tmp_path / "provision"
    pkg.mkdir()
    (pkg / "big.py").write_text(_class("Big", body_lines))  # the class line and its body
    assert bool(oversized(pkg)) is flagged
    if flagged:
        assert oversized(pkg) == [f"provision/big.py:1: class Big: 301 lines (class limit {MAX_CLASS_LINES})"]


@pytest.mark.parametrize(("lines", "flagged"), [(500, False), (501, True)])
def test_a_module_is_flagged_from_its_501st_line(tmp_path: Path, lines: int, flagged: bool) -> None:
    pkg = tmp_path / "provision" / "lab"  # sub-packages and the lab count like the rest
    pkg.mkdir(parents=True)
    (pkg / "long.py").write_text("".join(f"x{i} = {i}\n" for i in range(lines)))
    assert oversized(pkg.parent) == ([f"provision/lab/long.py: 501 lines (module limit {MAX_MODULE_LINES})"]
                                      if flagged else [])


def test_decorators_and_nested_classes_count() -> None:
    text = "@decorator\n" + _class("Outer", 3) + _class("Inner", 2, indent="    ")
    text += "def f():\n" + _class("Local", 1, indent="    ")
    sizes = {name: (first, size) for name, first, size in class_sizes(text)}
    assert sizes == {"Outer": (1, 8), "Outer.Inner": (6, 3), "f.<locals>.Local": (10, 2)}
