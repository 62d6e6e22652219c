"""Per-node leases in the journal: a second holder is refused naming the first; an expired lease (or
one whose holder died on this host) is taken over; a lease is released however its block ends; a
second bring-up on a node another run holds is refused before it does anything."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from provision.bringup.engine import run_bringup
from provision.bringup.model import Action, StagePlan
from provision.bringup.stage import StageContext
from provision.cli import main
from provision.journal import Journal
from provision.journal.locks import NodeLocked, NodeLocks
from provision.spec import HostEntry, load_fleet
from tests.conftest import EXAMPLE_INVENTORY, ROOT
from tests.unit.fakeclock import FakeClock


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "journal.db"


@pytest.fixture
def two(path: Path) -> Iterator[tuple[Journal, Journal]]:
    with Journal(path) as a, Journal(path) as b:  # two connections, as two processes have
        yield a, b


def test_a_second_holder_is_refused_naming_the_first(two: tuple[Journal, Journal]) -> None:
    a, b = two
    with NodeLocks(a).hold(["node01", "node02"], owner="bringup"):
        with pytest.raises(NodeLocked, match=rf"node02: locked by bringup \(pid {os.getpid()} on .+, since 20"):
            NodeLocks(b).take(["node03", "node02"], owner="campaign c1")
        assert NodeLocks(b).take(["node03"], owner="campaign c1")  # all or none: node03 was not taken before
        assert {lease.node for lease in NodeLocks(b).held()} == {"node01", "node02", "node03"}
    assert [lease.node for lease in NodeLocks(b).held()] == ["node03"]


def test_an_expired_lease_is_taken_over_and_its_holder_learns_it(two: tuple[Journal, Journal], clock: FakeClock) -> None:
    a, b = two
    first, second = NodeLocks(a, ttl_s=30, clock=clock), NodeLocks(b, ttl_s=30, clock=clock)
    first.take(["node01"], owner="bringup")
    clock.now += 20
    assert first.renew() == []  # renewed: expires 30 s from now, not from when it was taken
    clock.now += 20
    with pytest.raises(NodeLocked):
        second.take(["node01"], owner="bringup")
    clock.now += 11
    (lease,) = second.take(["node01"], owner="campaign c1")  # expired: taken over
    assert first.renew() == ["node01"]
    with pytest.raises(NodeLocked, match="lease was taken over"):
        first.check("node01")
    assert [(x.owner, x.pid) for x in second.held()] == [("campaign c1", os.getpid())] and lease.token


def test_released_when_the_block_raises(two: tuple[Journal, Journal]) -> None:
    a, b = two
    with pytest.raises(RuntimeError), NodeLocks(a).hold(["node01"], owner="bringup"):
        raise RuntimeError("a bug mid-run")
    assert NodeLocks(b).held() == []
    assert NodeLocks(b).take(["node01"], owner="bringup")


HOLDER = """
import sys, time
from provision.journal import Journal
from provision.journal.locks import NodeLocks
locks = NodeLocks(Journal(sys.argv[1]), ttl_s=3600)
locks.take(["node01"], owner="bringup")
print("held", flush=True)
time.sleep(600)
"""


def test_another_process_holds_then_dies_and_the_lease_is_taken_over_at_once(path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        with Journal(path) as jr:
            with pytest.raises(NodeLocked, match=rf"locked by bringup \(pid {proc.pid} "):
                NodeLocks(jr).take(["node01"], owner="bringup")
            proc.send_signal(signal.SIGKILL)  # nothing released it, and its lease has an hour to run
            proc.wait(timeout=30)
            assert NodeLocks(jr).take(["node01"], owner="bringup")  # its holder is gone from this host
    finally:
        proc.kill()
        proc.wait(timeout=30)


class BlockingStage:
    """Changes the node only after `go` is set, so a second run can try the node meanwhile."""

    name = "firmware"

    def __init__(self) -> None:
        self.inside, self.go = threading.Event(), threading.Event()
        self.applied: list[str] = []

    def observe(self, ctx: StageContext) -> Any:
        return "old"

    def plan(self, host: HostEntry, observed: Any) -> StagePlan:
        return StagePlan(stage=self.name, node=host.name, actions=(Action(kind="flash", target="bmc 2"),))

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        self.inside.set()
        assert self.go.wait(30)
        ctx.side_effect(self.name, plan.actions[0], lambda: self.applied.append(ctx.host.name))


def test_a_second_bringup_on_a_held_node_is_refused_before_doing_anything(path: Path) -> None:
    hosts = load_fleet(EXAMPLE_INVENTORY / "hosts.yml").select(["node01"])
    stage, other = BlockingStage(), BlockingStage()
    other.go.set()
    results: list[Any] = []
    with Journal(path) as a, Journal(path) as b:
        first = threading.Thread(target=lambda: results.append(run_bringup(hosts, [stage], journal=a)))
        first.start()
        assert stage.inside.wait(30)
        try:
            with pytest.raises(NodeLocked, match="node01: locked by bringup"):
                run_bringup(hosts, [other], journal=b)
            assert run_bringup(hosts, [other], journal=b, plan_only=True).ok  # a plan changes nothing: no lock
        finally:
            stage.go.set()
            first.join(30)
        assert results[0].ok and stage.applied == ["node01"] and other.applied == []
        assert len(b.runs("bringup")) == 1  # the refused run left no trace
        assert NodeLocks(b).held() == []  # released at the end of the first
        assert run_bringup(hosts, [other], journal=b).ok  # and the node is free again


def test_status_shows_held_locks(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Journal(path) as jr, NodeLocks(jr).hold(["node07"], owner="campaign c1"):
        assert main(["status", "--journal", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"node": "node07"' in out and f"campaign c1 (pid {os.getpid()} on " in out and "token" not in out
