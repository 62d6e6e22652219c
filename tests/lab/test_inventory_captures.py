"""Every whole capture (HPE, Lenovo, GH200, Supermicro, BlueField DPU, NVLink switch tray) served two ways --
by sushy-tools' `sushy-static` and by the project's simulator as captured -- and read by `provision bmc inventory
--json`: its drives, PSUs, NIC ports, CPUs, GPUs and firmware entries are the ones an independent reader of the
capture files finds (tests/unit/redfish/capture_facts.py, plain JSON walking, no product parser). One server per
capture, module-scoped. The host system's identity (Manufacturer, Model, SKU, SerialNumber, UUID) is the file's
through both servers: the simulator as captured rewrites nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab.test_bmcsim_as_captured import FULL, _peer_inventory, cli, sushy_static
from tests.unit.redfish.capture_facts import CAPTURES, Facts, facts

pytestmark = pytest.mark.lab


@pytest.fixture(scope="module", params=CAPTURES)
def peer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    work = tmp_path_factory.mktemp(f"inv-sushy-{request.param}")
    with sushy_static(FULL / request.param, work) as address:
        yield request.param, _peer_inventory(work, address)


@pytest.fixture(scope="module", params=CAPTURES)
def sim(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
        lab_factory: Any) -> Iterator[tuple[str, Path]]:
    with lab_factory(tmp_path_factory.mktemp(f"inv-lab-{request.param}"), nodes=1, bmc_tree=FULL / request.param,
                     as_captured=True) as lab:
        yield request.param, lab.state.inventory


def _holds(f: Facts, data: dict[str, Any]) -> None:
    assert data["unreadable"] == [], data["unreadable"]
    inv = data["inventory"]
    assert len(inv["drives"]) == f.drives
    assert {str(d["serial"]).strip().upper() for d in inv["drives"] if d["serial"]} == f.drive_serials
    assert len([p for p in inv["power_supplies"] if p["state"] != "Absent"]) == f.psus
    assert inv["nic_ports"] == {"ethernet": f.ports["Ethernet"], "infiniband": f.ports["InfiniBand"],
                                "other": f.ports["other"], "unknown": f.ports["unknown"]}
    assert tuple(c["model"] for c in inv["cpus"]) == f.cpus
    assert len(inv["gpus"]) == f.gpus
    assert {e["id"]: (e["version"], e["state"]) for e in inv["firmware"]} == f.firmware
    system = data["identity"]["system"]
    assert {k: system[k] for k in f.system} == f.system


def test_the_inventory_from_sushy_static_is_the_capture_s(peer: tuple[str, Path]) -> None:
    name, inventory = peer
    _holds(facts(name), cli(inventory, "bmc", "inventory").json())


def test_the_inventory_from_the_simulator_as_captured_is_the_capture_s(sim: tuple[str, Path]) -> None:
    name, inventory = sim
    _holds(facts(name), cli(inventory, "bmc", "inventory").json())
