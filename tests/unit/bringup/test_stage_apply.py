"""apply runs exactly the plan's actions and re-reads only to verify them: the BIOS write sends the
planned attributes, the firmware stage sends without observing again, the reset verifies what it staged."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import nullcontext
from pathlib import Path

import pytest

from provision.bringup.model import StagePlan
from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.bringup.stages import reset as reset_stage
from provision.bringup.stages.bios import BiosStage
from provision.bringup.stages.firmware import FirmwareStage
from provision.bringup.stages.reset import ResetStage
from provision.journal import Journal
from provision.redfish.errors import RedfishOperationFailed
from provision.spec import HostEntry
from tests.unit.bringup.fakebmc import FW, FakeBmc, fast_clock, node_of

RUNNING = {"BMC": "1.45", "BIOS": "P79 v1.45"}
OPTS = BringupOptions(inventory=Path("inventory/hosts.yml"), poll_s=0)


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    with Journal(tmp_path / "journal.db") as jr:
        yield jr


def _ctx(host: HostEntry, bmc: FakeBmc, journal: Journal) -> StageContext:
    ctx = StageContext(host=host, journal=journal, run_id=journal.start_run("bringup", host.name))
    ctx.keep("bmc", lambda: nullcontext(node_of(bmc)))
    return ctx


def test_firmware_apply_sends_the_plan_without_observing_again(make_host: Callable[..., HostEntry],
                                                               journal: Journal) -> None:
    host = make_host()
    bmc = FakeBmc(versions=RUNNING, flash_to={f"{FW}/BMC": "1.50", f"{FW}/BIOS": "P79 v1.50"})
    stage, ctx = FirmwareStage(OPTS), _ctx(host, bmc, journal)
    stage.clock = fast_clock()
    plan = stage.plan(host, stage.observe(ctx))
    only_bios = StagePlan(stage="firmware", node=host.name, actions=plan.actions[1:])
    bmc.events.clear()
    stage.apply(ctx, only_bios)
    assert bmc.events[0] == f"PUSH {FW}/BIOS"  # nothing read before sending: the action carries its state
    assert [p["Targets"] for p in bmc.pushes] == [[f"{FW}/BIOS"]]  # the dropped BMC action is not sent
    assert not any(e.startswith(f"GET {FW}") for e in bmc.events)  # a staging is not verified before the reset


def test_bios_apply_writes_exactly_the_planned_attributes(make_host: Callable[..., HostEntry],
                                                          journal: Journal) -> None:
    host = make_host(attributes={"NicBoot1": "Disabled", "UsbControl": "UsbDisabled", "ProcTurboMode": "Disabled"})
    bmc = FakeBmc(versions=RUNNING)
    stage, ctx = BiosStage(OPTS), _ctx(host, bmc, journal)
    plan = stage.plan(host, stage.observe(ctx))
    bmc.events.clear()
    stage.apply(ctx, plan)
    assert bmc.events == ["PATCH /redfish/v1/Systems/437XR1138R2/Bios/Settings"]  # one write, nothing read first
    ((_, body),) = bmc.patches
    assert body["Attributes"] == {"NicBoot1": "Disabled", "UsbControl": "UsbDisabled"}  # ProcTurboMode pends
    assert [(a.action, a.outcome) for a in journal.actions(host.name)] == [("bios-write", "ok")]
    again = stage.plan(host, stage.observe(ctx))
    assert again.converged and "NicBoot1" in again.note


@pytest.mark.parametrize("takes", [True, False])
def test_reset_applies_and_verifies_what_was_staged(make_host: Callable[..., HostEntry], journal: Journal,
                                                    monkeypatch: pytest.MonkeyPatch, takes: bool) -> None:
    host = make_host(bmc="1.45", attributes={"ProcTurboMode": "Disabled"})  # the BMC is at baseline
    flash_to = {f"{FW}/BIOS": "P79 v1.50"} if takes else {}
    bmc = FakeBmc(versions=RUNNING, flash_to=flash_to)
    bmc.staged.append(f"{FW}/BIOS")
    run = journal.start_run("bringup", host.name)
    journal.action_finished(journal.action_started(run, host.name, "firmware", "stage-firmware", "bios 1.50"), "ok")
    monkeypatch.setattr(reset_stage.power, "host_reset", lambda node, clock, timeout: bmc.host_reset())
    stage, ctx = ResetStage(OPTS), _ctx(host, bmc, journal)
    stage.clock = fast_clock()
    plan = stage.plan(host, stage.observe(ctx))
    assert plan.actions[0].after == "applies bios 1.50; bios ProcTurboMode"
    if takes:
        stage.apply(ctx, plan)
    else:
        with pytest.raises(RedfishOperationFailed, match=r"firmware not at baseline after update: bios runs 1\.45"):
            stage.apply(ctx, plan)
    assert bmc.events.count("RESET") == 1
    assert stage.plan(host, stage.observe(ctx)).converged  # the reset is done: never asked for twice
    firmware = FirmwareStage(OPTS)
    again = [(a.kind, a.target) for a in firmware.plan(host, firmware.observe(ctx)).actions]
    assert again == ([] if takes else [("stage-firmware", "bios 1.50")])  # an image that did not take: staged anew
