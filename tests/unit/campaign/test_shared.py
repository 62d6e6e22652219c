"""Several controllers on one campaign (provision.campaign.engine, SharedEngine) against fake BMCs on a real PostgreSQL
journal: nodes split by claims, max unavailable never exceeded across controllers, halt for everyone, a dead
controller's node re-observed (not flashed twice), the leader lease taken over; SQLite refuses a second one."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from provision.campaign.catalog import Catalog, Component
from provision.campaign.engine import SharedEngine, waves_for
from provision.campaign.gates import GateRunner
from provision.campaign.updater import FirmwareState, Guard, Target, unguarded
from provision.cli import main
from provision.journal import Journal
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, Request, WaveState
from provision.journal.claims import Claims
from tests.unit.campaign.fakes import FakeBmcs, FakeHealth, at_baseline, catalog, targets

OLD = {"bmc": "1.0", "bios": "2.0"}
NODES = [f"n{i:02d}" for i in range(1, 31)]


class CountingBmcs(FakeBmcs):
    """Records the most nodes flashing at one instant (what max unavailable bounds)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.now_flashing = 0
        self.peak = 0

    def update(self, target: Target, flash: Sequence[Component], reset: bool, guard: Guard = unguarded) -> None:
        with self.lock:
            self.now_flashing += 1
            self.peak = max(self.peak, self.now_flashing)
        try:
            super().update(target, flash, reset, guard)
        finally:
            with self.lock:
                self.now_flashing -= 1


def _source(tmp_path: Path) -> Path:
    path = tmp_path / "campaign.yml"
    path.write_text("name: test\n")
    return path


def _engine(cat: Catalog, bmcs: FakeBmcs, nodes: Sequence[str] = NODES, **kw: object) -> SharedEngine:
    store = CampaignStore(Journal())
    return SharedEngine(cat, store, targets(nodes), bmcs, GateRunner(FakeHealth()), poll_s=0.02,
                        lease_s=kw.pop("lease_s", 5.0), settle_s=kw.pop("settle_s", 0.05), **kw)  # type: ignore[arg-type]


def _run_all(engines: list[SharedEngine], first: object, running: bool = False) -> list[object]:
    """The first engine's start/resume in this thread's company: the others join as soon as it exists (with
    `running`: as soon as it runs, e.g. resumed)."""
    out: list[object] = [None] * len(engines)

    def go(i: int) -> None:
        try:
            out[i] = first() if i == 0 else _join_when_started(engines[i], running)  # type: ignore[operator]
        except BaseException as exc:
            out[i] = exc

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(engines))]
    threads[0].start()
    for t in threads[1:]:
        t.start()
    for t in threads:
        t.join(timeout=120)
    for e in engines:
        e.store.journal.close()
    return out


def _join_when_started(engine: SharedEngine, running: bool = False) -> object:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = engine.store.find(engine.catalog.name)
        if found is not None and (not running or found.state is CampaignState.RUNNING):
            break
        time.sleep(0.005)
    return engine.join()


@pytest.mark.postgres
def test_three_controllers_split_the_nodes_within_max_unavailable(pg_url: str, tmp_path: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "max_unavailable": 6}, "concurrency": 4})
    bmcs = CountingBmcs(NODES, OLD, flash_s=0.05)
    engines = [_engine(cat, bmcs) for _ in range(3)]
    out = _run_all(engines, lambda: engines[0].start(_source(tmp_path), waves_for(NODES, cat)))
    assert all(getattr(o, "state", o) is CampaignState.DONE for o in out), out
    assert at_baseline(bmcs, cat) == NODES
    assert set(bmcs.flashes.values()) == {1} and len(bmcs.flashes) == 2 * len(NODES)  # none flashed twice
    assert bmcs.peak <= 6
    assert set(NODES[1:]) <= set(bmcs.prepared)  # each wave's BMCs observed ahead, during the wave before
    # once the wave's turns have all begun, on whichever controller: waiting for more turns of its own (a count
    # of the whole wave) is never satisfied on a controller that takes a third of it, and nothing is observed ahead
    assert set(bmcs.prepared_after) == {None}
    with Journal() as j:
        nodes = CampaignStore(j).nodes("test")
    assert len({n.controller for n in nodes}) >= 2  # the work was shared (4 workers each, 6 per wave)
    assert all(n.gate == [] for n in nodes)  # every node gated by whoever ran its turn


@pytest.mark.postgres
def test_a_failure_halts_every_controller(pg_url: str, tmp_path: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "max_unavailable": 5}, "halt": {"max_failures": 0}})
    bmcs = FakeBmcs(NODES, OLD)
    bmcs.faults["n04"] = "fail"  # in wave 1
    engines = [_engine(cat, bmcs) for _ in range(3)]
    out = _run_all(engines, lambda: engines[0].start(_source(tmp_path), waves_for(NODES, cat)))
    assert all(getattr(o, "state", o) is CampaignState.HALTED for o in out), out
    with Journal() as j:
        store = CampaignStore(j)
        assert "max_failures 0" in store.get("test").reason
        assert all(n.state is NodeState.PENDING for n in store.nodes("test") if n.wave >= 2)
    assert not any(node in {"n12", "n20", "n30"} for node, _ in bmcs.flashes)


@pytest.mark.postgres
def test_three_controllers_count_failures_from_the_resume(pg_url: str, tmp_path: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "max_unavailable": 5}, "halt": {"max_failures": 2}, "concurrency": 2})
    bmcs = FakeBmcs(NODES, OLD, flash_s=0.02)
    for node in ("n02", "n03", "n04"):  # wave 1: three failures, past max_failures 2
        bmcs.faults[node] = "fail"
    engines = [_engine(cat, bmcs) for _ in range(3)]
    out = _run_all(engines, lambda: engines[0].start(_source(tmp_path), waves_for(NODES, cat)))
    assert all(getattr(o, "state", o) is CampaignState.HALTED for o in out), out
    assert "3 node(s) failed (max_failures 2)" in out[0].reason  # type: ignore[attr-defined]
    bmcs.faults.clear()
    bmcs.faults.update({"n12": "fail", "n25": "fail"})  # after the resume, taken by any of the three
    engines = [_engine(cat, bmcs) for _ in range(3)]
    out = _run_all(engines, lambda: engines[0].resume(), running=True)
    assert all(getattr(o, "state", o) is CampaignState.DONE for o in out), out  # 2 since the resume: not past 2
    with Journal() as j:
        store = CampaignStore(j)
        record, nodes = store.get("test"), store.nodes("test")
    assert record.reason == "5 node(s) failed"
    assert sorted(n.node for n in nodes if n.state is NodeState.FAILED) == ["n02", "n03", "n04", "n12", "n25"]
    assert len({n.controller for n in nodes if n.wave >= 2}) >= 2  # the resumed waves were shared
    assert set(bmcs.flashes.values()) == {1}  # none flashed twice across the halt and the resume


@pytest.mark.postgres
def test_a_dead_controllers_node_is_observed_again_not_flashed_twice(pg_url: str, tmp_path: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "max_unavailable": 5}})
    nodes = NODES[:6]
    bmcs = FakeBmcs(nodes, OLD)
    with Journal() as j:
        store = CampaignStore(j)
        store.create("test", str(_source(tmp_path)), "x", waves_for(nodes, cat))
        store.wave_state("test", 0, WaveState.ACTIVE)
        dead = Claims(j, "test", ttl_s=0.3)
        assert dead.lead()
        (lease,) = dead.claim(0, nodes, 5, 5)  # the canary, taken by a controller that then dies
    bmcs.versions["n01"] = {"bmc": "2.0", "bios": "3.0"}  # its flash had finished before it died
    engine = _engine(cat, bmcs, nodes)
    time.sleep(0.4)  # both of the dead controller's leases expire
    out = engine.join()
    assert out.ok and at_baseline(bmcs, cat) == nodes
    assert not any(node == "n01" for node, _ in bmcs.flashes)  # re-observed: at the baseline already
    assert engine.leader_seen and lease.node == "n01"
    assert ("n01", True) in bmcs.sessions and ("n02", False) in bmcs.sessions  # taken over: nothing seen ahead used
    takeover = [a for a in engine.store.journal.actions("n01", "campaign") if a.action == "take-over"]
    assert [a.target for a in takeover] == [dead.owner]
    engine.store.journal.close()


class LateLandingBmcs(FakeBmcs):
    """n01's BMC update, sent by a controller as it was killed, reaches the BMC at `lands_at` (an upload whose
    Task the BMC creates once it is in): from then on n01 runs the new BMC."""

    lands_at = float("inf")

    def observe(self, target: Target, components: Sequence[Component]) -> FirmwareState:
        if target.name == "n01" and time.monotonic() >= self.lands_at:
            with self.lock:
                self.versions["n01"]["bmc"] = "2.0"
        return super().observe(target, components)


@pytest.mark.postgres
def test_a_node_taken_over_is_observed_once_a_request_its_dead_holder_sent_has_landed(
        pg_url: str, tmp_path: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "max_unavailable": 5}})
    nodes = NODES[:3]
    bmcs = LateLandingBmcs(nodes, OLD)
    with Journal() as j:
        store = CampaignStore(j)
        store.create("test", str(_source(tmp_path)), "x", waves_for(nodes, cat))
        store.wave_state("test", 0, WaveState.ACTIVE)
        dead = Claims(j, "test", ttl_s=0.3)
        assert dead.lead() and [x.node for x in dead.claim(0, nodes, 5, 5)] == ["n01"]
    engine = _engine(cat, bmcs, nodes, settle_s=0.5)
    time.sleep(0.4)  # the dead controller's leases expire
    bmcs.lands_at = time.monotonic() + 0.1  # its request lands just after the survivor takes n01 over
    assert engine.join().ok and at_baseline(bmcs, cat) == nodes
    assert bmcs.flashes[("n01", "bmc")] == 0 and bmcs.flashes[("n01", "bios")] == 1  # its BMC image not sent twice
    engine.store.journal.close()


@pytest.mark.postgres
def test_max_unavailable_counts_a_stranded_node(pg_url: str, tmp_path: Path) -> None:
    with Journal() as j:
        store = CampaignStore(j)
        store.create("test", str(_source(tmp_path)), "x", [NODES[:5]])
        a, b = Claims(j, "test", ttl_s=60), Claims(j, "test", ttl_s=60)
        assert [x.node for x in a.claim(0, NODES, 1, 2)] == ["n01"]
        assert [x.node for x in b.claim(0, NODES, 10, 2)] == ["n02"]  # n01 is a's: skipped; budget 2 in all
        assert b.claim(0, NODES, 10, 2) == []
        store.request("test", Request.PAUSE)
        assert Claims(j, "test", ttl_s=60).claim(0, NODES, 10, None) == []  # a pause asked: nothing claimed


@pytest.mark.postgres
def test_a_turn_begins_at_its_claim_not_at_its_first_bmc_read(pg_url: str, tmp_path: Path) -> None:
    """started_at is the claim's time (a halt is judged against it); node_started keeps it."""
    with Journal() as j:
        store = CampaignStore(j)
        store.create("test", str(_source(tmp_path)), "x", [NODES[:2]])
        before = time.time()
        assert [x.node for x in Claims(j, "test", ttl_s=60).claim(0, NODES, 1, None)] == ["n01"]
        claimed = store.node("test", "n01").started_at
        assert claimed is not None and before <= claimed <= time.time()
        time.sleep(0.05)
        store.node_started("test", "n01", OLD)  # after its first BMC read
        assert store.node("test", "n01").started_at == claimed
        assert store.node("test", "n02").started_at is None  # not claimed: not begun


@pytest.mark.postgres
def test_the_leader_lease_is_taken_over_when_it_expires(pg_url: str, tmp_path: Path) -> None:
    now = [1000.0]
    with Journal() as j:
        CampaignStore(j).create("test", str(_source(tmp_path)), "x", [["n1"]])
        a = Claims(j, "test", ttl_s=10, clock=lambda: now[0])
        b = Claims(j, "test", ttl_s=10, clock=lambda: now[0])
        assert a.lead() and not b.lead()
        now[0] += 8
        assert a.lead() and not b.lead()  # renewed
        now[0] += 11
        assert b.lead() and not a.lead() and b.leader() == b.owner


def test_join_on_sqlite_is_refused(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                   tmp_path: Path) -> None:
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    assert main(["campaign", "join", "test"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err  # one line
    assert str(tmp_path / "state" / "provision.db") in err  # names the journal
    assert "campaign join needs a journal shared by the controllers" in err and "PROVISION_JOURNAL_URL" in err
    assert not (tmp_path / "state").exists()  # refused before the SQLite file is created


@pytest.mark.parametrize(("url", "wrong"), [
    ("mysql://u:s3cret@db/prov", "expected postgresql://"),
    ("postgresql://u:s3cret@/prov", "no host"),
    ("postgresql:///prov", "no host"),
    ("postgresql://u:s3cret@db", "no database name"),
    ("postgresql://u:s3cret@db/", "no database name"),
    ("postgresql://u:s3cret@db:port/prov", "port is not a number"),
])
def test_join_with_a_malformed_journal_url_is_one_line(url: str, wrong: str, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_JOURNAL_URL", url)
    assert main(["campaign", "join", "test"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "PROVISION_JOURNAL_URL=" in err and wrong in err
    assert "s3cret" not in err and ("<redacted>" in err or ":s3cret@" not in url)


@pytest.mark.postgres
def test_a_pause_asked_mid_wave_stops_every_controller_after_its_turns(pg_url: str, tmp_path: Path) -> None:
    cat = catalog({"waves": {"canary": 1, "max_unavailable": 5}})

    class PausingBmcs(FakeBmcs):
        def update(self, target: Target, flash: Sequence[Component], reset: bool, guard: Guard = unguarded) -> None:
            if target.name == "n03":  # wave 1: the operator pauses while it flashes
                with Journal() as j:
                    CampaignStore(j).request("test", Request.PAUSE)
            super().update(target, flash, reset, guard)

    bmcs = PausingBmcs(NODES, OLD)
    engines = [_engine(cat, bmcs) for _ in range(3)]
    out = _run_all(engines, lambda: engines[0].start(_source(tmp_path), waves_for(NODES, cat)))
    assert all(getattr(o, "state", o) is CampaignState.PAUSED for o in out), out
    with Journal() as j:
        store = CampaignStore(j)
        assert store.get("test").state is CampaignState.PAUSED
        nodes = store.nodes("test")
    assert not any(n.state is NodeState.ACTIVE for n in nodes)  # turns in flight ended, none stranded
    assert all(n.state is NodeState.PENDING for n in nodes if n.wave >= 2)
    assert not any(node in {"n07", "n20"} for node, _ in bmcs.flashes)


@pytest.mark.postgres
def test_campaign_halt_stops_every_controller_at_once(pg_url: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`provision campaign halt` on a shared journal halts the campaign in the journal at once: no controller
    claims a node after it, the turns in flight end, every controller ends halted, and resume continues."""
    cat = catalog({"waves": {"canary": 1, "max_unavailable": 5}})
    halted_at: list[float] = []
    claimed_at: list[float] = []

    class HaltingBmcs(FakeBmcs):
        def update(self, target: Target, flash: Sequence[Component], reset: bool, guard: Guard = unguarded) -> None:
            with self.lock:
                claimed_at.append(time.time())
                first = target.name == "n03" and not halted_at
            if first:  # wave 1: the operator halts while n03 flashes
                assert main(["campaign", "halt", "test"]) == 0
                halted_at.append(time.time())
            super().update(target, flash, reset, guard)

    bmcs = HaltingBmcs(NODES, OLD)
    engines = [_engine(cat, bmcs) for _ in range(3)]
    out = _run_all(engines, lambda: engines[0].start(_source(tmp_path), waves_for(NODES, cat)))
    assert all(getattr(o, "state", o) is CampaignState.HALTED for o in out), out
    assert "campaign test: halted" in capsys.readouterr().out
    with Journal() as j:
        store = CampaignStore(j)
        record, nodes = store.get("test"), store.nodes("test")
    assert record.state is CampaignState.HALTED and record.reason == "halted by request"
    assert not any(n.state is NodeState.ACTIVE for n in nodes)  # turns in flight ended
    assert all(n.state is NodeState.PENDING for n in nodes if n.wave >= 2)
    assert max(claimed_at) <= halted_at[0] + 0.5  # no turn begun after the halt (a claim just before may lag)
    assert main(["campaign", "halt", "test"]) == 2  # not running: nothing to halt
