"""The lab's generated inventory describes the boards it simulates as nodes of a profile (lab_board from each
tree), and leaves the profiles as they are for what it serves as captured (a capture of another platform is then
refused, as a real node would be)."""

from __future__ import annotations

from pathlib import Path

from provision.lab.bmcsim.config import TREES_DIR
from provision.lab.inventory_writer import describe_lab_boards, lab_board
from provision.spec import load_fleet
from provision.spec.platforms import Board, PlatformIdentity


def _texts(root: Path) -> dict[Path, str]:
    return {p: p.read_text() for p in sorted(root.rglob("*.yml"))}


def test_boards_of_the_built_in_trees() -> None:
    assert lab_board(TREES_DIR / "supermicro") == {"manufacturer": "Supermicro", "model": "SYS-821GE-TNHR"}
    assert lab_board(TREES_DIR / "dell") == {"manufacturer": "Dell Inc.", "model": "PowerEdge R750"}
    assert lab_board(TREES_DIR / "public-rackmount1") == {"manufacturer": "Contoso", "model": "3500"}


def test_the_default_lab_board_is_already_described(inventory_copy: Path) -> None:
    group_vars = inventory_copy.parent / "group_vars"
    before = _texts(group_vars)
    describe_lab_boards(group_vars, [lab_board(TREES_DIR / "supermicro"), None])
    assert _texts(group_vars) == before


def test_a_lab_on_another_board_describes_it(inventory_copy: Path) -> None:
    group_vars = inventory_copy.parent / "group_vars"
    describe_lab_boards(group_vars, [lab_board(TREES_DIR / "dell"), lab_board(TREES_DIR / "dell")])
    spec = load_fleet(inventory_copy).profiles["ml_prod_v4"]
    dell = PlatformIdentity(system=Board(manufacturer="Dell Inc.", model="PowerEdge R750"))
    smc = PlatformIdentity(system=Board(manufacturer="Supermicro", model="SYS-821GE-TNHR"))
    hpe = PlatformIdentity(system=Board(manufacturer="HPE", model="ProLiant DL385 Gen10 Plus v2"))
    assert spec.described_platforms.fits(dell) and spec.described_platforms.fits(smc)
    assert not spec.described_platforms.fits(hpe)
    assert all(c.target.any_platform for c in spec.firmware)  # lab images in the simulator's format
    assert load_fleet(inventory_copy).profiles["catalogue_epyc_9454p"].described_platforms.any_platform
