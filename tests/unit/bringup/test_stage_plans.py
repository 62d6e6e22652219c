"""Every BMC stage's plan as a table: given an observation (BMC state and the journal's staged set),
these actions. Plans are pure: the same inputs give the same plan, and nothing is read while planning.
Includes the crash cases: a staging started and not journaled, a flash started and not finished, and a
host reset done and not journaled."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from provision.bringup.options import BringupOptions
from provision.bringup.stages.bios import BiosObserved, BiosStage, BiosWrite
from provision.bringup.stages.firmware import FirmwareAction, FirmwareObserved, FirmwareStage, task_evidence
from provision.bringup.stages.reset import HostReset, ResetObserved, ResetStage
from provision.errors import CheckFailed, ChecksIncomplete
from provision.redfish.ops import bios as bios_ops
from provision.redfish.ops import firmware as fw
from provision.redfish.resources import Task
from provision.spec import HostEntry
from tests.unit.bringup.fakebmc import FakeBmc, node_of

OPTS = BringupOptions(inventory=Path("inventory/hosts.yml"))
RUNNING = {"BMC": "1.45", "BIOS": "P79 v1.45"}


def _fw(versions: dict[str, str] | None = None, staged: set[str] | None = None,
        interrupted: set[str] | None = None) -> FirmwareObserved:
    node = node_of(FakeBmc(versions=versions or RUNNING))
    return FirmwareObserved(firmware=fw.observe(node.conn), vendor=node.vendor, staged=frozenset(staged or ()),
                            interrupted=frozenset(interrupted or ()))


@pytest.mark.parametrize(("versions", "staged", "interrupted", "kinds", "note"), [
    # nothing done yet: the BMC flashed now, the BIOS image staged for the reset
    (RUNNING, set(), set(), [("flash", "bmc 1.50"), ("stage-firmware", "bios 1.50")], "at baseline"),
    # converged
    ({"BMC": "1.50", "BIOS": "P79 v1.50"}, set(), set(), [], "at baseline"),
    # a staging journaled (or started and never journaled: staged_since_reset counts both): not sent again
    (RUNNING, {"bios 1.50"}, set(), [("flash", "bmc 1.50")], "staged, waiting for the host reset: bios 1.50"),
    # a flash started and not finished, the BMC still runs the old version: sent again, and said so
    (RUNNING, set(), {"bmc 1.50"}, [("flash", "bmc 1.50"), ("stage-firmware", "bios 1.50")],
     "sent again, a flash was interrupted: bmc 1.50"),
    # a flash started and not finished that did take: nothing to do for it
    ({"BMC": "1.50", "BIOS": "P79 v1.45"}, set(), {"bmc 1.50"}, [("stage-firmware", "bios 1.50")], "at baseline"),
    # staged for an older baseline: the new one is staged (the staged set names versions)
    (RUNNING, {"bios 1.49"}, set(), [("flash", "bmc 1.50"), ("stage-firmware", "bios 1.50")], "at baseline"),
])
def test_firmware_plan(make_host: Callable[..., HostEntry], versions: dict[str, str], staged: set[str],
                       interrupted: set[str], kinds: list[tuple[str, str]], note: str) -> None:
    host = make_host()
    observed = _fw(versions, staged, interrupted)
    plan = FirmwareStage(OPTS).plan(host, observed)
    assert [(a.kind, a.target) for a in plan.actions] == kinds
    assert plan.note == note
    for action in plan.actions:  # each action carries the step it sends and the state it was planned from
        assert isinstance(action, FirmwareAction)
        assert action.step.component == action.target.split()[0] and action.state == observed.firmware
        assert action.step.image.is_file() and action.step.targets
    assert FirmwareStage(OPTS).plan(host, observed) == plan  # pure: the same inputs, the same plan


def test_firmware_plan_reads_the_update_tasks_as_the_campaign_does(make_host: Callable[..., HostEntry]) -> None:
    """A BMC image's task still running (sent by a run that died): nothing sent; a BIOS image a finished task
    left awaiting the reset: not sent again, though the journal has no record of it."""
    host = make_host()
    observed = _fw()
    bmc_step = next(s for s in FirmwareStage(OPTS).plan(host, observed).actions if s.target == "bmc 1.50")
    image = bmc_step.step.image.name  # type: ignore[attr-defined]
    bios = next(c for c in host.spec.firmware if c.component == "bios")
    running = Task.parse({"@odata.id": "/t/7", "Id": "7", "TaskState": "Running",
                          "Payload": {"JsonBody": json.dumps({"ImageURI": f"http://h/{image}"})}})
    on_reset = {"ImageURI": f"http://h/{Path(bios.image).name}", "@Redfish.OperationApplyTime": "OnReset"}
    awaiting = Task.parse({"@odata.id": "/t/8", "Id": "8", "TaskState": "Completed", "TaskStatus": "OK",
                           "Payload": {"JsonBody": json.dumps(on_reset)}})
    for tasks, expected in (([running], {"bmc": "7"}), ([awaiting], {})):
        evidence = task_evidence(tasks, host.spec.firmware, observed.firmware, observed.vendor)
        assert evidence.running == expected
    with pytest.raises(CheckFailed, match=r"update task still running: bmc \(task 7\); nothing sent"):
        FirmwareStage(OPTS).plan(host, replace(observed, evidence=task_evidence(
            [running], host.spec.firmware, observed.firmware, observed.vendor)))
    plan = FirmwareStage(OPTS).plan(host, replace(observed, evidence=task_evidence(
        [awaiting], host.spec.firmware, observed.firmware, observed.vendor)))
    assert [a.target for a in plan.actions] == ["bmc 1.50"]
    assert plan.note == f"staged, waiting for the host reset: bios {bios.version}"


def test_firmware_plan_refuses_a_downgrade(make_host: Callable[..., HostEntry]) -> None:
    with pytest.raises(CheckFailed, match=r"bmc: running 1\.45 is newer than baseline 1\.40"):
        FirmwareStage(OPTS).plan(make_host(bmc="1.40"), _fw())


def test_firmware_plan_stops_on_a_version_it_cannot_compare(make_host: Callable[..., HostEntry]) -> None:
    """A BIOS reporting a build id: the bring-up stops there (exit 3), naming both strings; nothing is sent,
    not even the BMC image that alone would be an upgrade."""
    observed = _fw({"BMC": "1.45", "BIOS": "buildbrain-gcid-38635631"})
    with pytest.raises(ChecksIncomplete, match=r"nothing sent: firmware bios \(BIOS\): cannot compare "
                                               r"'buildbrain-gcid-38635631' with baseline '1\.50'"):
        FirmwareStage(OPTS).plan(make_host(), observed)


ATTRS = {"ProcTurboMode": "Disabled", "PowerProfile": "MaxPerf", "NicBoot1": "Disabled"}


@pytest.mark.parametrize(("attributes", "writes", "note"), [
    # ProcTurboMode=Disabled already waits in Settings (the capture); NicBoot1 is to be written
    (ATTRS, {"NicBoot1": "Disabled"}, "pending until the host reset: ProcTurboMode"),
    ({"ProcTurboMode": "Disabled"}, None, "pending until the host reset: ProcTurboMode"),
    ({"PowerProfile": "MaxPerf"}, None, "BIOS matches the spec"),
    ({"NicBoot1": "Disabled", "UsbControl": "UsbDisabled"}, {"NicBoot1": "Disabled", "UsbControl": "UsbDisabled"}, ""),
])
def test_bios_plan(make_host: Callable[..., HostEntry], attributes: dict[str, str], writes: dict[str, str] | None,
                   note: str) -> None:
    node = node_of(FakeBmc(versions=RUNNING))
    host = make_host(attributes=attributes)
    plan = BiosStage(OPTS).plan(host, BiosObserved(bios=bios_ops.observe(node), vendor=node.vendor))
    assert plan.note == note
    if writes is None:
        assert plan.converged
        return
    (action,) = plan.actions
    assert isinstance(action, BiosWrite) and action.kind == "bios-write"
    assert action.plan.writes == writes  # the write carries its attributes and values
    assert action.target == f"{len(writes)} attribute(s)"


def _reset(versions: dict[str, str], staged: set[str]) -> ResetObserved:
    node = node_of(FakeBmc(versions=versions))
    return ResetObserved(firmware=fw.observe(node.conn), bios=bios_ops.observe(node), vendor=node.vendor,
                         staged=frozenset(staged))


@pytest.mark.parametrize(("versions", "staged", "attributes", "firmware", "bios"), [
    # a staged image still behind and a pending BIOS value: one reset, verifying both
    (RUNNING, {"bios 1.50"}, {"ProcTurboMode": "Disabled"}, ["bios"], ["ProcTurboMode"]),
    # staged firmware only
    (RUNNING, {"bios 1.50"}, {}, ["bios"], None),
    # a behind component that was never staged (e.g. --only reset) needs no reset
    (RUNNING, set(), {}, None, None),
    # a reset done and not journaled: the staged image runs now, nothing pends: no second reset
    ({"BMC": "1.50", "BIOS": "P79 v1.50"}, {"bios 1.50"}, {}, None, None),
    # a BIOS value to write but not written (not pending): the reset does not wait for it
    (RUNNING, set(), {"NicBoot1": "Disabled"}, None, None),
])
def test_reset_plan(make_host: Callable[..., HostEntry], versions: dict[str, str], staged: set[str],
                    attributes: dict[str, str], firmware: list[str] | None, bios: list[str] | None) -> None:
    plan = ResetStage(OPTS).plan(make_host(attributes=attributes), _reset(versions, staged))
    if firmware is None and bios is None:
        assert plan.converged and plan.note == "nothing staged"
        return
    (action,) = plan.actions
    assert isinstance(action, HostReset) and action.kind == "host-reset"
    assert [s.component for s in action.firmware] == (firmware or [])
    assert ([c.attribute for c in action.bios.changes] if action.bios else None) == bios
