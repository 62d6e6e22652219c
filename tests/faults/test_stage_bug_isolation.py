"""A bug of ours inside one node's stage (an exception that is not a ProvisionError) fails that node's stage
with a one-line "internal error", lets the other nodes finish, and leaves no journal row open. Found by the
fault matrix: an AttributeError in the verify stage used to abort the whole bring-up with its stage row open."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from provision.bringup.engine import run_bringup
from provision.bringup.model import Action, Outcome, StagePlan
from provision.bringup.stage import StageContext
from provision.journal import Journal
from provision.spec import HostEntry, load_fleet
from tests.conftest import EXAMPLE_INVENTORY


class BuggyStage:
    name = "verify"

    def __init__(self, buggy: str) -> None:
        self.buggy = buggy

    def observe(self, ctx: StageContext) -> Any:
        if ctx.host.name == self.buggy:
            return object().updated_by  # type: ignore[attr-defined]  # the kind of bug the lab run hit
        return "ok"

    def plan(self, host: HostEntry, observed: Any) -> StagePlan:
        return StagePlan(stage=self.name, node=host.name, actions=(Action(kind="check", target="all"),))

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        ctx.side_effect(self.name, plan.actions[0], lambda: None)


def test_a_bug_in_one_node_fails_only_that_node_and_the_journal_stays_whole(tmp_path: Path) -> None:
    hosts = load_fleet(EXAMPLE_INVENTORY / "hosts.yml").select(["node01", "node02", "node03"])
    with Journal(tmp_path / "j.db") as jr:
        result = run_bringup(hosts, [BuggyStage("node02")], journal=jr, concurrency=3)
        by_node = {n.node: n for n in result.nodes}
        assert not result.ok
        assert by_node["node01"].ok and by_node["node03"].ok
        failed = by_node["node02"].stages[0]
        assert failed.outcome is Outcome.FAILED
        assert failed.error.startswith("internal error: AttributeError") and "\n" not in failed.error
        for node in ("node01", "node02", "node03"):
            assert all(s.ended_at is not None and s.outcome for s in jr.stages(node)), node
            assert not jr.open_actions(node), node
        run = jr.runs("bringup")[0]
        assert run.outcome == "failed" and run.ended_at is not None
