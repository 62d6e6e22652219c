"""A bring-up shared by several controllers: which node a worker takes next (a pure table), how the journal's
stage rows fold into that view, and controllers splitting nodes through one journal (both engines), a dead
one's node resumed at its first stage not completed."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

import pytest

from provision.bringup.model import Outcome
from provision.bringup.shared import Decision, NodeShare, SharedBringup, ShareTimedOut, Verdict, decide, fold, target
from provision.journal import Journal
from provision.journal.locks import Lease, NodeLocks, swap
from provision.spec import load_fleet
from tests.conftest import EXAMPLE_INVENTORY
from tests.unit.fakeclock import FakeClock
from tests.unit.test_bringup_engine import FakeStage

STAGES = ("preflight", "firmware", "bios", "reset")
ALL = frozenset(STAGES)


def _v(node: str, completed: tuple[str, ...] = (), failed: str | None = None, held: bool = False) -> NodeShare:
    return NodeShare(node=node, completed=frozenset(completed), failed=failed, held=held)


@pytest.mark.parametrize(("views", "expected"), [
    ([], Decision(verdict=Verdict.FINISHED)),
    ([_v("n1"), _v("n2")], Decision(verdict=Verdict.TAKE, node="n1", stages=STAGES)),
    ([_v("n1", held=True), _v("n2")], Decision(verdict=Verdict.TAKE, node="n2", stages=STAGES)),
    # a node a dead controller left part way goes first, from its first stage not completed
    ([_v("n1"), _v("n2", ("preflight", "firmware"))],
     Decision(verdict=Verdict.TAKE, node="n2", stages=("bios", "reset"))),
    # a gap: bios completed but firmware not (an earlier run --only bios): from firmware on
    ([_v("n1", ("preflight", "bios"))],
     Decision(verdict=Verdict.TAKE, node="n1", stages=("firmware", "bios", "reset"))),
    ([_v("n1", tuple(STAGES)), _v("n2", failed="bios")], Decision(verdict=Verdict.FINISHED)),
    ([_v("n1", tuple(STAGES)), _v("n2", held=True)], Decision(verdict=Verdict.WAIT)),
    ([_v("n1", held=True), _v("n2", ("preflight",), held=True)], Decision(verdict=Verdict.WAIT)),
    ([_v("n1", failed="firmware"), _v("n2", ("preflight",), failed="firmware")], Decision(verdict=Verdict.FINISHED)),
    ([_v("b"), _v("a", tuple(STAGES)), _v("c")], Decision(verdict=Verdict.TAKE, node="b", stages=STAGES)),
])
def test_decide(views: list[NodeShare], expected: Decision) -> None:
    assert decide(views, STAGES) == expected


def _rows(*rows: tuple[str, str, str | None]) -> list[tuple[int, str, str, str | None]]:
    return [(i, *row) for i, row in enumerate(rows, 1)]


@pytest.mark.parametrize(("rows", "held", "forgive", "expected"), [
    ([], set(), None, [_v("n1"), _v("n2")]),
    (_rows(("n1", "preflight", "converged"), ("n1", "firmware", "applied"), ("n1", "bios", None)), {"n1"}, None,
     [_v("n1", ("preflight", "firmware"), held=True), _v("n2")]),
    (_rows(("n1", "preflight", "converged"), ("n1", "firmware", "failed")), set(), None,
     [_v("n1", ("preflight",), failed="firmware"), _v("n2")]),
    # --retry-failed: a failure journaled before this controller started (row 2 <= 2) is tried again...
    (_rows(("n1", "preflight", "converged"), ("n1", "firmware", "failed")), set(), 2,
     [_v("n1", ("preflight",)), _v("n2")]),
    # ... one after it (this run's own) is not
    (_rows(("n1", "preflight", "converged"), ("n1", "firmware", "failed")), set(), 1,
     [_v("n1", ("preflight",), failed="firmware"), _v("n2")]),
    # failed, then taken again and completed: done wins; an open row says nothing
    (_rows(("n2", "bios", "failed"), *[("n2", s, "applied") for s in STAGES], ("n2", "reset", None)), set(), None,
     [_v("n1"), _v("n2", tuple(STAGES))]),
    # a fenced-off controller journals its failure after the new holder completed the node
    (_rows(*[("n1", s, "applied") for s in STAGES], ("n1", "bios", "failed")), set(), None,
     [_v("n1", tuple(STAGES)), _v("n2")]),
    (_rows(("other", "preflight", "applied")), set(), None, [_v("n1"), _v("n2")]),  # not in this selection
])
def test_fold(rows: list[tuple[int, str, str, str | None]], held: set[str], forgive: int | None,
              expected: list[NodeShare]) -> None:
    assert fold(rows, ["n1", "n2"], held, STAGES, forgive) == expected


def _hosts() -> list:  # type: ignore[type-arg]
    return load_fleet(EXAMPLE_INVENTORY / "hosts.yml").select(["node01", "node02", "node03", "node04"])


def _fakes(world: dict[str, dict[str, str]], calls: list[tuple[str, str]], lock: threading.Lock) -> list[FakeStage]:
    class Counting(FakeStage):
        def observe(self, ctx):  # type: ignore[no-untyped-def]
            with lock:
                calls.append((ctx.host.name, self.name))
            return super().observe(ctx)

    return [Counting(name, world) for name in STAGES]


def test_two_controllers_split_the_nodes_each_once(backend: str | None) -> None:
    hosts = _hosts()
    world: dict[str, dict[str, str]] = {h.name: {} for h in hosts}
    calls: list[tuple[str, str]] = []
    lock = threading.Lock()
    results = {}

    def controller(i: int) -> None:
        with Journal(backend) as jr:
            results[i] = SharedBringup(hosts, _fakes(world, calls, lock), jr, "s1", concurrency=2, poll_s=0.05).run()

    threads = [threading.Thread(target=controller, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    names = [h.name for h in hosts]
    assert sorted(calls) == sorted((n, s) for n in names for s in STAGES)  # every stage of every node once
    assert all(world[n] == {s: "good" for s in STAGES} for n in names)
    mine = [set(results[i][1].mine) for i in range(2)]
    assert not (mine[0] & mine[1]) and mine[0] | mine[1] == set(names)
    for _, summary in results.values():
        assert summary.ok and sorted(summary.done) == names and summary.failed == {}
    with Journal(backend) as jr:
        assert NodeLocks(jr).held() == []  # every lease given back
        again = SharedBringup(hosts, _fakes(world, calls, lock), jr, "s1", poll_s=0.05).run()
    assert again[1].ok and again[1].mine == [] and len(calls) == len(names) * len(STAGES)  # done: nothing taken


def test_a_dead_controllers_node_resumes_at_its_first_stage_not_completed(backend: str | None) -> None:
    hosts = _hosts()[:2]
    world: dict[str, dict[str, str]] = {h.name: {} for h in hosts}
    calls: list[tuple[str, str]] = []
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that ran on this host and is gone: its lease is stale at once
    with Journal(backend) as jr:
        run = jr.start_run("bringup", target("s2"), {"stages": list(STAGES)})
        for stage, outcome in (("preflight", "converged"), ("firmware", "applied")):
            jr.stage_finished(jr.stage_started(run, "node01", stage), outcome)
        jr.stage_started(run, "node01", "bios")  # killed in it
        world["node01"] = {"preflight": "good", "firmware": "good"}
        with jr.transaction() as db:
            assert swap(db, Lease(node="node01", owner="bringup share s2", token="t", pid=dead.pid,
                                  host=os.uname().nodename, since=0, expires_at=9e12), None)
        result, summary = SharedBringup(hosts, _fakes(world, calls, threading.Lock()), jr, "s2", poll_s=0.05).run()
    assert summary.ok and sorted(summary.done) == ["node01", "node02"]
    assert [s for n, s in calls if n == "node01"] == ["bios", "reset"]
    first = next(n for n in result.nodes if n.node == "node01")
    assert [(s.stage, s.outcome) for s in first.stages] == [
        ("preflight", Outcome.SKIPPED), ("firmware", Outcome.SKIPPED), ("bios", Outcome.APPLIED),
        ("reset", Outcome.APPLIED)]


def test_a_failed_node_is_not_taken_again(tmp_path: Path) -> None:
    hosts = _hosts()[:2]
    world: dict[str, dict[str, str]] = {h.name: {} for h in hosts}
    stages = [FakeStage(name, world, fail_on={"node02"} if name == "bios" else set()) for name in STAGES]
    with Journal(tmp_path / "j.db") as jr:
        result, summary = SharedBringup(hosts, stages, jr, "s3", poll_s=0.05).run()
        assert summary.failed == {"node02": "bios"} and not summary.ok and not result.ok
        _, again = SharedBringup(hosts, stages, jr, "s3", poll_s=0.05).run()
        assert again.failed == {"node02": "bios"} and again.mine == []
        assert stages[2].applied == ["node01"]
        stages[2].fail_on.clear()  # the BIOS fixed: --retry-failed takes node02 again, from bios
        result, retried = SharedBringup(hosts, stages, jr, "s3", poll_s=0.05, retry_failed=True).run()
    assert retried.ok and retried.mine == ["node02"] and stages[2].applied == ["node01", "node02"]
    assert [(s.stage, s.outcome) for s in result.nodes[0].stages] == [
        ("preflight", Outcome.SKIPPED), ("firmware", Outcome.SKIPPED), ("bios", Outcome.APPLIED),
        ("reset", Outcome.APPLIED)]


def test_retry_failed_tries_a_node_once_per_controller(tmp_path: Path) -> None:
    """A node that fails again under --retry-failed is not retried in a loop: its new failure is this run's."""
    hosts = _hosts()[:1]
    world: dict[str, dict[str, str]] = {h.name: {} for h in hosts}
    stages = [FakeStage(name, world, fail_on={"node01"} if name == "firmware" else set()) for name in STAGES]
    with Journal(tmp_path / "j.db") as jr:
        SharedBringup(hosts, stages, jr, "s4", poll_s=0.05).run()
        _, again = SharedBringup(hosts, stages, jr, "s4", poll_s=0.05, retry_failed=True).run()
        assert again.failed == {"node01": "firmware"} and again.mine == ["node01"]
        assert len([s for s in jr.stages("node01") if s.stage == "firmware"]) == 2


# -- --wait-seconds: a deadline on waiting for nodes another live controller holds ---------------------------
def test_past_the_deadline_the_nodes_another_holds_are_named_with_their_holder(backend: str | None,
                                                                              clock: FakeClock) -> None:
    """node02 is held by another live controller (a lease of this live process, 60 s TTL): this controller
    brings up node01, waits on node02 for 5 s of its clock, then ends with one line naming node02 and its holder."""
    hosts = _hosts()[:2]
    world: dict[str, dict[str, str]] = {h.name: {} for h in hosts}
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        clock.now += s

    with Journal(backend) as jr:
        other = NodeLocks(jr)
        other.take(["node02"], owner="bringup share s4 (the other controller)")
        share = SharedBringup(hosts, _fakes(world, [], threading.Lock()), jr, "s4", poll_s=1.0, sleep=sleep,
                              wait_s=5.0, clock=clock)
        with pytest.raises(ShareTimedOut) as caught:
            share.run()
        message = str(caught.value)
        assert len(message.splitlines()) == 1 and caught.value.exit_code == 4
        assert message.startswith("share s4: --wait-seconds 5 passed with 1 node(s) held by another controller: "
                                  "node02 by bringup share s4 (the other controller) (pid ")
        assert world["node01"] == {s: "good" for s in STAGES} and world["node02"] == {}
        assert sum(slept) == 5.0  # polled until the deadline, then gave up
        runs = jr.query("SELECT outcome FROM runs WHERE id = ?", (share.run_id,))
        assert runs[0]["outcome"] == "timed out"


def test_no_deadline_and_nothing_held_is_a_normal_run(tmp_path: Path, clock: FakeClock) -> None:
    hosts = _hosts()[:2]
    world: dict[str, dict[str, str]] = {h.name: {} for h in hosts}
    with Journal(tmp_path / "j.db") as jr:
        _, summary = SharedBringup(hosts, _fakes(world, [], threading.Lock()), jr, "s6", wait_s=0.0,
                                   clock=clock).run()
    assert summary.ok and summary.mine == ["node01", "node02"]


@pytest.mark.postgres
def test_the_cli_exits_4_with_one_line_at_the_deadline(pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from provision.cli import main

    world: dict[str, dict[str, str]] = {"node01": {}, "node02": {}}
    monkeypatch.setattr("provision.cli.bringup.default_stages", lambda opts: _fakes(world, [], threading.Lock()))
    with Journal() as jr:
        NodeLocks(jr).take(["node02"], owner="bringup share s5")
        rc = main(["bringup", "node01", "node02", "-i", str(EXAMPLE_INVENTORY / "hosts.yml"), "--share", "s5",
                   "--wait-seconds", "0.3", "--poll-seconds", "0.05", "--log-dir", str(tmp_path / "logs")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 4 and world["node01"] and not world["node02"]
    assert err[-1].startswith("error: share s5: --wait-seconds 0.3 passed with 1 node(s) held by another "
                              "controller: node02 by bringup share s5 (pid "), err
