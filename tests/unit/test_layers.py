"""Layers: a module of provision/ imports only its own folder and the layers below it, and no two folders import
each other in a circle (README, "Layers"). Read from the source with ast, lazy and TYPE_CHECKING imports included."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2] / "provision"

# Lowest first. A unit is a folder of provision/ or a module at its root (`provision` is its __init__: the
# version). A unit imports its own modules and units of lower layers only; units of one layer import none of
# each other, so the order also rules out cycles between folders.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("provision",),
    ("errors",),
    ("redact",),
    ("private",),
    ("spec",),
    ("journal",),
    ("redfish",),
    ("remote", "conformance", "netboot"),
    ("ansible", "scheduler", "discover"),
    ("campaign",),
    ("bringup", "metrics"),
    ("clean",),
    ("lab",),
    ("cli",),
)


class Import(NamedTuple):
    module: str  # the importing module, dotted
    line: int
    target: str  # the imported module, dotted


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path) -> Iterator[Import]:
    """Every provision import of one file, wherever it stands (top level, a function, `if TYPE_CHECKING`)."""
    name = module_name(path, root)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            # `from provision import redact` imports the module provision.redact; `import __version__`, the root
            targets = list(dict.fromkeys(
                f"{target}.{a.name}" if target == root.name and _is_module(root, a.name) else target
                for a in node.names))
        else:
            continue
        for target in targets:
            if target == root.name or target.startswith(root.name + "."):
                yield Import(name, node.lineno, target)


def _is_module(root: Path, name: str) -> bool:
    return (root / name).is_dir() or (root / f"{name}.py").is_file()


def all_imports(root: Path) -> list[Import]:
    return [imp for path in sorted(root.rglob("*.py")) for imp in imports_of(path, root)]


def unit(module: str) -> str:
    """The folder of provision/ a module lives in, or the root module itself."""
    parts = module.split(".")
    return parts[0] if len(parts) == 1 else parts[1]


def upward(imports: Iterable[Import], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """One line per import of a unit that is not below the importer's layer (or of a unit no layer names)."""
    level = {u: i for i, layer in enumerate(layers) for u in layer}
    bad = []
    for imp in imports:
        src, dst = unit(imp.module), unit(imp.target)
        if src == dst:
            continue
        if src not in level or dst not in level:
            missing = src if src not in level else dst
            bad.append(f"{imp.module}:{imp.line}: {missing} is in no layer (tests/unit/test_layers.py LAYERS)")
        elif level[dst] >= level[src]:
            bad.append(f"{imp.module}:{imp.line} imports {imp.target}: {src} (layer {level[src]}) may not import "
                       f"{dst} (layer {level[dst]})")
    return bad


def folder_cycles(imports: Iterable[Import], root: Path) -> list[str]:
    """Circles in the graph of folders (sub-folders included; a folder and its own sub-folders excepted: a
    package's base modules sit at its root), each with the import that closes every step."""
    @functools.cache
    def folder(module: str) -> str:
        parts = module.split(".")
        while len(parts) > 1 and not (root.parent.joinpath(*parts)).is_dir():
            parts = parts[:-1]
        return ".".join(parts)

    graph: dict[str, dict[str, Import]] = {}
    for imp in imports:
        a, b = folder(imp.module), folder(imp.target)
        if a == b or a.startswith(b + ".") or b.startswith(a + "."):
            continue
        graph.setdefault(a, {}).setdefault(b, imp)
    found = []
    for cycle in _cycles(graph):
        steps = [graph[a][b] for a, b in zip(cycle, cycle[1:] + cycle[:1], strict=True)]
        found.append(" -> ".join(cycle + cycle[:1]) + ": " + "; ".join(f"{s.module}:{s.line}" for s in steps))
    return found


def _cycles(graph: dict[str, dict[str, Import]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one node (Tarjan, then a walk)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    cycles = []
    for comp in components:
        start = min(comp)
        path, seen = [start], {start}
        while True:  # follow edges inside the component until a node repeats: that closes a cycle
            nxt = min(w for w in graph[path[-1]] if w in comp)
            if nxt in seen:
                cycles.append(path[path.index(nxt):])
                break
            path.append(nxt)
            seen.add(nxt)
    return cycles


@pytest.fixture(scope="module")
def product() -> list[Import]:
    return all_imports(ROOT)


def test_no_import_runs_up_a_layer(product: list[Import]) -> None:
    assert upward(product, LAYERS) == []


def test_no_cycle_between_folders(product: list[Import]) -> None:
    assert folder_cycles(product, ROOT) == []


def test_every_folder_has_a_layer() -> None:
    units = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    units |= {p.stem for p in ROOT.glob("*.py") if p.stem != "__init__"} | {"provision"}
    assert units == {u for layer in LAYERS for u in layer}


# ---- the checks can fail: a small tree with one upward import and one circle ----------------------------------
@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {
        "__init__.py": "",
        "errors.py": "",
        "spec/__init__.py": "",
        "spec/model.py": "from provision.errors import X\n\n\ndef f():\n    from provision.cli import main\n",
        "cli/__init__.py": "from . import run\nfrom provision import errors\n",
        "cli/run.py": "from ..spec import model\n",
        "a/__init__.py": "", "a/x.py": "import provision.b.y\n",
        "b/__init__.py": "", "b/y.py": "from provision.a import x\n",
        "b/sub/__init__.py": "from provision.b import y\n",  # a sub-folder importing its parent: no circle
    }
    root = tmp_path / "provision"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_relative_and_lazy_imports_are_read(tree: Path) -> None:
    found = set(all_imports(tree))
    assert Import("provision.spec.model", 5, "provision.cli") in found  # inside a function
    assert Import("provision.cli.run", 1, "provision.spec") in found  # `from ..spec import model`
    assert Import("provision.cli", 1, "provision.cli") in found  # `from . import run` in a package
    assert Import("provision.cli", 2, "provision.errors") in found  # `from provision import errors`


def test_an_upward_import_is_named_by_module_and_line(tree: Path) -> None:
    layers = (("provision",), ("errors",), ("spec",), ("a", "b"), ("cli",))
    assert upward(all_imports(tree), layers) == [
        "provision.a.x:1 imports provision.b.y: a (layer 3) may not import b (layer 3)",
        "provision.b.y:1 imports provision.a: b (layer 3) may not import a (layer 3)",
        "provision.spec.model:5 imports provision.cli: spec (layer 2) may not import cli (layer 4)",
    ]


def test_a_folder_no_layer_names_is_refused(tree: Path) -> None:
    layers = (("provision",), ("errors",), ("spec",), ("cli",))
    assert any(line.startswith("provision.a.x:1: a is in no layer") for line in upward(all_imports(tree), layers))


def test_a_circle_of_folders_is_found(tree: Path) -> None:
    assert sorted(folder_cycles(all_imports(tree), tree)) == [
        "provision.a -> provision.b -> provision.a: provision.a.x:1; provision.b.y:1",
        "provision.cli -> provision.spec -> provision.cli: provision.cli.run:1; provision.spec.model:5",
    ]
