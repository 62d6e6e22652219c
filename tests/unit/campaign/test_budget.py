"""max_unavailable is one budget (WavePolicy.budget): the size of each later wave and the cap on the nodes a claim
may leave unavailable (in flight, stranded, or failed since the latest start/resume); and the one-controller
campaign on SQLite takes and gives back the same claims, node leases and leader lease as several controllers."""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.campaign.engine import Engine, waves_for
from provision.campaign.gates import GateRunner
from provision.campaign.policy import WavePolicy
from provision.campaign.updater import Component, Target, unguarded
from provision.campaign.waves import batch_size, plan_waves
from provision.journal import Journal
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, WaveState
from provision.journal.claims import Claims
from provision.journal.locks import NodeLocks
from tests.unit.campaign.fakes import FakeBmcs, FakeHealth, at_baseline, catalog, targets

OLD = {"bmc": "1.0", "bios": "2.0"}


@pytest.mark.parametrize(("max_unavailable", "total", "budget"), [
    (None, 100, None),  # no cap: the waves' own sizes bound what is in flight
    (3, 100, 3),
    (3, 2, 3),  # a count is a count, whatever the fleet
    ("25%", 100, 25),
    ("25%", 10, 2),  # a percentage rounds down ...
    ("5%", 10, 1),  # ... to at least one node
    ("100%", 7, 7),
    ("33.3%", 1000, 333),
])
def test_the_budget_is_max_unavailable_of_the_fleet(max_unavailable: int | str | None, total: int,
                                                   budget: int | None) -> None:
    policy = WavePolicy(canary=1, max_unavailable=max_unavailable)
    assert policy.budget(total) == budget
    if budget is not None:  # wave sizing reads the same budget
        assert batch_size(policy, total) == budget
        waves = plan_waves([f"n{i}" for i in range(total)], policy)
        assert max(len(w) for w in waves[1:] or [[]]) <= budget


def test_batch_size_sets_the_wave_size_and_no_budget() -> None:
    policy = WavePolicy(canary=1, batch_size=4)
    assert policy.budget(100) is None and batch_size(policy, 100) == 4


NODES = [f"n{i:02d}" for i in range(1, 11)]


@pytest.fixture
def store(tmp_path: Path) -> CampaignStore:
    journal = Journal(tmp_path / "j.db")
    store = CampaignStore(journal)
    store.create("test", str(tmp_path / "c.yml"), "x", [NODES])  # one wave of ten
    store.wave_state("test", 0, WaveState.ACTIVE)
    yield store
    journal.close()


def _mark(store: CampaignStore, active: int, failed: int, failed_before_resume: int) -> None:
    """The first nodes failed before a resume, the next ones failed since, the next ones in flight."""
    nodes = iter(NODES)
    for _ in range(failed_before_resume):
        node = next(nodes)
        store.node_started("test", node, {})
        store.node_finished("test", node, NodeState.FAILED, {}, "update failed")
    store.claim("test", 1)  # a resume: the count starts again here
    for _ in range(failed):
        node = next(nodes)
        store.node_started("test", node, {})
        store.node_finished("test", node, NodeState.FAILED, {}, "update failed")
    for _ in range(active):  # in flight under another controller's live lease
        node = next(nodes)
        store.node_started("test", node, {})
        NodeLocks(store.journal).take([node], owner="campaign test controller elsewhere:1/abcdef")


@pytest.mark.parametrize(("budget", "active", "failed", "failed_before_resume", "claimed", "halts"), [
    (None, 0, 0, 0, 10, False),  # no cap: every node of the wave
    (4, 0, 0, 0, 4, False),
    (4, 3, 0, 0, 1, False),  # in flight count
    (4, 1, 2, 0, 1, False),  # ... and so do nodes failed since the resume
    (4, 0, 0, 3, 4, False),  # failed before the resume: the operator resumed past them
    (4, 4, 0, 0, 0, False),  # spent by turns in flight: they end, then more are taken
    (4, 1, 3, 0, 0, False),
    (3, 0, 3, 0, 0, True),  # failed nodes alone spend it: nothing could ever be taken again
    (3, 0, 2, 4, 1, False),
])
def test_a_claim_leaves_at_most_the_budget_unavailable(store: CampaignStore, budget: int | None, active: int,
                                                       failed: int, failed_before_resume: int, claimed: int,
                                                       halts: bool) -> None:
    _mark(store, active, failed, failed_before_resume)
    claims = Claims(store.journal, "test", ttl_s=60)
    leases = claims.claim(0, NODES, 100, budget)
    assert len(leases) == claimed
    assert all(lease.owner == claims.owner for lease in leases)
    record = store.get("test")
    assert (record.state is CampaignState.HALTED) is halts
    if halts:
        assert record.reason == f"{failed} failed node(s) stay unavailable: max_unavailable {budget} is spent " \
                                f"with {10 - failed} node(s) pending"
    if budget is not None:
        unavailable = sum(1 for n in store.nodes("test") if n.state is NodeState.ACTIVE) + failed
        assert unavailable <= budget


def test_the_engine_never_has_more_than_the_budget_unavailable(tmp_path: Path) -> None:
    """One wave of 10 nodes (given as such: the claims alone cap it) under max_unavailable 3, ten workers; the
    failed canary keeps one unit of the budget for the rest of the run."""
    cat = catalog({"waves": {"canary": 0, "max_unavailable": 3}, "halt": {"max_failures": 1}, "concurrency": 10})
    source = tmp_path / "campaign.yml"
    source.write_text("name: test\n")
    peak: list[int] = []

    class Counting(FakeBmcs):
        def update(self, target: Target, flash: list[Component], reset: bool, guard=unguarded) -> None:  # type: ignore[override]
            nodes = CampaignStore(journal).nodes("test")
            peak.append(sum(1 for n in nodes if n.state in (NodeState.ACTIVE, NodeState.FAILED)))
            super().update(target, flash, reset, guard)

    bmcs = Counting(NODES, OLD, flash_s=0.01)
    bmcs.faults["n01"] = "fail"  # one failure, within max_failures: it keeps one unit of the budget
    with Journal(tmp_path / "j.db") as journal:
        out = Engine(cat, CampaignStore(journal), targets(NODES), bmcs, GateRunner(FakeHealth()),
                     poll_s=0.01).start(source, [NODES])
    assert out.state is CampaignState.DONE and out.failed == 1
    assert len(peak) == 10 and max(peak) <= 3 and max(peak) == 3


def test_a_one_controller_campaign_on_sqlite_takes_and_gives_back_claims_and_leases(tmp_path: Path) -> None:
    """Each turn runs under its claim's node lease and the controller leads throughout; at the end no lease
    is left behind (node leases released, the leader lease resigned)."""
    cat = catalog({"waves": {"canary": 1, "batch_size": 4}})
    source = tmp_path / "campaign.yml"
    source.write_text("name: test\n")
    seen: dict[str, tuple[str, str]] = {}

    class Watching(FakeBmcs):
        def update(self, target: Target, flash: list[Component], reset: bool, guard=unguarded) -> None:  # type: ignore[override]
            lock = journal.query("SELECT owner FROM node_locks WHERE node = ?", (target.name,))
            lead = journal.query("SELECT owner FROM campaign_leases WHERE campaign = 'test' AND role = 'leader'")
            seen[target.name] = (str(lock[0][0]) if lock else "", str(lead[0][0]) if lead else "")
            super().update(target, flash, reset, guard)

    bmcs = Watching(NODES, OLD)
    with Journal(tmp_path / "j.db") as journal:
        store = CampaignStore(journal)
        engine = Engine(cat, store, targets(NODES), bmcs, GateRunner(FakeHealth()), poll_s=0.01)
        out = engine.start(source, waves_for(NODES, cat))
        assert out.ok and at_baseline(bmcs, cat) == NODES and engine.leader_seen
        owners = {n.controller for n in store.nodes("test")}
        assert len(owners) == 1 and next(iter(owners)).startswith("campaign test controller ")
        assert seen == {n: (next(iter(owners)), next(iter(owners))) for n in NODES}  # claim, lease, leader: one
        assert journal.query("SELECT COUNT(*) FROM node_locks")[0][0] == 0
        assert journal.query("SELECT COUNT(*) FROM campaign_leases")[0][0] == 0
