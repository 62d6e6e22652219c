"""Fixtures of the metrics tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.journal import Journal
from provision.journal.campaigns import CampaignState, CampaignStore, NodeState, WaveState

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    """Campaign c1 halted in wave 0: n1 updated, n2 failed, n3 (wave 1) pending."""
    path = tmp_path / "j.db"
    with Journal(path) as j:
        store = CampaignStore(j)
        store.create("c1", str(ROOT / "campaigns" / "ml_prod_v4_2026q4.yml"), "0" * 64, [["n1", "n2"], ["n3"]])
        store.node_started("c1", "n1", {"bmc": "1.0"})
        store.node_flashing("c1", "n1", ["bmc"])
        store.node_finished("c1", "n1", NodeState.DONE, {"bmc": "2.0"})
        store.node_started("c1", "n2", {"bmc": "1.0"})
        store.node_finished("c1", "n2", NodeState.FAILED, {"bmc": "1.0"}, "after the update: bmc is 1.0")
        store.wave_state("c1", 0, WaveState.ACTIVE)
        store.set_state("c1", CampaignState.HALTED, "1 node(s) failed (max_failures 0); last: n2")
    return path
