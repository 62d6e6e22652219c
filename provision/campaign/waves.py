"""Wave planning, pure: a canary wave, then batches. Tested as tables."""

from __future__ import annotations

import math
from collections.abc import Sequence

from provision.campaign.policy import WavePolicy


def resolve_count(count: int | str, total: int, *, round_up: bool) -> int:
    """A count or a percentage of `total` as a number of nodes (percentages round up or down)."""
    if isinstance(count, int):
        return count
    share = float(count.rstrip("%")) * total / 100
    return math.ceil(share - 1e-9) if round_up else math.floor(share + 1e-9)


def canary_size(policy: WavePolicy, total: int) -> int:
    """Nodes in the canary wave: a percentage rounds up (5% of 10 nodes is 1 node), capped at total."""
    if total == 0:
        return 0
    return min(resolve_count(policy.canary, total, round_up=True), total)


def batch_size(policy: WavePolicy, total: int) -> int:
    """Nodes per later wave: batch_size, or the max_unavailable budget (WavePolicy.budget)."""
    if policy.batch_size is not None:
        return policy.batch_size
    budget = policy.budget(total)
    return max(total, 1) if budget is None else budget


def plan_waves(nodes: Sequence[str], policy: WavePolicy, canary_of: int | None = None) -> list[list[str]]:
    """Split `nodes` (in the given order) into a canary wave and batches; no empty wave. The canary's share is
    of `canary_of` nodes when given (the campaign's targets: known before they are all read), else of `nodes`."""
    total = len(nodes)
    first = min(canary_size(policy, total if canary_of is None else canary_of), total)
    size = batch_size(policy, total)
    waves = [list(nodes[:first])] if first else []
    rest = list(nodes[first:])
    waves += [rest[i : i + size] for i in range(0, len(rest), size)]
    return waves


def ideal_seconds(wave_node_seconds: Sequence[Sequence[float]], concurrency: int) -> float:
    """The ideal wall time of a schedule: each wave takes its nodes' longest time per `concurrency` slot.

    A wave larger than `concurrency` runs in ceil(n / concurrency) rounds (longest-first, greedy).
    """
    total = 0.0
    for times in wave_node_seconds:
        slots = [0.0] * max(1, min(concurrency, len(times)))
        for t in sorted(times, reverse=True):
            slots[slots.index(min(slots))] += t
        total += max(slots) if times else 0.0
    return total
