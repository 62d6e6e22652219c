"""The halt policy counts the nodes finished since the campaign's latest start/resume, on both journals and
in both engines (the one-controller Engine and the SharedEngine of several controllers), with one rule
(HaltPolicy.failures_reason / share_reason) and one count (CampaignStore.since_start)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from provision.campaign.engine import Engine, SharedEngine, waves_for
from provision.campaign.gates import GateRunner
from provision.campaign.policy import HaltPolicy
from provision.journal import Journal
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, SinceStart
from provision.journal.claims import Claims
from tests.unit.campaign.fakes import FakeBmcs, FakeHealth, at_baseline, catalog, targets

OLD = {"bmc": "1.0", "bios": "2.0"}
NODES = [f"n{i:02d}" for i in range(1, 16)]


@pytest.mark.parametrize(("max_failures", "failed", "halts"), [
    (0, 0, False), (0, 1, True), (2, 2, False), (2, 3, True), (5, 0, False),
])
def test_max_failures_table(max_failures: int, failed: int, halts: bool) -> None:
    reason = HaltPolicy(max_failures=max_failures).failures_reason(failed, "n7")
    assert (reason is not None) is halts
    if halts:
        assert reason == f"{failed} node(s) failed (max_failures {max_failures}); last: n7"


@pytest.mark.parametrize(("limit", "failed", "finished", "reason"), [
    (None, 5, 5, None),
    (10, 1, 10, None),  # 10% is not past 10%
    (10, 2, 10, "wave 3: 2 of 10 node(s) failed (20.0% > 10%)"),
    (50, 0, 0, None),  # nothing finished since the start/resume: no share to judge
    (0, 1, 3, "wave 3: 1 of 3 node(s) failed (33.3% > 0%)"),
])
def test_max_fail_percentage_table(limit: float | None, failed: int, finished: int, reason: str | None) -> None:
    assert HaltPolicy(max_failures=99, max_fail_percentage=limit).share_reason(3, failed, finished) == reason


@pytest.fixture
def store(backend: str | None, tmp_path: Path) -> Iterator[CampaignStore]:
    journal = Journal(backend)
    store = CampaignStore(journal)
    store.create("test", str(tmp_path / "c.yml"), "x", [NODES[:5], NODES[5:]])
    yield store
    journal.close()


def _finish(store: CampaignStore, node: str, state: NodeState) -> None:
    store.node_started("test", node, {})
    store.node_finished("test", node, state, {})


def test_since_start_counts_from_the_latest_start_or_resume(store: CampaignStore) -> None:
    store.claim("test", 1)  # start
    for node in ("n01", "n02", "n03"):
        _finish(store, node, NodeState.FAILED)
    _finish(store, "n04", NodeState.DONE)
    assert store.since_start("test") == SinceStart(failed=3, finished=4, last_failed="n03")
    store.claim("test", 2)  # resume: the three failures stay failed, and are not counted again
    assert store.since_start("test") == SinceStart(failed=0, finished=0, last_failed="")
    _finish(store, "n05", NodeState.DONE)
    _finish(store, "n06", NodeState.FAILED)
    assert store.since_start("test") == SinceStart(failed=1, finished=2, last_failed="n06")
    assert store.failed_count("test") == (4, 6)  # the campaign's own totals are unchanged
    store.reset_failed("test")  # resume --retry-failed: a node that fails again counts again
    store.claim("test", 3)
    _finish(store, "n01", NodeState.FAILED)
    assert store.since_start("test") == SinceStart(failed=1, finished=1, last_failed="n01")


def test_the_claim_decides_max_failures_since_the_resume(store: CampaignStore) -> None:
    policy = HaltPolicy(max_failures=1)

    def halt_if(count: SinceStart) -> str | None:
        return policy.failures_reason(count.failed, count.last_failed)

    store.claim("test", 1)
    for node in ("n01", "n02", "n03"):
        _finish(store, node, NodeState.FAILED)
    store.claim("test", 2)  # resumed: the three failures before it do not stop the claims
    claims = Claims(store.journal, "test", ttl_s=60)
    assert [x.node for x in claims.claim(0, NODES, 1, None, halt_if)] == ["n04"]
    _finish(store, "n04", NodeState.FAILED)
    assert [x.node for x in claims.claim(0, NODES, 1, None, halt_if)] == ["n05"]  # 1 is not past 1
    _finish(store, "n05", NodeState.FAILED)
    assert claims.claim(1, NODES, 5, None, halt_if) == []  # 2 past 1: halted in the claim's transaction
    record = store.get("test")
    assert record.state is CampaignState.HALTED and record.reason == "2 node(s) failed (max_failures 1); last: n05"
    assert all(n.state is NodeState.PENDING for n in store.nodes("test", 1))


def _run(kind: str, cat: object, store: CampaignStore, bmcs: FakeBmcs, source: Path, resume: bool) -> object:
    cls = Engine if kind == "engine" else SharedEngine
    eng = cls(cat, store, targets(NODES), bmcs, GateRunner(FakeHealth()), poll_s=0.01)  # type: ignore[arg-type]
    return eng.resume() if resume else eng.start(source, waves_for(NODES, cat))  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["engine", "shared"])
def test_failures_before_a_resume_do_not_count_after_it(kind: str, backend: str | None, tmp_path: Path) -> None:
    cat = catalog({"waves": {"canary": 0, "batch_size": 5}, "halt": {"max_failures": 2}})
    source = tmp_path / "campaign.yml"
    source.write_text("name: test\n")
    bmcs = FakeBmcs(NODES, OLD)
    for node in ("n01", "n02", "n03"):  # wave 0: three failures, past max_failures 2
        bmcs.faults[node] = "fail"
    with Journal(backend) as j:
        first = _run(kind, cat, CampaignStore(j), bmcs, source, resume=False)
    assert getattr(first, "state", first) is CampaignState.HALTED and "3 node(s) failed" in first.reason  # type: ignore[attr-defined]
    bmcs.faults.clear()
    bmcs.faults.update({"n07": "fail", "n12": "fail"})  # two more after the resume: not past 2
    with Journal(backend) as j:
        out = _run(kind, cat, CampaignStore(j), bmcs, source, resume=True)
    assert getattr(out, "state", out) is CampaignState.DONE, out
    assert out.failed == 5 and out.reason == "5 node(s) failed"  # type: ignore[attr-defined]
    assert at_baseline(bmcs, cat) == [n for n in NODES if n not in {"n01", "n02", "n03", "n07", "n12"}]


@pytest.mark.parametrize("kind", ["engine", "shared"])
def test_fail_percentage_after_a_resume_counts_from_it(kind: str, backend: str | None, tmp_path: Path) -> None:
    cat = catalog({"waves": {"canary": 0, "batch_size": 5}, "halt": {"max_failures": 10, "max_fail_percentage": 50}})
    source = tmp_path / "campaign.yml"
    source.write_text("name: test\n")
    bmcs = FakeBmcs(NODES, OLD)
    for node in ("n01", "n02", "n03"):  # wave 0: 3 of 5 failed, past 50% once its turns are over
        bmcs.faults[node] = "fail"
    with Journal(backend) as j:
        first = _run(kind, cat, CampaignStore(j), bmcs, source, resume=False)
    assert getattr(first, "state", first) is CampaignState.HALTED, first
    assert first.reason == "wave 0: 3 of 5 node(s) failed (60.0% > 50%)"  # type: ignore[attr-defined]
    assert first.pending == 10  # type: ignore[attr-defined]  # halted after wave 0, before wave 1
    bmcs.faults.clear()
    bmcs.faults["n06"] = "fail"  # 1 of 5, then 1 of 10, since the resume (4 of 15 in the campaign)
    with Journal(backend) as j:
        out = _run(kind, cat, CampaignStore(j), bmcs, source, resume=True)
    assert getattr(out, "state", out) is CampaignState.DONE, out
    assert out.failed == 4  # type: ignore[attr-defined]
