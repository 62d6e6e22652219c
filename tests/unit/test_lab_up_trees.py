"""`provision lab up --bmc-tree A,B,C`: node01 serves A, node02 B, ...; what it refuses before it starts anything
(an unknown tree, a count that disagrees with --nodes, several trees without --bmc-only), in one line, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.cli import main
from provision.errors import InputError
from provision.lab import manager
from provision.lab.bmcsim.config import TREES_DIR, NodePorts, Ready


def _shape(tmp: Path, **opts: object) -> manager.Shape:
    return manager.shape_of(manager.UpOptions(lab_dir=tmp / "lab", bmc_only=True, **opts))  # type: ignore[arg-type]


def test_each_node_serves_its_own_tree_in_the_order_given(tmp_path: Path) -> None:
    shape = _shape(tmp_path, bmc_tree=manager.parse_trees("dell,supermicro,dell"), as_captured=True)
    assert shape.names == ["node01", "node02", "node03"], "the number of trees sets the number of nodes"
    assert [t.name for t in shape.trees] == ["dell", "supermicro", "dell"]
    assert all(t == (TREES_DIR / t.name).resolve() for t in shape.trees)
    assert _shape(tmp_path, bmc_tree=manager.parse_trees("dell,supermicro"), nodes=2).trees[1].name == "supermicro"


def test_one_tree_serves_every_node_as_before(tmp_path: Path) -> None:
    assert [t.name for t in _shape(tmp_path).trees] == ["supermicro", "supermicro"]
    shape = _shape(tmp_path, bmc_tree=manager.parse_trees("dell"), nodes=3)
    assert [t.name for t in shape.trees] == ["dell"] * 3


def test_a_folder_whose_name_holds_a_comma_is_one_tree(tmp_path: Path) -> None:
    odd = tmp_path / "a,b"
    odd.mkdir()
    assert manager.parse_trees(str(odd)) == odd


@pytest.mark.parametrize(("args", "says"), [
    (["--bmc-tree", "supermicro,nosuch"], "--bmc-tree nosuch: no such directory"),
    (["--bmc-tree", "supermicro,dell,dell", "--nodes", "2"], "--bmc-tree: 3 trees for --nodes 2"),
    (["--bmc-tree", "supermicro,,dell"], "--bmc-tree supermicro,,dell: an empty tree name"),
    (["--bmc-tree", "supermicro,dell", "--no-bmc-only"], "several trees need --bmc-only"),
])  # fmt: skip
def test_bad_trees_are_one_line_exit_2_and_nothing_started(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          args: list[str], says: str) -> None:
    lab = tmp_path / "lab"
    only = [] if "--no-bmc-only" in args else ["--bmc-only"]
    argv = ["lab", "up", *only, "--as-captured", *[a for a in args if a != "--no-bmc-only"], "--lab-dir", str(lab)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert says in " ".join(err.split()) and len(err.splitlines()) == 1, err
    assert not lab.exists(), "refused before anything was made"


def test_the_lab_state_records_each_node_s_tree(tmp_path: Path) -> None:
    shape = _shape(tmp_path, bmc_tree=[Path("dell"), Path("supermicro")])
    ready = Ready(pid=1, control_port=2, nodes=[
        NodePorts(name="node01", https_port=10, http_port=None),
        NodePorts(name="node02", https_port=11, http_port=None)])  # fmt: skip
    state = manager._state(tmp_path, manager.UpOptions(lab_dir=tmp_path, bmc_only=True), shape, ready, {})
    assert [Path(n.tree or "").name for n in state.nodes] == ["dell", "supermicro"]
    assert [Path(t).name for t in state.tree.split(",")] == ["dell", "supermicro"]


def test_a_wrong_count_is_an_input_error_from_the_library(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^--bmc-tree: 2 trees for --nodes 1 "):
        _shape(tmp_path, bmc_tree=[Path("dell"), Path("supermicro")], nodes=1)
