"""Rack power in `provision spec validate`: each rack's nodes' peak draw, summed, against its budget (tables)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from provision.cli import main
from provision.spec import load_fleet
from provision.spec.racks import RackLoad, rack_loads

MAIN = "group_vars/all/main.yml"


def _set(inv: Path, budgets: dict[str, int], racks: dict[str, str | None]) -> Path:
    """The example inventory with these rack budgets and these hosts' racks (None: no provision_rack)."""
    main_yml = inv / MAIN
    text = main_yml.read_text().split("provision_racks:")[0]
    text += "provision_racks:\n" + "".join(f"  {r}:\n    power_budget_w: {w}\n" for r, w in budgets.items())
    main_yml.write_text(text)
    for host, rack in racks.items():
        hv = inv / "host_vars" / f"{host}.yml"
        lines = [ln for ln in hv.read_text().splitlines() if not ln.startswith("provision_rack:")]
        hv.write_text("\n".join(lines + ([f"provision_rack: {rack}"] if rack else [])) + "\n")
    return inv / "hosts.yml"


ALL = [f"node0{i}" for i in range(1, 9)]

# budgets, host -> rack, expected (rack, hosts, summed peak W, budget W, over) for every rack
TABLE = [
    # the shipped layout: 4 x 5500 W = 22000 W in each 25 kW rack (seed 5.1: 18-25 kW per rack)
    ({"r01": 25000, "r02": 25000}, {h: ("r01" if i < 4 else "r02") for i, h in enumerate(ALL)},
     [("r01", 4, 22000, 25000, False), ("r02", 4, 22000, 25000, False)]),
    # all eight in one 40 kW rack: 44000 W, over
    ({"r01": 40000}, dict.fromkeys(ALL, "r01"), [("r01", 8, 44000, 40000, True)]),
    # exactly at the budget passes
    ({"r01": 22000, "r02": 1}, {h: ("r01" if i < 4 else None) for i, h in enumerate(ALL)},
     [("r01", 4, 22000, 22000, False), ("r02", 0, 0, 1, False)]),
    # one watt short fails
    ({"r01": 21999}, {h: ("r01" if i < 4 else None) for i, h in enumerate(ALL)}, [("r01", 4, 22000, 21999, True)]),
]


@pytest.mark.parametrize(("budgets", "racks", "expected"), TABLE)
def test_rack_loads_table(inventory_copy: Path, budgets: dict[str, int], racks: dict[str, str | None],
                          expected: list[tuple[str, int, int, int, bool]]) -> None:
    loads = rack_loads(load_fleet(_set(inventory_copy.parent, budgets, racks)))
    assert [(r.rack, len(r.hosts), r.peak_w, r.budget_w, r.over) for r in loads] == expected


def test_shipped_inventory_places_every_node_in_a_rack() -> None:
    fleet = load_fleet(Path(__file__).resolve().parents[2] / "inventory" / "hosts.yml")
    assert {h.name: h.rack for h in fleet.hosts.values()} == {h: ("r01" if i < 4 else "r02") for i, h in enumerate(ALL)}
    assert all(not r.over for r in rack_loads(fleet))


def test_over_budget_is_one_error_line_naming_rack_sum_budget_and_file(
        inventory_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = inventory_copy.parent
    # 7 x 5500 W = 38500 W fits a 40 kW rack
    hosts = _set(inv, {"r01": 40000, "r02": 25000}, {h: ("r01" if i < 7 else "r02") for i, h in enumerate(ALL)})
    assert main(["spec", "validate", "-i", str(hosts)]) == 0
    assert not [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
    # an eighth node does not: 44000 W
    hosts = _set(inv, {"r01": 40000}, dict.fromkeys(ALL, "r01"))
    assert main(["spec", "validate", "-i", str(hosts)]) == 2
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
    assert lines == [f"error: {inv / MAIN}: provision_racks.r01.power_budget_w: rack r01: 8 node(s) peak at 44000 W "
                     "together, over its budget of 40000 W (hosts node01, node02, node03, node04, node05, node06, "
                     "node07, node08)"]
    assert main(["spec", "validate", "-i", str(hosts), "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    (problem,) = [p for p in data["problems"] if p["severity"] == "error"]
    assert (problem["key"], problem["file"]) == ("provision_racks.r01.power_budget_w", str(inv / MAIN))
    assert data["valid"] is False


def test_rack_load_is_pure() -> None:
    assert RackLoad("r", ("a",), 5501, 5500).over and not RackLoad("r", ("a",), 5500, 5500).over


# psu_count, psu_watts, redundancy, peak_draw_w -> (severity, key) findings
POWER = [
    (2, 3200, "2N", 5500, [("warning", "power.peak_draw_w")]),   # the seed's ML-PROD-V4: 3200 W left of one feed
    (2, 3200, "2N", 3200, []),
    (4, 3200, "2N", 6400, []),
    (4, 3200, "N+1", 9600, []),
    (4, 3200, "N+1", 9601, [("warning", "power.peak_draw_w")]),
    (2, 3200, "none", 6400, []),
    (2, 3200, "none", 6401, [("error", "power.peak_draw_w")]),
    (2, 3200, "2N", 7000, [("error", "power.peak_draw_w")]),      # more than every PSU together
    (1, 3200, "N+1", 1000, [("error", "power.redundancy")]),
    (8, 3000, "N+N", 10200, []),                                 # the captured SYS-821GE-TNHR profile
]


@pytest.mark.parametrize(("count", "watts", "redundancy", "peak", "want"), POWER)
def test_psus_against_the_peak(count: int, watts: int, redundancy: str, peak: int, want: list[tuple[str, str]]) -> None:
    from provision.spec.power_budget import check_power
    from tests.unit.conformance.helpers import spec

    s = spec(**{"power.psu_count": count, "power.psu_watts": watts, "power.redundancy": redundancy,
                "power.peak_draw_w": peak})
    assert [(str(f.severity), f.key) for f in check_power(s)] == want
