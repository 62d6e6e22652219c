"""Bring-up's first stage names a node whose platform its profile does not describe, and the run stops there,
before anything is written: the real stages against the loopback BMC serving whole captures of other platforms;
the identity read is kept in the journal."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from provision.bringup.engine import run_bringup
from provision.bringup.model import Outcome
from provision.bringup.options import BringupOptions
from provision.bringup.stages import default_stages
from provision.journal import Journal
from provision.journal.identities import identities
from provision.spec import load_fleet
from tests.unit.redfish.full_captures import full_tree
from tests.unit.redfish.rf_fakebmc import FakeBmc, Served


def point_at(inventory: Path, address: str) -> None:
    """node01 of the copied example inventory at the loopback BMC (as tests/unit/redfish/rf_support.py does)."""
    hv = inventory.parent / "host_vars" / "node01.yml"
    data = yaml.safe_load(hv.read_text())
    data.update(provision_bmc_address=address, provision_bmc_username="admin",
                provision_bmc_password="s3cret-Pa55", provision_bmc_insecure_http=True)
    hv.write_text(yaml.safe_dump(data))


@pytest.mark.parametrize(("capture", "platform"), [
    ("hpe", "an HPE ProLiant DL385 Gen10 Plus v2; profile ML-PROD-V4 describes Supermicro SYS-821GE-TNHR"),
    ("nvidia_dpu", "a https://www.mellanox.com BlueField-3 SmartNIC Main Card, a DPU with no host CPUs; profile "
                   "ML-PROD-V4 describes compute nodes (Supermicro SYS-821GE-TNHR)"),
    ("nvidia_gbswitch", "an NVIDIA N5110_LD, a switch tray with no host CPUs; profile ML-PROD-V4 describes compute "
                        "nodes (Supermicro SYS-821GE-TNHR)"),
])
def test_bringup_stops_at_preflight_on_another_platform(inventory_copy: Path, tmp_path: Path, capture: str,
                                                        platform: str) -> None:
    bmc = FakeBmc(tree=full_tree(capture))
    with Served(bmc) as srv, Journal(tmp_path / "j.db") as journal:
        point_at(inventory_copy, srv.address)
        host = load_fleet(inventory_copy).select(["node01"])[0]
        result = run_bringup([host], default_stages(BringupOptions(inventory=inventory_copy, poll_s=0.01)),
                             journal=journal)
        kept = identities(journal, "node01")
    [node] = result.nodes
    assert [(s.stage, s.outcome) for s in node.stages] == [  # the day-zero stages: no bmc: section, nothing
        ("bmc-password", Outcome.CONVERGED), ("bmc-accounts", Outcome.CONVERGED), ("preflight", Outcome.FAILED)]
    assert node.stages[-1].error.endswith(
        f"node01 is {platform}: refused, nothing written")
    writes = [s for s in bmc.seen if s.method not in ("GET", "HEAD") and "/SessionService/Sessions" not in s.path]
    assert writes == []
    assert [r.source for r in kept] == ["preflight"] and kept[0].identity.system.serial_number is not None
