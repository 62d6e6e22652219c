"""Wave planning as tables."""

from __future__ import annotations

import pytest

from provision.campaign.policy import WavePolicy
from provision.campaign.waves import ideal_seconds, plan_waves

NODES = [f"n{i:02d}" for i in range(1, 11)]


@pytest.mark.parametrize(
    ("policy", "sizes"),
    [
        ({"canary": 1, "batch_size": 3}, [1, 3, 3, 3]),
        ({"canary": 2, "batch_size": 4}, [2, 4, 4]),
        ({"canary": "5%", "batch_size": 5}, [1, 5, 4]),  # 5% of 10 rounds up to 1
        ({"canary": "25%", "batch_size": 10}, [3, 7]),
        ({"canary": 0, "batch_size": 4}, [4, 4, 2]),
        ({"canary": 1, "max_unavailable": 4}, [1, 4, 4, 1]),
        ({"canary": 1, "max_unavailable": "25%"}, [1, 2, 2, 2, 2, 1]),  # 25% of 10 rounds down to 2
        ({"canary": 1, "max_unavailable": "1%"}, [1] * 10),  # never below one node
        ({"canary": 1}, [1, 9]),  # no batching: the rest in one wave
        ({"canary": 20, "batch_size": 3}, [10]),  # canary capped at the fleet
        ({"canary": "100%"}, [10]),
    ],
)
def test_wave_sizes(policy: dict, sizes: list[int]) -> None:
    waves = plan_waves(NODES, WavePolicy.model_validate(policy))
    assert [len(w) for w in waves] == sizes
    assert [n for w in waves for n in w] == NODES  # every node once, in order


def test_no_nodes_no_waves() -> None:
    assert plan_waves([], WavePolicy(canary=1, batch_size=2)) == []


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"canary": -1}, "must not be negative"),
        ({"canary": "x%"}, "percentage"),
        ({"canary": "150%"}, "percentage"),
        ({"canary": True}, "percentage"),
        ({"batch_size": 0}, "greater than 0"),
        ({"batch_size": 2, "max_unavailable": 2}, "not both"),
        ({"max_unavailable": 0}, "at least one"),
    ],
)
def test_bad_wave_policies(policy: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WavePolicy.model_validate(policy)


@pytest.mark.parametrize(
    ("waves", "concurrency", "ideal"),
    [
        ([[10.0], [10.0, 12.0, 8.0]], 64, 22.0),
        ([[5.0, 5.0, 5.0, 5.0]], 2, 10.0),
        ([[9.0, 3.0, 3.0, 3.0]], 2, 9.0),
        ([[], [4.0]], 8, 4.0),
    ],
)
def test_ideal_schedule(waves: list[list[float]], concurrency: int, ideal: float) -> None:
    assert ideal_seconds(waves, concurrency) == pytest.approx(ideal)


def test_a_plan_names_versions_it_cannot_compare_and_never_counts_the_node_at_baseline() -> None:
    from provision.campaign.plan import build_plan
    from provision.campaign.updater import FirmwareState
    from tests.unit.campaign.fakes import catalog

    cat = catalog()
    why = "bios (BIOS): cannot compare 'buildbrain-gcid-38635631' with catalog '3.0': opaque"
    observed: dict[str, FirmwareState | str] = {
        "n1": FirmwareState(versions={"bmc": "2.0", "bios": "buildbrain-gcid-38635631"}, incomparable={"bios": why}),
        "n2": FirmwareState(versions={"bmc": "2.0", "bios": "3.0"}),
        "n3": FirmwareState(versions={"bmc": "1.0", "bios": "buildbrain-gcid-38635631"}, incomparable={"bios": why}),
    }
    plan = build_plan(cat, observed)
    by_node = {p.node: p for p in plan.nodes}
    assert by_node["n1"].problems == [why] and by_node["n1"].updates == []  # the bios is no update: a problem
    assert [u.component for u in by_node["n3"].updates] == ["bmc"] and by_node["n3"].problems == [why]
    assert plan.at_baseline == ["n2"] and sorted(n for w in plan.waves for n in w) == ["n1", "n3"]
