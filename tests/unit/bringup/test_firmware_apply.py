"""The firmware stage's send -> monitor -> verify path against a fake BMC, and the journal's staged set.

These catch the two bugs the unit tier once let through: a staging interrupted before its outcome was
journaled sent a second time after the crash, and a firmware task that ended in failure taken as done.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import nullcontext
from pathlib import Path

import pytest

from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.bringup.stages.firmware import FirmwareStage
from provision.bringup.stages.staged import staged_since_reset
from provision.errors import CheckFailed
from provision.journal import Journal
from provision.redfish.errors import RedfishOperationFailed
from provision.redfish.ops import firmware as fw
from provision.redfish.ops.converge import ConvergeOptions, ConvergePlan, verify_after_reset
from provision.spec import HostEntry
from tests.unit.bringup.fakebmc import FW, FakeBmc, fast_clock, node_of

RUNNING = {"BMC": "1.45", "BIOS": "P79 v1.45"}
FLASHED = {f"{FW}/BMC": "1.50", f"{FW}/BIOS": "P79 v1.50"}


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    with Journal(tmp_path / "journal.db") as jr:
        yield jr


def _ctx(host: HostEntry, bmc: FakeBmc, journal: Journal) -> StageContext:
    ctx = StageContext(host=host, journal=journal, run_id=journal.start_run("bringup", host.name))
    ctx.keep("bmc", lambda: nullcontext(node_of(bmc)))
    return ctx


def _stage() -> FirmwareStage:
    stage = FirmwareStage(BringupOptions(inventory=Path("inventory/hosts.yml"), poll_s=0))
    stage.clock = fast_clock()
    return stage


def _run(stage: FirmwareStage, ctx: StageContext) -> None:
    stage.apply(ctx, stage.plan(ctx.host, stage.observe(ctx)))


def test_staged_since_reset_counts_a_send_interrupted_before_its_outcome(journal: Journal) -> None:
    run = journal.start_run("bringup", "node01")
    done = journal.action_started(run, "node01", "firmware", "stage-firmware", "gpu 1.0")
    journal.action_finished(done, "ok")
    journal.action_started(run, "node01", "firmware", "stage-firmware", "bios 1.50")  # killed here
    failed = journal.action_started(run, "node01", "firmware", "stage-firmware", "nic 2.0")
    journal.action_finished(failed, "failed", "RedfishOperationFailed")
    assert staged_since_reset(journal, "node01") == {"gpu 1.0", "bios 1.50"}
    reset = journal.action_started(run, "node01", "reset", "host-reset", "host")
    assert staged_since_reset(journal, "node01") == {"gpu 1.0", "bios 1.50"}  # a reset not known to be done
    journal.action_finished(reset, "ok")
    assert staged_since_reset(journal, "node01") == set()


def test_after_a_crash_mid_staging_the_image_is_not_sent_again(make_host: Callable[..., HostEntry],
                                                               journal: Journal) -> None:
    host, bmc = make_host(), FakeBmc(versions={"BMC": "1.50", "BIOS": "P79 v1.45"}, flash_to=FLASHED)
    crashed = journal.start_run("bringup", host.name)
    journal.action_started(crashed, host.name, "firmware", "stage-firmware", "bios 1.50")  # intent, then kill -9
    stage, ctx = _stage(), _ctx(host, bmc, journal)
    plan = stage.plan(host, stage.observe(ctx))
    assert plan.converged and "waiting for the host reset: bios 1.50" in plan.note
    stage.apply(ctx, plan)
    assert bmc.pushes == []


def test_flash_and_stage_then_verify(make_host: Callable[..., HostEntry], journal: Journal) -> None:
    host, bmc = make_host(), FakeBmc(versions=RUNNING, flash_to=FLASHED)
    stage, ctx = _stage(), _ctx(host, bmc, journal)
    _run(stage, ctx)
    assert [(p["Targets"], p["@Redfish.OperationApplyTime"]) for p in bmc.pushes] == [
        ([f"{FW}/BMC"], "Immediate"), ([f"{FW}/BIOS"], "OnReset")]
    assert bmc.tree[f"{FW}/BMC"]["Version"] == "1.50" and bmc.staged == [f"{FW}/BIOS"]
    assert [(a.action, a.target, a.outcome) for a in journal.actions(host.name)] == [
        ("flash", "bmc 1.50", "ok"), ("stage-firmware", "bios 1.50", "ok")]
    again = stage.plan(host, stage.observe(ctx))  # the second observation: BMC at baseline, BIOS staged
    assert again.converged


@pytest.mark.parametrize(("polls", "pushed", "error"), [
    (3, [f"{FW}/BIOS"], None),  # it ends within its timeout: the BMC is at baseline, only the BIOS is sent
    (10_000, [], r"update task still running: bmc \(task 1\); nothing sent"),  # it outlives its timeout
])
def test_a_task_a_dead_run_left_running_is_waited_for_never_sent_again(
        make_host: Callable[..., HostEntry], journal: Journal, polls: int, pushed: list[str],
        error: str | None) -> None:
    host = make_host()
    bmc = FakeBmc(versions=RUNNING, flash_to=FLASHED)
    bmc.start_task([f"{FW}/BMC"], "Immediate", running_polls=polls)  # sent by a run killed before it journaled
    stage, ctx = _stage(), _ctx(host, bmc, journal)
    if error is None:
        _run(stage, ctx)
        assert bmc.tree[f"{FW}/BMC"]["Version"] == "1.50"
    else:
        with pytest.raises(CheckFailed, match=error):
            _run(stage, ctx)
    assert [t for p in bmc.pushes for t in p["Targets"]] == pushed


@pytest.mark.parametrize("end", [
    ("Exception", "Critical"),
    ("Completed", "Critical"),  # Task schema: Completed is "successfully or with warnings"; Critical is neither
])
@pytest.mark.parametrize(("running", "what"), [
    ({"BMC": "1.50", "BIOS": "P79 v1.45"}, "stage-firmware"),  # a staging (OnReset): nothing verifies it now
    (RUNNING, "flash"),  # an immediate flash
])
def test_a_failed_task_fails_the_stage_and_is_journaled_failed(make_host: Callable[..., HostEntry],
                                                               journal: Journal, running: dict[str, str],
                                                               what: str, end: tuple[str, str]) -> None:
    host = make_host()
    bmc = FakeBmc(versions=running, flash_to=FLASHED, task_end=end)
    stage, ctx = _stage(), _ctx(host, bmc, journal)
    with pytest.raises(RedfishOperationFailed, match=rf"firmware task .* ended {end[0]}/{end[1]}: update {end[0]}"):
        _run(stage, ctx)
    first = journal.actions(host.name)[0]
    assert (first.action, first.outcome) == (what, "failed")
    assert bmc.staged == [] and staged_since_reset(journal, host.name) == set()  # a failed staging is not staged


def test_a_task_that_ends_ok_but_leaves_the_old_version_fails_verification(make_host: Callable[..., HostEntry],
                                                                           journal: Journal) -> None:
    host, bmc = make_host(), FakeBmc(versions=RUNNING)  # flashes nothing
    stage, ctx = _stage(), _ctx(host, bmc, journal)
    with pytest.raises(RedfishOperationFailed, match=r"firmware not at baseline after update: bmc runs 1\.45"):
        _run(stage, ctx)
    assert [a.outcome for a in journal.actions(host.name)] == ["failed"]


def test_a_task_completed_with_warnings_is_a_success(make_host: Callable[..., HostEntry], journal: Journal) -> None:
    """Task schema: TaskState Completed means "completed successfully or with warnings"; TaskStatus Warning
    (e.g. a component that needs a reset to activate) is not a failure: the staging is journaled staged."""
    host = make_host()
    bmc = FakeBmc(versions={"BMC": "1.50", "BIOS": "P79 v1.45"}, flash_to=FLASHED, task_end=("Completed", "Warning"))
    stage, ctx = _stage(), _ctx(host, bmc, journal)
    _run(stage, ctx)
    assert [(a.action, a.target, a.outcome) for a in journal.actions(host.name)] == [
        ("stage-firmware", "bios 1.50", "ok")]
    assert bmc.staged == [f"{FW}/BIOS"] and staged_since_reset(journal, host.name) == {"bios 1.50"}


def test_a_bmc_that_drops_out_while_its_task_runs_is_waited_out(make_host: Callable[..., HostEntry],
                                                                 journal: Journal) -> None:
    """A BMC image resets the BMC while its own task is polled: the polls that get no answer are waited out
    (until the task's timeout), not taken as the update's failure."""
    host = make_host()
    bmc = FakeBmc(versions=RUNNING, flash_to=FLASHED, task_blips=3)
    stage, ctx = _stage(), _ctx(host, bmc, journal)
    _run(stage, ctx)
    assert bmc.task_blips == 0 and bmc.tree[f"{FW}/BMC"]["Version"] == "1.50"
    assert [(a.action, a.outcome) for a in journal.actions(host.name)] == [("flash", "ok"), ("stage-firmware", "ok")]


def test_verify_names_each_component_not_at_baseline(make_host: Callable[..., HostEntry]) -> None:
    """After a reset every staged component is verified: one at baseline does not vouch for another."""
    host = make_host()
    bmc = FakeBmc(versions=RUNNING)
    node = node_of(bmc)
    steps = fw.plan(host.spec.firmware, fw.observe(node.conn), node.vendor).steps
    assert [s.component for s in steps] == ["bmc", "bios"]
    bmc.tree[f"{FW}/BMC"]["Version"] = "1.50"  # the BMC took its image; the BIOS did not
    with pytest.raises(RedfishOperationFailed, match=r"not at baseline after update: bios runs [^;]*1\.45[^;]*$"):
        fw.verify(node, steps, host.spec.firmware, fast_clock(), timeout_s=5)
    bmc.tree[f"{FW}/BIOS"]["Version"] = "P79 v1.50"
    fw.verify(node, steps, host.spec.firmware, fast_clock(), timeout_s=5)


@pytest.mark.parametrize(("needs_host_reset", "apply_time"), [(True, "OnReset"), (False, "OnReset"), (True, "Immediate")])
def test_after_the_reset_every_staged_step_is_verified(make_host: Callable[..., HostEntry], needs_host_reset: bool,
                                                       apply_time: str) -> None:
    """A step staged OnReset waits for the host reset whether or not its component says it needs one (the BMC
    offered only OnReset), and a step that needs the reset is verified after it whatever its apply time."""
    host = make_host()
    bmc = FakeBmc(versions=RUNNING)
    node = node_of(bmc)
    bios = [s.model_copy(update={"needs_host_reset": needs_host_reset, "apply_time": apply_time})
            for s in fw.plan(host.spec.firmware, fw.observe(node.conn), node.vendor).steps if s.component == "bios"]
    cplan = ConvergePlan(firmware=fw.FirmwarePlan(steps=bios))
    with pytest.raises(RedfishOperationFailed, match=r"not at baseline after update: bios runs"):
        verify_after_reset(node, host.spec, cplan, ConvergeOptions(verify_timeout_s=5), fast_clock())
