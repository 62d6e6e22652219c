"""Can a profile's PSUs carry its peak draw, with and without their redundancy? (pure; `spec validate` prints it)

The PSUs deliver `psu_count` x `psu_watts`. Redundancy keeps part of that in reserve: N+1 runs on
`psu_count - 1` PSUs once one is lost, 2N and N+N on half of them (one feed lost). A peak above what every PSU
delivers cannot be true (error). A peak above what the surviving PSUs deliver means the redundancy does not
hold at the peak: a PSU lost under full load throttles or trips the node (warning; the seed's own ML-PROD-V4,
2N 2 x 3200 W against a 5.5 kW peak, is such a spec).
"""

from __future__ import annotations

from provision.spec.memory_population import Finding, Severity
from provision.spec.model import NodeSpec


def surviving_watts(psu_count: int, psu_watts: int, redundancy: str) -> int:
    """What the PSUs still deliver once the redundancy is spent (one PSU for N+1, one feed for 2N/N+N)."""
    kept = {"N+1": psu_count - 1, "2N": psu_count // 2, "N+N": psu_count // 2}.get(redundancy, psu_count)
    return kept * psu_watts


def check_power(spec: NodeSpec) -> list[Finding]:
    p = spec.power
    total = p.psu_count * p.psu_watts
    if p.redundancy != "none" and p.psu_count < 2:
        return [Finding(Severity.ERROR, "power.redundancy", f"{p.redundancy} needs at least 2 PSUs, psu_count is "
                        f"{p.psu_count}")]
    if p.peak_draw_w > total:
        return [Finding(Severity.ERROR, "power.peak_draw_w", f"{p.peak_draw_w} W peak, but {p.psu_count} x "
                        f"{p.psu_watts} W PSUs deliver {total} W")]
    kept = surviving_watts(p.psu_count, p.psu_watts, p.redundancy)
    if p.peak_draw_w > kept:
        return [Finding(Severity.WARNING, "power.peak_draw_w", f"{p.peak_draw_w} W peak, but with {p.redundancy} "
                        f"redundancy the PSUs left after a loss deliver {kept} W: the redundancy does not hold at "
                        "the peak")]
    return []
