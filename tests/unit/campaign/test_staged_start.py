"""`campaign start` reads the canary's nodes, starts, and reads the rest while the canary runs.

The plan stays a pure function of the spec and what was read: the waves of first_plan + later_plan are build_plan's
over every target (tables); the canary holds only nodes read before it started; every target is either planned
once or reported; a controller stopped between the canary and the later waves leaves them to resume."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from provision.campaign.catalog import Catalog
from provision.campaign.engine import Engine
from provision.campaign.gates import GateRunner
from provision.campaign.plan import Rest, build_plan, first_plan, later_plan, plan_start, to_read
from provision.campaign.updater import Component, FirmwareState, Guard, Target, unguarded
from provision.errors import InputError
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, WaveState
from tests.unit.campaign.fakes import FakeBmcs, FakeHealth, at_baseline, catalog, targets
from tests.unit.campaign.test_not_applicable import BOUND, FLEET

OLD = {"bmc": "1.0", "bios": "2.0"}
NEW = {"bmc": "2.0", "bios": "3.0"}
NODES = [f"n{i:02d}" for i in range(1, 11)]


def states(pattern: str) -> dict[str, FirmwareState | str]:
    """One character per node of NODES: o old firmware, b at baseline, u unreadable, x a version that cannot
    be compared (a problem: planned, never flashed)."""
    out: dict[str, FirmwareState | str] = {}
    for node, c in zip(NODES, pattern, strict=True):
        if c == "u":
            out[node] = f"{node}: BMC unreachable"
        else:
            out[node] = FirmwareState(versions=dict(NEW if c == "b" else OLD),
                                      incomparable={"bmc": "bmc 1.0a vs 2.0"} if c == "x" else {})
    return out


def staged(cat: Catalog, observed: dict[str, FirmwareState | str]) -> tuple[list[str], list[list[str]],
                                                                             list[list[str]], set[str]]:
    """(the order nodes were read in before the start, the first waves, the later waves, every node reported)."""
    order, read = list(observed), {}  # type: ignore[var-annotated]
    seen: list[str] = []
    while (head := first_plan(cat, order, read)) is None:
        batch = to_read(cat, order, read)
        assert batch and not set(batch) & set(read)
        seen += batch
        read.update({n: observed[n] for n in batch})
    rest = {n: observed[n] for n in order if n not in read}
    later = later_plan(cat, sum(len(w) for w in head.waves), rest) if rest else None
    reported = {p.node for p in head.nodes} | ({p.node for p in later.nodes} if later else set())
    return seen, head.waves, later.waves if later else [], reported


POLICIES = [
    {"canary": 1, "batch_size": 3},
    {"canary": "20%", "max_unavailable": "25%"},
    {"canary": 3, "max_unavailable": 2},
    {"canary": 0, "batch_size": 4},
    {"canary": "100%"},
]
PATTERNS = ["oooooooooo", "bbbooooooo", "obobobobob", "uooxoooboo", "bbbbbbbbbb", "bbbbbbbbbo", "xuxuxuxuxu"]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_staged_plan_is_the_whole_plan(policy: dict, pattern: str) -> None:
    cat = catalog({"waves": policy})
    observed = states(pattern)
    whole = build_plan(cat, observed)
    seen, first, later, reported = staged(cat, observed)
    assert first + later == whole.waves
    planned = [n for w in first + later for n in w]
    assert len(planned) == len(set(planned))  # no node twice
    assert set(planned) == {p.node for p in whole.nodes if p.needs_work}  # unreadable and problems included
    assert reported == set(NODES)  # at baseline, unreadable: every node is in the plan's report, none dropped
    if later:  # started early: the canary holds only nodes read before the start
        assert len(first) == 1 and set(first[0]) <= set(seen)


@pytest.mark.parametrize(("policy", "pattern", "reads", "canary"), [
    # reads before the start: as many as the canary lacks, in order, until it is full
    ({"canary": 1, "batch_size": 3}, "oooooooooo", [["n01"]], ["n01"]),
    ({"canary": "20%", "batch_size": 3}, "bbbooooooo", [["n01", "n02"], ["n03", "n04"], ["n05"]], ["n04", "n05"]),
    ({"canary": 2, "batch_size": 3}, "bubooooooo", [["n01", "n02"], ["n03"], ["n04"]], ["n02", "n04"]),
    # the canary is 20% of the 10 targets (2), not of the 5 nodes with work: known before they are all read
    ({"canary": "20%", "batch_size": 3}, "obobobobob", [["n01", "n02"], ["n03"]], ["n01", "n03"]),
])
def test_what_is_read_before_the_canary_starts(policy: dict, pattern: str, reads: list[list[str]],
                                               canary: list[str]) -> None:
    cat = catalog({"waves": policy})
    observed = states(pattern)
    order, read, batches = list(observed), {}, []  # type: ignore[var-annotated]
    while (head := first_plan(cat, order, read)) is None:
        batches.append(to_read(cat, order, read))
        read.update({n: observed[n] for n in batches[-1]})
    assert batches == reads and head.waves == [canary]


def test_the_plan_refuses_nothing_it_has_not_read() -> None:
    """A canary with fewer nodes than asked is only planned once every target is read (then it is the whole
    plan), never by guessing that the unread ones need work."""
    cat = catalog({"waves": {"canary": 3, "batch_size": 3}})
    observed = states("obbbbbbbbo")
    assert first_plan(cat, NODES, {n: observed[n] for n in NODES[:9]}) is None
    assert first_plan(cat, NODES, observed) == build_plan(cat, observed)


def test_plan_start_reads_only_the_canarys_nodes_and_leaves_the_rest_and_the_retired(tmp_path: Path) -> None:
    cat = catalog({"waves": {"canary": 2, "batch_size": 4}})
    bmcs = FakeBmcs(NODES, OLD)
    bmcs.versions["n02"] = dict(NEW)
    started = plan_start(list(targets(NODES).values()), cat, bmcs, retired=["n01"])
    assert started.plan.waves == [["n03", "n04"]] and started.plan.retired == ["n01"]
    assert started.plan.at_baseline == ["n02"]
    assert sorted(bmcs.observed) == ["n02", "n03", "n04"]
    assert [t.name for t in started.rest] == NODES[4:]


# -- the engine -------------------------------------------------------------------------------------
class Watched(FakeBmcs):
    """Records, as each node's update begins, which nodes of the rest had been read by then."""

    def __init__(self, *args: object, **kw: object) -> None:
        super().__init__(*args, **kw)  # type: ignore[arg-type]
        self.read_before_update: dict[str, set[str]] = {}

    def update(self, target: Target, flash: Sequence[Component], reset: bool, guard: Guard = unguarded) -> None:
        with self.lock:
            self.read_before_update[target.name] = set(self.observed)
        super().update(target, flash, reset, guard)


class AfterCanary(Rest):
    """Planned only a moment after the canary's wave is done: the engine must wait for the later waves, not end
    the campaign (its loop looks again every 10 ms)."""

    store: CampaignStore | None = None

    def waves(self, planned: int) -> list[list[str]]:
        assert self.store is not None
        pause = threading.Event()
        for _ in range(2000):
            if self.store.waves("test")[0].state is WaveState.DONE:
                pause.wait(0.05)
                break
            pause.wait(0.005)
        return super().waves(planned)


def start(cat: Catalog, store: CampaignStore, source: Path, bmcs: FakeBmcs, nodes: list[str] = NODES,
          rest: type[Rest] = AfterCanary, **kw: object) -> tuple[Engine, object]:
    started = plan_start(list(targets(nodes).values()), cat, bmcs)
    engine = Engine(cat, store, targets(nodes), bmcs, GateRunner(FakeHealth()), poll_s=0.01)
    later = rest(cat, started.rest, bmcs, **kw) if started.rest else None
    if isinstance(later, AfterCanary):
        later.store = store
    return engine, lambda: engine.start(source, started.plan.waves, later)


def test_a_campaign_started_on_its_canary_plans_the_rest_and_ends_as_the_whole_plan(
        store: CampaignStore, source: Path) -> None:
    cat = catalog({"waves": {"canary": 2, "max_unavailable": 3}, "halt": {"max_failures": 2}})
    bmcs = FakeBmcs(NODES, OLD)
    bmcs.versions["n05"] = dict(NEW)  # at baseline: reported, in no wave
    bmcs.faults["n08"] = "unreadable"  # could not be read: planned, and failed by its turn as on any start
    whole = build_plan(cat, {n: (bmcs.observe(t, cat.ordered()) if n != "n08" else "unreadable")
                             for n, t in targets(NODES).items()})
    bmcs.observed.clear()
    _, run = start(cat, store, source, bmcs)
    out = run()
    record = store.get("test")
    assert record.waves == whole.waves == [["n01", "n02"], ["n03", "n04", "n06"], ["n07", "n08", "n09"], ["n10"]]
    assert record.unplanned == [] and record.state is CampaignState.DONE
    assert (out.done, out.failed, out.pending) == (8, 1, 0)
    assert "unreachable" in store.node("test", "n08").error
    assert at_baseline(bmcs, cat) == [n for n in NODES if n != "n08"]
    assert set(bmcs.flashes.values()) == {1} and len(bmcs.flashes) == 16  # 8 nodes flashed, each once
    assert [w.state for w in store.waves("test")] == [WaveState.DONE] * 4


def test_the_canary_starts_before_the_rest_is_read_and_holds_only_nodes_read_before(
        store: CampaignStore, source: Path) -> None:
    """The rest is read while the canary runs: a canary node's update waits until the rest's reading has
    begun (a start that read everything first never gets there: the barrier breaks)."""
    cat = catalog({"waves": {"canary": 1, "batch_size": 9}})
    reading = threading.Event()

    class Slow(Rest):
        def waves(self, planned: int) -> list[list[str]]:
            reading.set()
            return super().waves(planned)

    class Canary(Watched):
        def update(self, target: Target, flash: Sequence[Component], reset: bool, guard: Guard = unguarded) -> None:
            if target.name == "n01":
                assert reading.wait(10)
            super().update(target, flash, reset, guard)

    bmcs = Canary(NODES, OLD)
    _, run = start(cat, store, source, bmcs, rest=Slow)
    assert run().ok
    assert bmcs.read_before_update["n01"] >= {"n01"}
    assert all(bmcs.observed[n] >= 2 for n in NODES)  # each read by the plan, then again by its own turn


def test_the_budget_counts_the_nodes_still_to_plan(store: CampaignStore, source: Path) -> None:
    """max_unavailable 50% of 10 targets lets the canary of 4 run at once; a budget counted over the canary
    alone (2 of 4) would hold two of them back and the barrier breaks."""
    cat = catalog({"waves": {"canary": 4, "max_unavailable": "50%"}})
    meet, met = threading.Barrier(4, timeout=10), threading.Event()

    class Together(FakeBmcs):
        def update(self, target: Target, flash: Sequence[Component], reset: bool, guard: Guard = unguarded) -> None:
            if target.name in ("n01", "n02", "n03", "n04"):
                meet.wait()
                met.set()
            super().update(target, flash, reset, guard)

    class Later(Rest):  # planned once the canary's four met: the budget is the one of the start, not the plan's end
        def waves(self, planned: int) -> list[list[str]]:
            met.wait(20)  # past the barrier's timeout: a canary held back breaks it first
            return super().waves(planned)

    bmcs = Together(NODES, OLD)
    _, run = start(cat, store, source, bmcs, rest=Later)
    assert run().ok and at_baseline(bmcs, cat) == NODES


def test_nodes_of_another_platform_in_the_rest_are_reported_and_never_touched(store: CampaignStore,
                                                                              source: Path) -> None:
    cat = catalog({"waves": {"canary": 1}}, BOUND)
    bmcs = FakeBmcs(list(FLEET), OLD)
    bmcs.identities = dict(FLEET)
    said: list[str] = []
    _, run = start(cat, store, source, bmcs, list(FLEET), report=lambda plan: said.extend(plan.not_applicable))
    assert run().ok
    assert said == ["hpe1", "lnv1"]
    assert store.get("test").waves == [["smc1"], ["smc2"]]
    assert {n for n, _ in bmcs.sessions} == {"smc1", "smc2"}


class Killed(BaseException):
    """The controller killed as it was about to add the later waves."""


def test_a_controller_stopped_before_the_later_waves_leaves_them_to_resume(store: CampaignStore,
                                                                           source: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 4}})
    bmcs = FakeBmcs(NODES, OLD)

    class Dies(Rest):
        def waves(self, planned: int) -> list[list[str]]:
            super().waves(planned)
            raise Killed

    _, run = start(cat, store, source, bmcs, rest=Dies)
    with pytest.raises(Killed):
        run()
    record = store.get("test")
    assert record.waves == [["n01"]] and record.unplanned == NODES[1:]  # journal: the canary, the rest unplanned
    assert {n.node for n in store.nodes("test")} == {"n01"}
    engine = Engine(cat, store, targets(NODES), bmcs, GateRunner(FakeHealth()), poll_s=0.01)
    with pytest.raises(InputError, match="9 target\\(s\\) not planned yet"):  # never ends as done without them
        engine.resume()
    store.set_state("test", CampaignState.PAUSED, "killed")
    out = engine.resume(rest=Rest(cat, [targets(NODES)[n] for n in record.unplanned], bmcs))
    assert out.ok and (out.done, out.pending) == (10, 0)
    assert store.get("test").waves == build_plan(cat, {n: FirmwareState(versions=dict(OLD)) for n in NODES}).waves
    assert set(bmcs.flashes.values()) == {1} and len(bmcs.flashes) == 20  # the canary not flashed again


def test_later_waves_are_added_once_and_only_of_unplanned_nodes(store: CampaignStore, source: Path) -> None:
    store.create("test", str(source), "0" * 64, [["n01"]], unplanned=["n02", "n03", "n04"])
    with pytest.raises(ValueError, match="n01"):  # already planned
        store.add_waves("test", [["n01", "n02"]])
    with pytest.raises(ValueError, match="n02"):  # twice
        store.add_waves("test", [["n02"], ["n02", "n03"]])
    assert store.get("test").unplanned == ["n02", "n03", "n04"]  # refused: nothing written
    assert store.add_waves("test", [["n02", "n03"]])  # n04 at baseline: in no wave
    assert not store.add_waves("test", [["n04"]])  # a second planner (a resume) adds nothing
    record = store.get("test")
    assert record.waves == [["n01"], ["n02", "n03"]] and record.unplanned == []
    assert [(n.node, n.wave, n.state) for n in store.nodes("test")] == [
        ("n01", 0, NodeState.PENDING), ("n02", 1, NodeState.PENDING), ("n03", 1, NodeState.PENDING)]
    assert [w.wave for w in store.waves("test")] == [0, 1]


def test_the_next_wave_planned_while_the_canary_runs_is_prepared_for_no_turn_to_come(store: CampaignStore,
                                                                                   source: Path) -> None:
    """The canary's one turn waits until the later waves are in the journal: their look-ahead must not wait for a
    turn of the canary still to begin (there is none)."""
    cat = catalog({"waves": {"canary": 1, "batch_size": 9}})

    class Waits(FakeBmcs):
        def update(self, target: Target, flash: Sequence[Component], reset: bool, guard: Guard = unguarded) -> None:
            for _ in range(2000):
                if not store.get("test").unplanned or threading.Event().wait(0.005):
                    break
            threading.Event().wait(0.05)  # the engine's loop looks again every 10 ms
            super().update(target, flash, reset, guard)

    class AfterTurn(Rest):  # planned once the canary's turn has begun
        def waves(self, planned: int) -> list[list[str]]:
            for _ in range(2000):
                if store.node("test", "n01").state is not NodeState.PENDING or threading.Event().wait(0.005):
                    break
            return super().waves(planned)

    bmcs = Waits(NODES, OLD)
    _, run = start(cat, store, source, bmcs, rest=AfterTurn)
    assert run().ok
    assert bmcs.prepared == NODES[1:] and bmcs.prepared_after == [None]


def test_the_rest_is_read_once_the_canarys_updates_are_sent(store: CampaignStore, source: Path) -> None:
    """Read at the canary's start, the rest's reads would queue ahead of the canary turns' own reads and update
    requests: the canary's turn, reading its BMC, must not see the rest's reading begin."""
    cat = catalog({"waves": {"canary": 1, "batch_size": 9}})
    reading, early = threading.Event(), []

    class Marks(Rest):
        def waves(self, planned: int) -> list[list[str]]:
            reading.set()
            return super().waves(planned)

    class Turn(FakeBmcs):
        def observe(self, target: Target, components: Sequence[Component]) -> FirmwareState:
            if target.name == "n01" and self.observed["n01"] == 1:  # the turn's first read (the plan made one)
                early.append(reading.wait(0.2))
            return super().observe(target, components)

    bmcs = Turn(NODES, OLD)
    _, run = start(cat, store, source, bmcs, rest=Marks)
    assert run().ok and early == [False] and reading.is_set()
