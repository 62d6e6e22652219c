"""The campaign engine against fake BMCs: waves, halts, gates, hooks, pause/abort, resume."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from provision.campaign.catalog import Catalog, Component
from provision.campaign.engine import Engine, waves_for
from provision.campaign.gates import GateRunner
from provision.campaign.updater import Target, unguarded
from provision.errors import InputError
from provision.journal import Journal
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, Request, WaveState
from tests.unit.campaign.fakes import FakeBmcs, FakeHealth, at_baseline, catalog, targets

OLD = {"bmc": "1.0", "bios": "2.0"}
NODES = [f"n{i:02d}" for i in range(1, 11)]


class FailsOncePrepared(FakeBmcs):
    """A flash that waits (at most 10 s) until the next wave is prepared, once the canary's turn has begun."""

    def flashed(self, target: Target, comp: Component) -> None:
        for _ in range(2000):
            if self.prepared or threading.Event().wait(0.005):
                break


def engine(cat: Catalog, store: CampaignStore, bmcs: FakeBmcs, health: FakeHealth | None = None,
           **kw) -> Engine:
    return Engine(cat, store, targets(NODES), bmcs, GateRunner(health or FakeHealth()), poll_s=0.01, **kw)


def test_canary_then_batches_to_baseline(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 4}})
    bmcs = FakeBmcs(NODES, OLD)
    health = FakeHealth()
    out = engine(cat, store, bmcs, health).start(source, waves_for(NODES, cat))
    assert out.ok and (out.done, out.failed, out.pending) == (10, 0, 0)
    assert at_baseline(bmcs, cat) == NODES
    assert set(bmcs.flashes.values()) == {1} and len(bmcs.flashes) == 20
    assert dict(bmcs.resets) == {n: 1 for n in NODES}  # bios needs a reset: exactly one per node
    assert bmcs.order[0] == "n01"  # the canary went first, alone
    assert sorted(health.checked) == NODES  # every node passed the gate
    assert [w.state for w in store.waves("test")] == [WaveState.DONE] * 4  # 1 + 4 + 4 + 1
    node = store.node("test", "n05")
    assert node.before == OLD and node.after == {"bmc": "2.0", "bios": "3.0"} and node.flashed == ["bmc", "bios"]
    assert store.get("test").state is CampaignState.DONE


def test_converged_nodes_are_not_touched(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 2}})
    bmcs = FakeBmcs(NODES, {"bmc": "2.0", "bios": "3.0"})
    bmcs.versions["n03"]["bios"] = "2.0"
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.ok
    assert dict(bmcs.flashes) == {("n03", "bios"): 1}
    assert dict(bmcs.resets) == {"n03": 1}


def test_first_failure_halts_with_max_failures_0(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 3}, "halt": {"max_failures": 0}})

    bmcs = FailsOncePrepared(NODES, OLD)
    bmcs.faults["n01"] = "fail"
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.HALTED and "max_failures 0" in out.reason
    assert (out.done, out.failed, out.pending) == (0, 1, 9)
    assert bmcs.order == ["n01"]  # nothing after the failed canary
    assert store.node("test", "n01").error.startswith("update failed")
    assert all(n.state is NodeState.PENDING for n in store.nodes("test") if n.node != "n01")


def test_in_flight_nodes_finish_when_a_wave_halts(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 0, "batch_size": 10}, "halt": {"max_failures": 1}, "concurrency": 2})
    bmcs = FakeBmcs(NODES, OLD, flash_s=0.05)
    bmcs.faults.update(n01="fail", n02="fail")
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.HALTED
    states = {n.node: n.state for n in store.nodes("test")}
    assert states["n01"] is NodeState.FAILED and states["n02"] is NodeState.FAILED
    assert NodeState.ACTIVE not in states.values()  # every node done, failed, or untouched
    assert out.pending >= 7


def test_fail_percentage_halts_after_the_wave(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 0, "batch_size": 5}, "halt": {"max_failures": 5, "max_fail_percentage": 10}})
    bmcs = FakeBmcs(NODES, OLD)
    bmcs.faults["n02"] = "fail"
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.HALTED and "20.0% > 10%" in out.reason
    assert (out.done, out.failed, out.pending) == (4, 1, 5)


def test_failures_under_the_policy_finish_but_not_ok(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 9}, "halt": {"max_failures": 2}})
    bmcs = FakeBmcs(NODES, OLD)
    bmcs.faults["n05"] = "fail"
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.DONE and not out.ok and out.failed == 1


def test_success_without_new_version_is_a_failure(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 9}, "halt": {"max_failures": 3}})
    bmcs = FakeBmcs(NODES, OLD)
    bmcs.faults["n04"] = "noop"
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.failed == 1
    n4 = store.node("test", "n04")
    assert n4.state is NodeState.FAILED
    assert n4.error == "after the update: bmc is 1.0, expected 2.0; bios is 2.0, expected 3.0"


def test_unreadable_bmc_fails_the_node(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 1}, "halt": {"max_failures": 3}})
    bmcs = FakeBmcs(NODES, OLD)
    bmcs.faults["n06"] = "unreadable"
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.failed == 1 and "cannot read firmware" in store.node("test", "n06").error
    assert ("n06", "bmc") not in bmcs.flashes


def test_gate_failure_halts_before_the_next_wave(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 3}})
    bmcs = FakeBmcs(NODES, OLD)
    out = engine(cat, store, bmcs, FakeHealth(sick={"n01"})).start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.HALTED
    assert out.reason == "health gate failed after wave 0: n01: System Status.Health is Critical"
    assert bmcs.order == ["n01"]
    assert store.waves("test")[0].state is WaveState.GATE_FAILED


@pytest.mark.parametrize(("fault", "problem"), [
    # the gate's BMC read raises: no health evidence is not healthy (a mutant once flashed all 10 nodes)
    ("unreadable", "n01: health check failed: n01 BMC: GET /redfish/v1/Systems/1: connection refused"),
    ("mute", "n01: unhealthy"),  # not ok, and no problem named: still not a pass
])
def test_a_gate_without_health_evidence_halts_before_the_next_wave(store: CampaignStore, source: Path,
                                                                   fault: str, problem: str) -> None:
    health = FakeHealth(**{fault: {"n01"}})
    cat = catalog({"waves": {"canary": 1, "batch_size": 3}})
    bmcs = FakeBmcs(NODES, OLD)
    out = engine(cat, store, bmcs, health).start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.HALTED
    assert out.reason == f"health gate failed after wave 0: {problem}"
    assert bmcs.order == ["n01"] and health.checked == ["n01"]
    assert [w.state for w in store.waves("test")][:2] == [WaveState.GATE_FAILED, WaveState.PENDING]


@pytest.mark.parametrize(("sick", "state"), [(set(), CampaignState.DONE), ({"n01"}, CampaignState.HALTED)])
def test_a_node_done_before_a_crash_is_gated_on_resume(store: CampaignStore, source: Path, sick: set[str],
                                                       state: CampaignState) -> None:
    """n01 was updated, then the controller died before its gate: the resumed wave's gate reads its health
    (it is not taken as healthy for having been done), and a sick n01 halts before the next wave."""
    cat = catalog({"waves": {"canary": 2, "batch_size": 8}})
    store.create("test", str(source), "x", waves_for(NODES, cat))
    store.node_started("test", "n01", OLD)
    store.node_finished("test", "n01", NodeState.DONE, {"bmc": "2.0", "bios": "3.0"})
    store.set_state("test", CampaignState.PAUSED, "interrupted")
    health = FakeHealth(sick=sick)
    bmcs = FakeBmcs(NODES, OLD)
    out = engine(cat, store, bmcs, health).resume()
    assert out.state is state and "n01" in health.checked
    assert ("n01", "bmc") not in bmcs.flashes
    if sick:
        assert out.reason == "health gate failed after wave 0: n01: System Status.Health is Critical"
        assert bmcs.order == ["n02"]


def test_full_verify_hook_is_part_of_the_gate(store: CampaignStore, source: Path) -> None:
    verify = f"{sys.executable} -c \"import sys; sys.exit(1 if sys.argv[1] == 'n02' else 0)\" {{node}}"
    cat = catalog({"waves": {"canary": 1, "batch_size": 3}, "gate": {"full_verify": verify}})
    bmcs = FakeBmcs(NODES, OLD)
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.HALTED and "wave 1: n02: full verify failed (exit 1)" in out.reason


def test_drain_and_undrain_hooks_wrap_each_flash(store: CampaignStore, source: Path, tmp_path: Path) -> None:
    log = tmp_path / "hooks.log"
    write = f"{sys.executable} -c \"import sys; open(sys.argv[1], 'a').write(sys.argv[2] + chr(10))\" {log}"
    cat = catalog({"waves": {"canary": 1, "batch_size": 9}, "concurrency": 1,
                   "hooks": {"drain": write + " drain:{node}", "undrain": write + " undrain:{node}"}})
    bmcs = FakeBmcs(NODES[:2], OLD)
    bmcs.versions.update({n: {"bmc": "2.0", "bios": "3.0"} for n in NODES[2:]})
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.ok
    assert log.read_text().split() == ["drain:n01", "undrain:n01", "drain:n02", "undrain:n02"]
    kinds = [a.action for a in store.journal.actions("n01")]
    assert kinds == ["drain", "firmware-update", "undrain"]


def test_failed_drain_flashes_nothing(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 1}, "hooks": {"drain": "false"}})
    bmcs = FakeBmcs(NODES, OLD)
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.HALTED and not bmcs.flashes
    assert store.node("test", "n01").error == "drain hook failed (exit 1)"


def test_outside_the_window_no_wave_starts(store: CampaignStore, source: Path) -> None:
    cat = catalog({"window": {"start": "22:00", "end": "06:00"}})
    bmcs = FakeBmcs(NODES, OLD)
    noon = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    out = engine(cat, store, bmcs, now=lambda: noon).start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.PAUSED and "opens 2026-11-30T22:00+00:00" in out.reason
    assert not bmcs.flashes
    night = datetime(2026, 11, 30, 23, 0, tzinfo=UTC)
    assert engine(cat, store, bmcs, now=lambda: night).resume().ok


def test_pause_request_stops_before_the_next_wave_and_resume_finishes(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 3}})

    class PausingBmcs(FakeBmcs):
        def update(self, target, flash, reset, guard=unguarded):  # the operator pauses while the canary flashes
            store.request("test", Request.PAUSE)
            super().update(target, flash, reset, guard)

    bmcs = PausingBmcs(NODES, OLD)
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.PAUSED and (out.done, out.pending) == (1, 9)
    bmcs.__class__ = FakeBmcs  # the operator does not pause again
    assert engine(cat, store, bmcs).resume().ok
    assert at_baseline(bmcs, cat) == NODES and set(bmcs.flashes.values()) == {1}


def test_a_halt_request_stops_the_one_controller_engine_and_resume_finishes(store: CampaignStore,
                                                                          source: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 3}})

    class HaltingBmcs(FakeBmcs):
        def update(self, target, flash, reset, guard=unguarded):  # `provision campaign halt` on a SQLite journal
            store.request("test", Request.HALT)
            super().update(target, flash, reset, guard)

    bmcs = HaltingBmcs(NODES, OLD)
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.HALTED and out.reason == "halted by request" and bmcs.order == ["n01"]
    bmcs.__class__ = FakeBmcs
    assert engine(cat, store, bmcs).resume().ok


def test_abort_during_a_wave_is_final(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 3}})

    class AbortingBmcs(FakeBmcs):
        def update(self, target, flash, reset, guard=unguarded):
            store.request("test", Request.ABORT)
            super().update(target, flash, reset, guard)

    bmcs = AbortingBmcs(NODES, OLD)
    eng = engine(cat, store, bmcs)
    out = eng.start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.ABORTED and bmcs.order == ["n01"]
    assert store.get("test").ended_at is not None
    with pytest.raises(InputError, match="aborted; nothing to resume"):
        eng.resume()


def test_resume_after_a_crash_reobserves_every_node(store: CampaignStore, source: Path) -> None:
    """The journal says mid-wave; the BMCs decide: finished ones are not flashed again, busy ones are
    waited for, untouched ones are flashed."""
    cat = catalog({"waves": {"canary": 1, "batch_size": 9}})
    bmcs = FakeBmcs(NODES, OLD)
    store.create("test", str(source), "0" * 64, waves_for(NODES, cat))
    store.wave_state("test", 0, WaveState.DONE, "ok")
    store.node_started("test", "n01", OLD)
    store.node_finished("test", "n01", NodeState.DONE, {"bmc": "2.0", "bios": "3.0"})
    bmcs.versions["n01"] = {"bmc": "2.0", "bios": "3.0"}
    # n02: the controller died after the BMC finished the flash
    store.node_started("test", "n02", OLD)
    store.node_flashing("test", "n02", ["bmc", "bios"])
    bmcs.versions["n02"] = {"bmc": "2.0", "bios": "3.0"}
    # n03: died while the BMC was still flashing: it finishes on its own a little later
    store.node_started("test", "n03", OLD)
    store.node_flashing("test", "n03", ["bmc", "bios"])
    bmcs.busy_until["n03"] = time.monotonic() + 0.2
    bmcs.versions["n03"] = {"bmc": "2.0", "bios": "3.0"}
    # n04: died after the bios image was staged, before the host reset
    store.node_started("test", "n04", OLD)
    bmcs.versions["n04"] = {"bmc": "2.0", "bios": "2.0"}
    bmcs.staged["n04"] = {"bios": "3.0"}
    out = engine(cat, store, bmcs).resume()
    assert out.ok
    assert at_baseline(bmcs, cat) == NODES
    assert not any(n in ("n01", "n02", "n03") for n, _ in bmcs.flashes)
    assert ("n04", "bios") not in bmcs.flashes and bmcs.resets["n04"] == 1
    assert set(bmcs.flashes.values()) == {1} and len(bmcs.flashes) == 12  # n05..n10, two components each
    assert store.node("test", "n02").before == OLD  # the original versions survive the resume


def test_retry_failed_on_resume(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 9}, "halt": {"max_failures": 2}})
    bmcs = FakeBmcs(NODES, OLD)
    bmcs.faults["n07"] = "fail"
    assert engine(cat, store, bmcs).start(source, waves_for(NODES, cat)).failed == 1
    del bmcs.faults["n07"]
    out = engine(cat, store, bmcs).resume(retry_failed=True)
    assert out.ok and bmcs.flashes[("n07", "bios")] == 2  # the retry is the second attempt, by request


def test_start_twice_is_refused(store: CampaignStore, source: Path) -> None:
    cat = catalog()
    bmcs = FakeBmcs(NODES, {"bmc": "2.0", "bios": "3.0"})
    engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    with pytest.raises(InputError, match="already exists"):
        engine(cat, store, bmcs).start(source, waves_for(NODES, cat))


def test_hosts_gone_from_the_inventory_are_refused(store: CampaignStore, source: Path) -> None:
    cat = catalog()
    store.create("test", str(source), "0" * 64, [["n01", "ghost"]])
    with pytest.raises(InputError, match="host\\(s\\) ghost not in the inventory"):
        engine(cat, store, FakeBmcs(NODES, OLD)).resume()


@pytest.fixture
def ctrl_c_handled() -> Iterator[None]:
    """Python's own Ctrl-C handler, as an operator's terminal has: a shell's background job (a CI runner's
    step, nohup) starts with SIGINT ignored, and then _thread.interrupt_main() does nothing."""
    import signal

    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, saved)


@pytest.mark.usefixtures("ctrl_c_handled")
def test_ctrl_c_finishes_nodes_in_flight_and_leaves_the_rest_pending(store: CampaignStore, source: Path) -> None:
    import _thread

    cat = catalog({"waves": {"canary": 0, "batch_size": 10}, "concurrency": 2})

    class InterruptedBmcs(FakeBmcs):
        def update(self, target, flash, reset, guard=unguarded):
            if target.name == "n01":  # the operator presses Ctrl-C while n01 and n02 flash: the main thread
                _thread.interrupt_main()  # gets it at its next bytecode (no timer a loaded machine could delay)
            super().update(target, flash, reset, guard)

    bmcs = InterruptedBmcs(NODES, OLD, flash_s=0.2)
    with pytest.raises(KeyboardInterrupt):
        engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    states = {n.node: n.state for n in store.nodes("test")}
    assert NodeState.ACTIVE not in states.values()
    assert states["n01"] is NodeState.DONE and list(states.values()).count(NodeState.PENDING) >= 6
    assert store.get("test").state is CampaignState.PAUSED
    bmcs.__class__ = FakeBmcs
    assert engine(cat, store, bmcs).resume().ok and set(bmcs.flashes.values()) == {1}


def test_each_wave_prepares_the_next_ones_pending_nodes_and_releases_at_the_end(
        store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 4}})
    bmcs = FakeBmcs(NODES, OLD)
    bmcs.versions["n03"] = {"bmc": "2.0", "bios": "3.0"}  # at the baseline: in no wave, never prepared
    waves = waves_for([n for n in NODES if n != "n03"], cat)
    out = engine(cat, store, bmcs).start(source, waves)
    assert out.ok
    assert bmcs.prepared == [n for wave in waves[1:] for n in wave]  # never the first wave, each node once
    assert bmcs.released == 1


def test_a_halt_still_releases_what_was_prepared(store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 3}, "halt": {"max_failures": 0}})

    bmcs = FailsOncePrepared(NODES, OLD)
    bmcs.faults["n01"] = "fail"
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert out.state is CampaignState.HALTED
    assert bmcs.prepared == ["n02", "n03", "n04"] and bmcs.released == 1


def test_a_turn_on_a_node_another_run_holds_is_refused_naming_the_holder(store: CampaignStore,
                                                                         source: Path) -> None:
    from provision.journal.locks import NodeLocks

    cat = catalog({"waves": {"canary": 1, "batch_size": 10}, "halt": {"max_failures": 5}})
    bmcs = FakeBmcs(NODES, OLD)
    with Journal(store.journal.path) as other, NodeLocks(other).hold(["n03"], owner="bringup"):
        out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    assert (out.done, out.failed) == (9, 1)
    refused = store.node("test", "n03")
    assert refused.state is NodeState.FAILED and "n03: locked by bringup (pid " in refused.error
    assert not any(key[0] == "n03" for key in bmcs.flashes)
    assert NodeLocks(store.journal).held() == []  # every turn gave its lease back


def test_a_node_whose_version_cannot_be_compared_is_failed_and_never_flashed(store: CampaignStore,
                                                                              source: Path) -> None:
    """The canary's BIOS reports a build id: its turn fails naming both strings before the drain hook or any
    update (not even the BMC image, which alone would be an upgrade); the campaign halts on it."""
    cat = catalog({"waves": {"canary": 1, "batch_size": 4}})
    bmcs = FakeBmcs(NODES, OLD)
    why = "bios (BIOS): cannot compare 'buildbrain-gcid-38635631' with catalog '3.0': opaque"
    bmcs.incomparable["n01"] = {"bios": why}
    out = engine(cat, store, bmcs).start(source, waves_for(NODES, cat))
    node = store.node("test", "n01")
    assert node.state is NodeState.FAILED and node.error == f"nothing sent: {why}"
    assert [k for k in bmcs.flashes if k[0] == "n01"] == [] and bmcs.resets["n01"] == 0
    assert out.failed == 1 and not out.ok
