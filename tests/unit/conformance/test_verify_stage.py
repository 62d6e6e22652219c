"""The bring-up verify stage judges the outcomes: a check that could not be made stops the node as a failure does;
warnings and waivers do not."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from provision.bringup.options import BringupOptions
from provision.bringup.stages.verify import VerifyStage
from provision.conformance.model import CheckResult, NodeReport, Outcome
from provision.errors import CheckFailed

P, W, V, E, F = Outcome.PASS, Outcome.WARN, Outcome.WAIVED, Outcome.ERROR, Outcome.FAIL


def report(*outcomes: Outcome) -> NodeReport:
    rows = tuple(CheckResult(node="node01", id=f"bmc.c{i}", area="bmc", description="d", expected="e",
                             found=f"found {i}", outcome=o, detail=f"why {i}") for i, o in enumerate(outcomes))
    return NodeReport(node="node01", profile="ml_prod_v4", results=rows)


def plan(observed: NodeReport):  # type: ignore[no-untyped-def]
    stage = VerifyStage(BringupOptions(inventory=Path("inventory/hosts.yml")))
    return stage.plan(SimpleNamespace(name="node01"), observed)  # type: ignore[arg-type]


@pytest.mark.parametrize(("outcomes", "needle"), [
    ((P, E), "node01: 1 check(s) could not be made: bmc.c1: why 1"),
    ((P, F), "node01: 1 check(s) failed: bmc.c1: expected e, found found 1"),
    ((F, E, W), "1 check(s) failed: bmc.c0: expected e, found found 0; 1 check(s) could not be made: bmc.c1: why 1"),
])
def test_error_stops_the_node_as_a_failure_does(outcomes: tuple[Outcome, ...], needle: str) -> None:
    with pytest.raises(CheckFailed) as exc:
        plan(report(*outcomes))
    assert needle in str(exc.value)


def test_warnings_and_waivers_pass_and_show() -> None:
    note = plan(report(P, P, W, V)).note
    assert note.startswith("2 checks passed, 1 warned, 1 waived (bmc 3)") and "warnings: bmc.c2: found 2" in note


def test_unreachable_node_stops_it() -> None:
    with pytest.raises(CheckFailed, match="conformance could not run: ssh refused"):
        plan(NodeReport(node="node01", profile="ml_prod_v4", error="ssh refused"))
