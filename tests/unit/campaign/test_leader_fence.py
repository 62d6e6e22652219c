"""The leader lease is fenced as the node leases are (provision.journal.claims): a new token for every take, a
renewal that is a compare-and-set on (owner, token), no decision once half the TTL has gone without a renewal or
when the renewal failed, and each decision written in a transaction that re-reads the token, so a leader paused
(GC, SIGSTOP) while another took over starts no wave when it wakes. A fake clock (tests/unit/fakeclock.py); on
SQLite and, with the postgres marker, PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from provision.campaign.engine import SharedEngine, waves_for
from provision.campaign.gates import GateRunner
from provision.journal import Journal
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, Request, SinceStart, WaveState
from provision.journal.claims import LEADER, Claims, LeaderFenced, NotDecided
from tests.unit.campaign.fakes import FakeBmcs, FakeHealth, catalog, targets
from tests.unit.fakeclock import FakeClock

TTL = 10.0
OLD = {"bmc": "1.0", "bios": "2.0"}


@pytest.fixture
def journal(backend: str | None, tmp_path: Path) -> Iterator[Journal]:
    with Journal(backend) as j:
        CampaignStore(j).create("test", str(tmp_path / "campaign.yml"), "x", [["n1"]])
        yield j


def _token(journal: Journal) -> str:
    return str(journal.query("SELECT token FROM campaign_leases WHERE campaign = ? AND role = ?",
                             ("test", LEADER))[0]["token"])


def _decides(claims: Claims) -> bool:
    try:
        with claims.decide("a test decision"):
            return True
    except LeaderFenced:
        return False


def test_every_take_of_the_lease_is_a_new_term(journal: Journal, clock: FakeClock) -> None:
    a, b = Claims(journal, "test", ttl_s=TTL, clock=clock), Claims(journal, "test", ttl_s=TTL, clock=clock)
    assert a.lead() and not b.lead()
    first = _token(journal)
    clock.now += TTL / 2
    assert a.lead() and _token(journal) == first  # a renewal keeps the term
    clock.now += TTL + 1
    assert b.lead() and not a.lead()  # expired: b's term
    clock.now += TTL + 1
    assert a.lead()
    assert _token(journal) not in (first, b.term) and _token(journal) == a.term  # a again: a new term
    a.resign()
    assert a.lead() and _token(journal) != first


def test_a_renewal_fails_once_another_took_the_lease(journal: Journal, clock: FakeClock) -> None:
    """b's clock runs ahead of a's: b finds a's lease expired while a still counts it live. a's renewal, a
    compare-and-set on its token, fails: a decides nothing more, though its own lease has time left."""
    ahead = FakeClock(clock.now + TTL + 1)
    a, b = Claims(journal, "test", ttl_s=TTL, clock=clock), Claims(journal, "test", ttl_s=TTL, clock=ahead)
    assert a.lead() and _decides(a)
    assert b.lead()
    assert not a.lead() and not a.fresh() and not _decides(a)
    assert b.leader() == b.owner and _decides(b)


@pytest.mark.parametrize(("renewed_at", "decided_at", "decides"), [
    ((), 0.0, True),
    ((), 0.49, True),
    ((), 0.5, False),        # half the TTL gone since the take: fenced, though the lease runs until 1.0
    ((0.3,), 0.79, True),    # a renewal moves the fence on
    ((0.3,), 0.8, False),
])
def test_the_leader_decides_only_within_half_a_ttl_of_its_last_renewal(
        journal: Journal, clock: FakeClock, renewed_at: tuple[float, ...], decided_at: float, decides: bool) -> None:
    start = clock.now
    a = Claims(journal, "test", ttl_s=TTL, clock=clock)
    assert a.lead()
    for at in renewed_at:
        clock.now = start + at * TTL
        assert a.lead()
    clock.now = start + decided_at * TTL
    assert a.fresh() is decides and _decides(a) is decides


def test_a_decision_re_reads_the_token_and_writes_nothing_when_another_leads(journal: Journal,
                                                                              clock: FakeClock) -> None:
    a = Claims(journal, "test", ttl_s=TTL, clock=clock)
    assert a.lead()
    journal.execute("UPDATE campaign_leases SET token = ? WHERE campaign = ?", ("another", "test"))
    store = CampaignStore(journal)
    with pytest.raises(LeaderFenced, match="another controller took the leader lease"), a.decide("wave 0 started") as db:
        store.wave_state("test", 0, WaveState.ACTIVE, db=db)
    assert store.waves("test")[0].state is WaveState.PENDING and a.term is None


def test_no_decision_on_a_campaign_no_longer_running(journal: Journal, clock: FakeClock) -> None:
    a = Claims(journal, "test", ttl_s=TTL, clock=clock)
    assert a.lead()
    store = CampaignStore(journal)
    store.halt("test", "halted by request")
    with pytest.raises(NotDecided, match="the campaign is halted"), a.decide("campaign done") as db:
        store.set_state("test", CampaignState.DONE, db=db)
    assert store.get("test").state is CampaignState.HALTED


@pytest.mark.parametrize("how", ["paused past its lease", "its lease taken by a clock ahead"])
def test_a_stale_leader_starts_no_wave_after_another_took_over(backend: str | None, tmp_path: Path,
                                                               clock: FakeClock, how: str) -> None:
    """The leader stops (GC, SIGSTOP) between renewing its lease and starting the first wave; meanwhile another
    controller takes the lease. Woken, it starts nothing and flashes nothing."""
    source = tmp_path / "campaign.yml"
    source.write_text("name: test\n")
    cat = catalog()
    bmcs = FakeBmcs(["n1"], OLD)
    with Journal(backend) as journal:
        store = CampaignStore(journal)
        engine = SharedEngine(cat, store, targets(["n1"]), bmcs, GateRunner(FakeHealth()), poll_s=0.01,
                              lease_s=TTL, clock=clock)
        other = Claims(journal, "test", ttl_s=TTL,
                       clock=clock if how == "paused past its lease" else FakeClock(clock.now + TTL + 1))

        def stopped(wave: int) -> None:
            if how == "paused past its lease":
                clock.now += TTL + 1
            assert other.lead()
            store.request("test", Request.PAUSE)  # so that the stale leader's loop ends at its next turn
            return None

        engine._before_wave = stopped  # type: ignore[method-assign]
        engine.start(source, waves_for(["n1"], cat))
        assert [w.state for w in store.waves("test")] == [WaveState.PENDING]
        assert store.get("test").state is CampaignState.RUNNING and engine.leader_seen
    assert not bmcs.flashes


@pytest.mark.parametrize("sick", [set(), {"n1"}], ids=["wave done", "gate failed"])
@pytest.mark.parametrize("how", ["paused past its lease", "its lease taken by a clock ahead"])
def test_a_stale_leader_closes_no_wave_after_another_took_over(backend: str | None, tmp_path: Path,
                                                               clock: FakeClock, how: str, sick: set[str]) -> None:
    """The leader finds every node of the wave finished and stops (GC, SIGSTOP) after its freshness check,
    before it writes its verdict on the wave ("wave done", or the gate failed and the campaign halted);
    meanwhile another controller takes the lease. Woken, it writes neither: the wave stays active and the
    campaign running, for the leader of the day to gate and close."""
    source = tmp_path / "campaign.yml"
    source.write_text("name: test\n")
    cat = catalog()
    bmcs = FakeBmcs(["n1"], OLD)
    with Journal(backend) as journal:
        store = CampaignStore(journal)
        engine = SharedEngine(cat, store, targets(["n1"]), bmcs, GateRunner(FakeHealth(sick=sick)), poll_s=0.01,
                              lease_s=TTL, clock=clock)
        other = Claims(journal, "test", ttl_s=TTL,
                       clock=clock if how == "paused past its lease" else FakeClock(clock.now + TTL + 1))
        counted = store.since_start

        def stopped(name: str) -> SinceStart:  # in _close_wave: past claims.fresh(), before the decision
            count = counted(name)
            if other.term is None:
                if how == "paused past its lease":
                    clock.now += TTL + 1
                assert other.lead()
                store.request("test", Request.PAUSE)  # so that the stale leader's loop ends at its next turn
            return count

        store.since_start = stopped  # type: ignore[method-assign]
        engine.start(source, waves_for(["n1"], cat))
        assert other.term is not None, "the leader never came to close the wave"
        assert store.node("test", "n1").state is NodeState.DONE and bmcs.flashes
        assert [w.state for w in store.waves("test")] == [WaveState.ACTIVE]
        assert store.get("test").state is CampaignState.RUNNING and engine.leader_seen
