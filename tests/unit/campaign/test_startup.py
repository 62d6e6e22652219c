"""Campaign start-up: the plan reads every BMC with the campaign's concurrency (not fewer, not more), and the
engine's worker threads beyond the first wave's start while that wave's turns run."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from provision.campaign.engine import Engine, waves_for
from provision.campaign.gates import GateRunner
from provision.campaign.plan import observe_all
from provision.campaign.updater import Component, FirmwareState, Target
from provision.campaign.workers import Workers
from provision.journal import Journal
from provision.journal.campaigns import CampaignStore
from tests.unit.campaign.fakes import FakeBmcs, FakeHealth, catalog, targets

OLD = {"bmc": "1.0", "bios": "2.0"}
NODES = [f"n{i:02d}" for i in range(1, 13)]


@pytest.mark.parametrize("concurrency", [1, 3, 5])
def test_the_plan_reads_the_bmcs_with_the_campaigns_concurrency(concurrency: int) -> None:
    """Reads meet in groups of `concurrency` at a barrier: with fewer at once the barrier breaks (an error, not a
    state); with more, more than `concurrency` are seen inside at once."""
    cat = catalog({"concurrency": concurrency})
    barrier = threading.Barrier(concurrency, timeout=10)
    inside, peak, lock = [0], [0], threading.Lock()

    class Meeting(FakeBmcs):
        def observe(self, target: Target, components: Sequence[Component]) -> FirmwareState:
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            barrier.wait()
            with lock:
                inside[0] -= 1
            return super().observe(target, components)

    nodes = NODES[: concurrency * 2]
    seen = observe_all(list(targets(nodes).values()), cat, Meeting(nodes, OLD))
    assert sorted(seen) == nodes and all(isinstance(s, FirmwareState) for s in seen.values())
    assert peak[0] == concurrency


def test_workers_grow_without_stopping_what_runs() -> None:
    with Workers(1, prefix="t") as pool:
        gate = threading.Event()
        first = pool.submit(lambda _: gate.wait(10), [0])
        pool.grow(3)
        assert pool.size == 3
        rest = pool.submit(lambda x: x * 2, [1, 2])
        assert [f.result(timeout=10) for f in rest] == [2, 4]  # run by the new threads while the first waits
        gate.set()
        assert first[0].result(timeout=10) is True


def test_the_engine_starts_the_canarys_threads_first_and_the_rest_as_it_runs(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    cat = catalog({"waves": {"canary": 1, "batch_size": 5}, "concurrency": 4})
    source = tmp_path / "campaign.yml"
    source.write_text("name: test\n")
    sizes: list[tuple[str, int]] = []
    real_init, real_grow = Workers.__init__, Workers.grow

    def init(self: Workers, size: int, prefix: str = "worker") -> None:
        sizes.append(("start", size))
        real_init(self, size, prefix)

    def grow(self: Workers, size: int) -> None:
        sizes.append(("grow", size))
        real_grow(self, size)

    monkeypatch.setattr(Workers, "__init__", init)
    monkeypatch.setattr(Workers, "grow", grow)
    bmcs = FakeBmcs(NODES, OLD)
    with Journal(tmp_path / "j.db") as journal:
        out = Engine(cat, CampaignStore(journal), targets(NODES), bmcs, GateRunner(FakeHealth()),
                     poll_s=0.01).start(source, waves_for(NODES, cat))
    assert out.ok
    assert sizes == [("start", 1), ("grow", 4)]  # the canary's one, then the concurrency (waves of 5)
