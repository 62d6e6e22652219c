"""Every whole capture (HPE, Lenovo, GH200, Supermicro, BlueField DPU, NVLink switch tray) served two ways --
by sushy-tools' `sushy-static` and by the project's simulator as captured -- and read by `provision bmc inventory
--json`: its drives, PSUs, NIC ports, CPUs, GPUs and firmware entries are the ones an independent reader of the
capture files finds (tests/unit/redfish/capture_facts.py, plain JSON walking, no product parser). One server per
capture, module-scoped. The host system's identity (Manufacturer, Model, SKU, SerialNumber, UUID) is the file's
through both servers: the simulator as captured rewrites nothing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.lab.test_bmcsim_as_captured import FULL, Answer, _for_any_platform, _peer_inventory, sushy_static
from tests.unit.redfish.capture_facts import CAPTURES, Facts, facts
from tests.unit.test_bmc_service_accounts import CAPTURES as OWN_ACCOUNTS

pytestmark = pytest.mark.lab
REPO = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from provision.cli import run; run()"]


@pytest.fixture(scope="module", params=CAPTURES)
def peer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    work = tmp_path_factory.mktemp(f"inv-sushy-{request.param}")
    with sushy_static(FULL / request.param, work) as address:
        yield request.param, _for_any_platform(_peer_inventory(work, address))


@pytest.fixture(scope="module", params=CAPTURES)
def sim(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
        lab_factory: Any) -> Iterator[tuple[str, Path]]:
    with lab_factory(tmp_path_factory.mktemp(f"inv-lab-{request.param}"), nodes=1, bmc_tree=FULL / request.param,
                     as_captured=True) as lab:
        yield request.param, _for_any_platform(lab.state.inventory)


def _inventory(name: str, inventory: Path) -> dict[str, Any]:
    """`bmc inventory --json` for any platform: exit 0, 1 (drift from ML-PROD-V4's figures) or 3 (a figure that could
    not be checked); for a DPU or switch tray exit 2 (a compute profile is refused on a device that is not a compute
    node) with the whole inventory printed before the one line."""
    proc = subprocess.run([*CLI, "bmc", "inventory", "node01", "-i", str(inventory), "--json"], capture_output=True,
                          text=True, timeout=180, check=False, cwd=REPO)
    answer = Answer(proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in answer.err, answer.err[-2000:]
    if facts(name).device:
        assert answer.rc == 2 and "compute" in answer.err.splitlines()[-1], (answer.rc, answer.err[-500:])
    else:
        assert answer.rc in (0, 1, 3), (answer.rc, answer.err[-500:])
    return answer.json()


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
    _holds(facts(name), _inventory(name, inventory))


def test_the_inventory_from_the_simulator_as_captured_is_the_capture_s(sim: tuple[str, Path]) -> None:
    name, inventory = sim
    _holds(facts(name), _inventory(name, inventory))


def test_accounts_and_staged_firmware_read_through_sushy_static_are_the_capture_s(peer: tuple[str, Path]) -> None:
    """What clean and the bmc setup stages read of a real tree (served by a server nobody here wrote): every
    account the capture's files hold, by user name, those the BMC keeps for itself as the unit tables say (its
    plugin detected from the served root), and no firmware staged (the captures list no update task
    awaiting activation); the TaskService is found where the capture has one."""
    import json

    from provision.clean.bmc_reduce import read_staged
    from provision.redfish.ops import accounts as acc
    from provision.redfish.ops.session import open_endpoint, options_for
    from provision.spec import load_fleet

    name, inventory = peer
    [host] = load_fleet(inventory).hosts.values()
    accounts_dir = FULL / name / "redfish" / "v1" / "AccountService" / "Accounts"
    users = {json.loads(p.read_text()).get("UserName") for p in accounts_dir.glob("*/index.json")}
    with open_endpoint(options_for(host.name, host.bmc)) as conn:
        found = acc.read_accounts(conn, acc.collection_uri(conn))
        staged = read_staged(conn)
        checked = acc.read_deletable(conn, found)  # sushy-static sends no Allow header: each deletable
        service = acc.plugin_of(conn).service_accounts
    assert {a.user for a in found} == users - {None, ""}, found
    assert all(a.deletable for a in checked)
    own = sorted(a.user for a in checked if acc.never_removed(a, service) is not None)
    tables = {capture: kept for capture, _, _, kept in OWN_ACCOUNTS}
    if name not in tables:  # DMTF's mockups: their AccountService was pruned (tests/fixtures/PROVENANCE.md)
        assert name.startswith("dmtf_") and found == () and not (FULL / name / "redfish/v1/AccountService").exists()
    assert own == tables.get(name, []), own
    assert staged.tasks_readable is (FULL / name / "redfish" / "v1" / "TaskService").is_dir()
    assert staged.staged == ()
