"""Self-fencing of a node lease holder (issue 23): no side effect on a node once the holder's last successful
renewal is older than half the TTL (its renewer starved, or the journal unreachable), checked right before each
one; the turn is then abandoned, journaled, and the node left active for its next holder. A fake clock: the
renewer thread (every TTL/5 of real time, TTL 600 s here) never runs during a test, renewals are called by hand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from provision.campaign.catalog import Component
from provision.campaign.engine import Engine, waves_for
from provision.campaign.gates import GateRunner
from provision.campaign.node import NodeContext, process_node
from provision.campaign.updater import Target
from provision.journal import Journal
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState
from provision.journal.locks import FENCE_SHARE, LeaseStale, NodeLocks
from provision.journal.store import JournalUnreachable
from tests.unit.campaign.fakes import SHA, FakeBmcs, FakeHealth, catalog, targets
from tests.unit.fakeclock import FakeClock

TTL = 600.0
OLD = {"bmc": "1.0", "bios": "2.0"}


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    with Journal(tmp_path / "journal.db") as j:
        yield j


# -- NodeLocks.check: a table over when the lease was taken, renewed, and checked ---------------------------
@pytest.mark.parametrize(("renewed_at", "checked_at", "acts"), [
    ((), 0.0, True),                       # just taken
    ((), 0.49, True),                      # under half the TTL since it was taken
    ((), 0.5, False),                      # half the TTL: fenced, though the lease itself runs until 1.0
    ((), 0.99, False),
    ((0.3,), 0.79, True),                  # a renewal moves the fence on
    ((0.3,), 0.8, False),
    ((0.2, 0.4, 0.6, 0.8), 1.29, True),    # renewed every TTL/5: never fenced
])
def test_a_holder_acts_only_within_half_a_ttl_of_its_last_renewal(
        journal: Journal, clock: FakeClock, renewed_at: tuple[float, ...], checked_at: float, acts: bool) -> None:
    start = clock.now
    locks = NodeLocks(journal, ttl_s=TTL, clock=clock)
    locks.take(["node01"], owner="campaign c1")
    for at in renewed_at:
        clock.now = start + at * TTL
        assert locks.renew() == []
    clock.now = start + checked_at * TTL
    if acts:
        locks.check("node01", "bios 3.0 update")
        assert locks.fresh()
    else:
        with pytest.raises(LeaseStale, match=r"node01: this run's lease was last renewed .* s ago, more than 300 s "
                                             r"of its 600 s TTL .*; bios 3.0 update not sent"):
            locks.check("node01", "bios 3.0 update")
        assert not locks.fresh()  # the controller takes no new node meanwhile


def test_a_holder_cut_off_from_the_journal_fences_itself(journal: Journal, clock: FakeClock,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    locks = NodeLocks(journal, ttl_s=TTL, clock=clock)
    locks.take(["node01"], owner="campaign c1")

    def unreachable(*args: object, **kwargs: object) -> None:
        raise JournalUnreachable("journal postgresql://db/provision: connection refused")

    monkeypatch.setattr(journal, "transaction", unreachable)
    clock.now += 0.3 * TTL
    with pytest.raises(JournalUnreachable):
        locks.renew()  # the renewer swallows this and tries again; the expiry it knows stays put
    locks.check("node01")
    clock.now += 0.2 * TTL
    with pytest.raises(LeaseStale, match="journal unreachable"):
        locks.check("node01")


def test_a_lease_taken_over_fences_and_stops_new_claims_for_a_ttl(tmp_path: Path, clock: FakeClock) -> None:
    with Journal(tmp_path / "j.db") as a, Journal(tmp_path / "j.db") as b:
        first, second = NodeLocks(a, ttl_s=TTL, clock=clock), NodeLocks(b, ttl_s=TTL, clock=clock)
        first.take(["node01", "node02"], owner="campaign c1")
        clock.now += TTL + 1  # first's renewer starved for a whole TTL
        second.take(["node01"], owner="campaign c1")
        assert first.renew() == ["node01"]  # node02 renewed: still first's, and fresh
        first.check("node02")
        with pytest.raises(LeaseStale, match="taken over by another"):
            first.check("node01")
        assert not first.fresh()
        clock.now += TTL
        assert first.renew() == [] and first.fresh()


# -- a node's turn: the fence before each side effect ---------------------------------------------------------
class StallingBmcs(FakeBmcs):
    """The first component's update takes `stall` of the TTL with no renewal meanwhile (a starved renewer)."""

    def __init__(self, clock: FakeClock, stall: float) -> None:
        super().__init__(["n1"], OLD)
        self.clock, self.stall = clock, stall

    def flashed(self, target: Target, comp: Component) -> None:
        if comp.component == "bmc":  # Immediate: running the new version once its task is over
            self.versions[target.name]["bmc"] = comp.version
            self.clock.now += self.stall * TTL


@pytest.mark.parametrize(("stall", "flashed", "resets", "state"), [
    (0.1, {("n1", "bmc"): 1, ("n1", "bios"): 1}, 1, NodeState.DONE),
    (FENCE_SHARE + 0.01, {("n1", "bmc"): 1}, 0, NodeState.ACTIVE),  # bios and the reset never sent
])
def test_a_turn_whose_lease_went_stale_sends_nothing_more(journal: Journal, clock: FakeClock, stall: float,
                                                          flashed: dict[tuple[str, str], int], resets: int,
                                                          state: NodeState) -> None:
    store = CampaignStore(journal)
    cat = catalog()
    store.create("test", "campaign.yml", SHA, [["n1"]])
    locks = NodeLocks(journal, ttl_s=TTL, clock=clock)
    bmcs = StallingBmcs(clock, stall)
    ctx = NodeContext(cat, store, journal.start_run("campaign", "test", {}), bmcs, locks=locks)
    assert process_node(ctx, Target(name="n1")) is state
    assert dict(bmcs.flashes) == flashed and bmcs.resets["n1"] == resets
    node = store.node("test", "n1")
    assert node.state is state
    outcomes = {a.action: a.outcome for a in journal.actions("n1", "campaign")}
    if state is NodeState.ACTIVE:
        assert outcomes == {"firmware-update": "abandoned", "turn-abandoned": "abandoned"}
        assert node.error.startswith("turn abandoned: n1: this run's lease was last renewed")
        assert "bios 3.0 update not sent" in node.error
        assert locks.held() == []  # released: any controller may take the node at once, and re-reads its BMC
    else:
        assert outcomes == {"firmware-update": "ok"}


def test_the_one_controller_engine_halts_on_an_abandoned_turn_and_resume_finishes(
        tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> None:
    source = tmp_path / "campaign.yml"
    source.write_text("name: test\n")
    cat = catalog({"waves": {"canary": 1, "batch_size": 1}})
    with Journal(tmp_path / "j.db") as journal:
        store = CampaignStore(journal)
        bmcs = StallingBmcs(clock, FENCE_SHARE + 0.01)
        engine = Engine(cat, store, targets(["n1"]), bmcs, GateRunner(FakeHealth()), poll_s=0.01)
        locks = NodeLocks(journal, ttl_s=TTL, clock=clock)
        monkeypatch.setattr("provision.campaign.engine.NodeLocks", lambda j: locks)
        out = engine.start(source, waves_for(["n1"], cat))
        assert out.state is CampaignState.HALTED and "n1: turn abandoned" in out.reason
        bmcs.stall = 0.0
        assert Engine(cat, store, targets(["n1"]), bmcs, GateRunner(FakeHealth()), poll_s=0.01).resume().ok
    assert dict(bmcs.flashes) == {("n1", "bmc"): 1, ("n1", "bios"): 1} and bmcs.resets["n1"] == 1


# -- a controller that loses the journal ------------------------------------------------------------------------
@pytest.mark.postgres
def test_a_controller_that_loses_the_journal_claims_nothing_more_and_its_turn_stops(
        pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The journal goes as the canary's BMC update is sent; the turn's flash requests are out, but the host reset
    would come a second later, past half the 1 s lease with no renewal: not sent. No other node is touched."""
    from provision.campaign.engine import SharedEngine

    source = tmp_path / "campaign.yml"
    source.write_text("name: test\n")
    nodes = ["n1", "n2", "n3", "n4"]
    cat = catalog({"waves": {"canary": 1, "max_unavailable": 3}})
    journal = Journal()
    gone = False

    def cut(method: str) -> None:
        real = getattr(journal, method)

        def call(*args: object, **kwargs: object) -> object:
            if gone:
                raise JournalUnreachable("journal postgresql://127.0.0.1/postgres: lost the journal database")
            return real(*args, **kwargs)
        monkeypatch.setattr(journal, method, call)

    for method in ("transaction", "execute", "query"):
        cut(method)

    class LosingBmcs(FakeBmcs):
        def flashed(self, target: Target, comp: Component) -> None:
            nonlocal gone
            gone = True

    bmcs = LosingBmcs(nodes, OLD, flash_s=1.0)
    engine = SharedEngine(cat, CampaignStore(journal), targets(nodes), bmcs, GateRunner(FakeHealth()), poll_s=0.02,
                          lease_s=1.0)
    with pytest.raises(JournalUnreachable):
        engine.start(source, waves_for(nodes, cat))
    monkeypatch.undo()
    journal.close()
    assert {n for n, _ in bmcs.flashes} == {"n1"} and bmcs.resets["n1"] == 0
