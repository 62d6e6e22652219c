"""The shared-campaign leader's gate over a finished wave (provision.campaign.leader, close_wave): a node no
controller gated (its controller was killed after the node's turn, before its gate) is gated by the leader when
it reaches the node, and is a gate failure when it does not: no health evidence is never a pass. One controller
on SQLite and, with the postgres marker, on PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from provision.campaign.engine import SharedEngine
from provision.campaign.gates import GateRunner
from provision.journal import Journal
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, WaveState
from tests.unit.campaign.fakes import FakeBmcs, FakeHealth, catalog, targets

OLD = {"bmc": "1.0", "bios": "2.0"}
NEW = {"bmc": "2.0", "bios": "3.0"}


@pytest.fixture
def store(backend: str | None, tmp_path: Path) -> Iterator[CampaignStore]:
    """Campaign `test`, one wave of n1 and n2; n2 finished by a controller that died before gating it."""
    with Journal(backend) as journal:
        store = CampaignStore(journal)
        store.create("test", str(tmp_path / "campaign.yml"), "x", [["n1", "n2"]])
        store.node_started("test", "n2", OLD)
        store.node_finished("test", "n2", NodeState.DONE, NEW)
        yield store


@pytest.mark.parametrize(("reach", "sick", "state", "reason"), [
    (["n1", "n2"], set(), CampaignState.DONE, ""),
    (["n1", "n2"], {"n2"}, CampaignState.HALTED,
     "health gate failed after wave 0: n2: System Status.Health is Critical"),
    (["n1"], set(), CampaignState.HALTED,  # this controller does not reach n2: its health is unknown
     "health gate failed after wave 0: n2: not gated (its controller is gone and this one does not reach it)"),
])
def test_the_leader_gates_what_nobody_gated(store: CampaignStore, reach: list[str], sick: set[str],
                                            state: CampaignState, reason: str) -> None:
    health = FakeHealth(sick=sick)
    bmcs = FakeBmcs(reach, OLD)
    engine = SharedEngine(catalog(), store, targets(reach), bmcs, GateRunner(health), poll_s=0.01, lease_s=10.0)
    out = engine.join()
    assert (out.state, out.reason) == (state, reason)
    assert sorted(health.checked) == reach  # n1 after its turn; n2 by the leader, when it reaches it
    assert ("n2", "bmc") not in bmcs.flashes  # finished: never flashed again
    wave = store.waves("test")[0]
    assert wave.state is (WaveState.DONE if state is CampaignState.DONE else WaveState.GATE_FAILED)
    assert store.get("test").state is state
