"""The bring-up engine: stage order, --from/--only, plan-only, failures isolated per node, journal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from provision.bringup.engine import run_bringup, select_stages
from provision.bringup.model import Action, Outcome, StagePlan
from provision.bringup.stage import StageContext
from provision.errors import InputError, RedfishError
from provision.journal import Journal
from provision.spec import HostEntry, load_fleet
from tests.conftest import EXAMPLE_INVENTORY


@dataclass
class FakeStage:
    """A stage over a dict 'world': wants world[node][name] == target."""

    name: str
    world: dict[str, dict[str, str]]
    target: str = "good"
    fail_on: set[str] = field(default_factory=set)
    applied: list[str] = field(default_factory=list)

    def observe(self, ctx: StageContext) -> Any:
        return self.world[ctx.host.name].get(self.name, "bad")

    def plan(self, host: HostEntry, observed: Any) -> StagePlan:
        actions = () if observed == self.target else (Action(kind="set", target=self.name, before=observed, after=self.target),)
        return StagePlan(stage=self.name, node=host.name, actions=actions)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        if ctx.host.name in self.fail_on:
            raise RedfishError(f"{ctx.host.name}: BMC said no")
        for action in plan.actions:
            ctx.side_effect(self.name, action, lambda: self.world[ctx.host.name].__setitem__(self.name, self.target))
            self.applied.append(ctx.host.name)


@pytest.fixture
def hosts() -> list:  # type: ignore[type-arg]
    return load_fleet(EXAMPLE_INVENTORY / "hosts.yml").select(["node01", "node02", "node03"])


def _stages(world: dict[str, dict[str, str]], fail_on: set[str] | None = None) -> list[FakeStage]:
    return [FakeStage("firmware", world), FakeStage("bios", world, fail_on=fail_on or set()), FakeStage("verify", world)]


def test_converges_then_plans_nothing(hosts, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    world: dict[str, dict[str, str]] = {h.name: {} for h in hosts}
    journal = Journal(tmp_path / "j.db")
    first = run_bringup(hosts, _stages(world), journal=journal, concurrency=2)
    assert first.ok and all(n.changed for n in first.nodes)
    second = run_bringup(hosts, _stages(world), journal=journal, concurrency=2)
    assert second.ok
    assert {s.outcome for n in second.nodes for s in n.stages} == {Outcome.CONVERGED}
    assert len(journal.actions("node01")) == 3  # one per stage, only in the first run


def test_plan_only_changes_nothing(hosts, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    world: dict[str, dict[str, str]] = {h.name: {} for h in hosts}
    result = run_bringup(hosts, _stages(world), journal=Journal(tmp_path / "j.db"), plan_only=True)
    assert world == {h.name: {} for h in hosts}
    assert {s.outcome for n in result.nodes for s in n.stages} == {Outcome.PLANNED}
    assert result.run_id is None


def test_one_failing_node_does_not_stop_the_others(hosts, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    world: dict[str, dict[str, str]] = {h.name: {} for h in hosts}
    journal = Journal(tmp_path / "j.db")
    result = run_bringup(hosts, _stages(world, fail_on={"node02"}), journal=journal)
    assert not result.ok
    by_node = {n.node: n for n in result.nodes}
    assert by_node["node02"].failed_stage == "bios"
    assert [s.stage for s in by_node["node02"].stages] == ["firmware", "bios"]  # verify never ran
    assert by_node["node01"].ok and by_node["node03"].ok
    assert "BMC said no" in by_node["node02"].stages[-1].error
    last = journal.last_stage("node02")
    assert last is not None and (last.stage, last.outcome) == ("bios", "failed")


@pytest.mark.parametrize(
    "start,only,end,expected",
    [
        (None, None, None, ["firmware", "bios", "verify"]),
        ("bios", None, None, ["bios", "verify"]),
        (None, "verify", None, ["verify"]),
        ("verify", None, None, ["verify"]),
        (None, None, "bios", ["firmware", "bios"]),
        ("bios", None, "bios", ["bios"]),
        (None, None, "firmware", ["firmware"]),
    ],
)
def test_select_stages(start: str | None, only: str | None, end: str | None, expected: list[str]) -> None:
    assert [s.name for s in select_stages(_stages({}), start, only, end)] == expected


def test_to_before_from_is_input_error() -> None:
    with pytest.raises(InputError, match="--to firmware comes before --from bios"):
        select_stages(_stages({}), "bios", None, "firmware")


def test_unknown_stage_is_input_error() -> None:
    with pytest.raises(InputError, match="unknown stage 'bois'"):
        select_stages(_stages({}), "bois")


@dataclass
class SessionStage:
    """A stage that uses the node's kept session in observe and apply, like the BMC stages."""

    name: str
    opened: list[str]
    closed: list[str]

    def _session(self, ctx: StageContext) -> Any:
        node = ctx.host.name

        @contextmanager
        def opener() -> Iterator[str]:
            self.opened.append(node)
            try:
                yield f"session-{node}"
            finally:
                self.closed.append(node)

        return ctx.keep("bmc", opener)

    def observe(self, ctx: StageContext) -> Any:
        assert self._session(ctx) == f"session-{ctx.host.name}"
        return "bad"

    def plan(self, host: HostEntry, observed: Any) -> StagePlan:
        return StagePlan(stage=self.name, node=host.name,
                         actions=(Action(kind="set", target=self.name, before=observed, after="good"),))

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        self._session(ctx)
        if self.name == "bios" and ctx.host.name == "node02":
            raise RedfishError("node02: BMC said no")


def test_one_session_per_node_per_run_closed_even_on_failure(hosts) -> None:  # type: ignore[no-untyped-def]
    opened: list[str] = []
    closed: list[str] = []
    stages = [SessionStage(n, opened, closed) for n in ("preflight", "firmware", "bios")]
    result = run_bringup(hosts, stages, journal=None, concurrency=3)
    assert not result.ok
    assert sorted(opened) == ["node01", "node02", "node03"]
    assert sorted(closed) == sorted(opened)


@dataclass
class BookkeepingStage:
    """Converged, with one journal-only action (changes_node=False) to carry out."""

    name: str = "configure"
    applied: list[str] = field(default_factory=list)

    def observe(self, ctx: StageContext) -> Any:
        return None

    def plan(self, host: HostEntry, observed: Any) -> StagePlan:
        return StagePlan(stage=self.name, node=host.name,
                         actions=(Action(kind="record", target="site.yml", changes_node=False),))

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        self.applied.append(ctx.host.name)


@pytest.mark.parametrize("plan_only", [False, True])
def test_a_bookkeeping_only_plan_is_converged_and_applied_outside_plan(hosts, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                                       plan_only: bool) -> None:
    stage = BookkeepingStage()
    with Journal(tmp_path / "j.db") as journal:
        result = run_bringup(hosts[:1], [stage], journal=journal, plan_only=plan_only)
    assert [s.outcome for s in result.nodes[0].stages] == [Outcome.CONVERGED]
    assert not result.nodes[0].changed
    assert stage.applied == ([] if plan_only else [hosts[0].name])
