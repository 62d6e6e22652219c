"""One BMC session per node per bring-up run: every stage that reads the BMC, verify's BMC checks
included, uses the session the first one opened; it is logged out once when the node's run ends.

The BMC is a real HTTPS server on loopback (tests/unit/redfish/rf_fakebmc.py) serving the pruned
Supermicro capture with a certificate of the lab's CA, trusted through provision_bmc_ca_file; the stages
are the real ones, observed through the real engine (their plans are not applied: the count is what
observing does; apply reuses the same session through the same `bmc(ctx, opts)`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from provision.bringup.engine import run_bringup
from provision.bringup.model import Outcome, StagePlan
from provision.bringup.options import BringupOptions
from provision.bringup.stage import Stage, StageContext
from provision.bringup.stages import default_stages
from provision.conformance.model import NodeReport
from provision.spec import HostEntry, load_fleet
from tests.unit.conformance.helpers import framed
from tests.unit.redfish.rf_fakebmc import Served
from tests.unit.tls_bmc import point_node01

SESSIONS = "/redfish/v1/SessionService/Sessions"
BMC_STAGES = ("preflight", "firmware", "bios", "reset", "verify")


class ObserveOnly:
    """A real stage whose observation runs and is kept; it plans nothing (the capture is not the spec)."""

    def __init__(self, stage: Stage, seen: dict[str, Any]) -> None:
        self.stage, self.seen, self.name = stage, seen, stage.name

    def observe(self, ctx: StageContext) -> object:
        self.seen[self.name] = self.stage.observe(ctx)
        return None

    def plan(self, host: HostEntry, observed: object) -> StagePlan:
        return StagePlan(stage=self.name, node=host.name, note="observed")

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        return None


@pytest.fixture
def host(inventory_copy: Path, tls_bmc: Served, lab_ca: tuple[Path, Path, Path],
         monkeypatch: pytest.MonkeyPatch) -> HostEntry:
    import provision.conformance.node as runner

    point_node01(inventory_copy, tls_bmc.address, lab_ca[0], monkeypatch, ansible_host="127.0.0.1")
    monkeypatch.setattr(runner, "ssh_runner_for", lambda level: lambda h: lambda node, script: framed({}))
    return load_fleet(inventory_copy).select(["node01"])[0]


def _stages(inv: Path, names: tuple[str, ...], seen: dict[str, Any]) -> list[Stage]:
    opts = BringupOptions(inventory=inv, poll_s=0.01)
    return [ObserveOnly(s, seen) for s in default_stages(opts) if s.name in names]


def _count(srv: Served, method: str) -> int:
    return sum(1 for s in srv.bmc.seen if s.method == method and s.path.startswith(SESSIONS))


def _bmc_rows(report: NodeReport) -> list[str]:
    return [r.outcome.value for r in report.results if r.area == "bmc"]


def test_a_bringup_logs_in_once_for_every_stage_that_reads_the_bmc(
        host: HostEntry, inventory_copy: Path, tls_bmc: Served) -> None:
    seen: dict[str, Any] = {}
    result = run_bringup([host], _stages(inventory_copy, BMC_STAGES, seen), journal=None)
    node = result.nodes[0]
    assert [(s.stage, s.outcome, s.error) for s in node.stages] == [(n, Outcome.CONVERGED, "") for n in BMC_STAGES]
    assert set(seen) == set(BMC_STAGES)
    rows = _bmc_rows(seen["verify"])
    assert "pass" in rows  # verify read the BMC over the kept session: no row says the BMC could not be read
    assert not [r for r in seen["verify"].results if r.area == "bmc" and r.detail.startswith("BMC ")]
    assert _count(tls_bmc, "POST") == 1, [f"{s.method} {s.path}" for s in tls_bmc.bmc.seen if s.method != "GET"]
    assert _count(tls_bmc, "DELETE") == 1  # logged out once, when the node's run ended
    assert tls_bmc.bmc.seen[-1].method == "DELETE"  # after every read of every stage, verify's included


def test_verify_alone_opens_the_one_session_itself(host: HostEntry, inventory_copy: Path, tls_bmc: Served) -> None:
    seen: dict[str, Any] = {}
    run_bringup([host], _stages(inventory_copy, ("verify",), seen), journal=None)
    assert "pass" in _bmc_rows(seen["verify"])
    assert (_count(tls_bmc, "POST"), _count(tls_bmc, "DELETE")) == (1, 1)


def test_a_bmc_that_cannot_be_reached_at_verify_is_error_rows(host: HostEntry, inventory_copy: Path,
                                                              tls_bmc: Served) -> None:
    tls_bmc.bmc.sessions = False  # session logins refused (405), and basic auth with a wrong password
    tls_bmc.bmc.password = "not-the-password"
    seen: dict[str, Any] = {}
    run_bringup([host], _stages(inventory_copy, ("verify",), seen), journal=None)
    rows = [r for r in seen["verify"].results if r.area == "bmc"]
    assert rows and {r.outcome.value for r in rows} == {"error"}
    assert all(r.detail.startswith("BMC") for r in rows)
