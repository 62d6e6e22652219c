"""Can a profile's PSUs carry its peak draw, with and without their redundancy? Do its parts fit the peak draw, the
PSUs and the chassis cooling? (pure; `spec validate` prints it)

The PSUs deliver `psu_count` x `psu_watts`. Redundancy keeps part of that in reserve: N+1 runs on
`psu_count - 1` PSUs once one is lost, 2N and N+N on half of them (one feed lost). A peak above what every PSU
delivers cannot be true (error). A peak above what the surviving PSUs deliver means the redundancy does not
hold at the peak: a PSU lost under full load throttles or trips the node (warning; the seed's own ML-PROD-V4,
2N 2 x 3200 W against a 5.5 kW peak, is such a spec).
"""

from __future__ import annotations

from dataclasses import dataclass

from provision.spec.findings import Finding, Severity
from provision.spec.model import NodeSpec
from provision.spec.parts import PartsTable, cpu_part, gpu_part


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


@dataclass(frozen=True)
class Budget:
    """What the parts may draw together at peak: the GPUs at their power limit, the CPUs at their part's power, and
    the profile's platform allowance."""

    gpu_w: int
    cpu_w: int
    allowance_w: int
    terms: str  # how the sum is made, e.g. "GPUs 8 x 700 W = 5600 W + CPUs 2 x 350 W (TDP) = 700 W + ..."
    sources: str

    @property
    def total_w(self) -> int:
        return self.gpu_w + self.cpu_w + self.allowance_w


def budget(spec: NodeSpec, table: PartsTable | None = None) -> Budget | None:
    """The power budget of the profile's parts; None when its CPU is not in the parts table (no TDP to add)."""
    cpu = cpu_part(spec.cpu.model, table)
    if cpu is None:
        return None
    c = spec.cpu
    terms = [f"CPUs {c.sockets} x {cpu.power_w} W ({cpu.name} {cpu.power_kind}) = {c.sockets * cpu.power_w} W"]
    sources = [cpu.source]
    gpu_w = 0
    if spec.gpu is not None:
        g = spec.gpu
        gpu_w = g.count * g.power_limit_w
        terms.insert(0, f"GPUs {g.count} x {g.power_limit_w} W (gpu.power_limit_w) = {gpu_w} W")
        board = gpu_part(g.model, table)
        if board is not None:
            sources.append(board.source)
    allowance = spec.power.platform_allowance_w
    terms.append(f"platform allowance {allowance} W" if allowance is not None
                 else "no platform allowance stated (power.platform_allowance_w: 0 W counted)")
    return Budget(gpu_w, c.sockets * cpu.power_w, allowance or 0, " + ".join(terms), "; ".join(sources))


def budget_findings(spec: NodeSpec, table: PartsTable | None = None) -> list[Finding]:
    """The budget against the peak draw, the PSUs left under the stated redundancy, and the chassis cooling limit;
    and the peak draw against the cooling limit. A limit exactly met holds."""
    p, cooling_w = spec.power, spec.cooling.max_system_power_w
    found: list[Finding] = []
    b = budget(spec, table)
    if b is None:
        return [Finding(Severity.WARNING, "power.peak_draw_w", f"{spec.cpu.model!r} is not in the parts table: the "
                        "power budget is not judged")]
    total = f"{b.terms} = {b.total_w} W"
    kept = surviving_watts(p.psu_count, p.psu_watts, p.redundancy)
    limits = [("power.peak_draw_w", p.peak_draw_w, f"peak_draw_w {p.peak_draw_w} W"),
              ("power.psu_watts", kept, f"the {kept} W the PSUs deliver under {p.redundancy} redundancy "
               f"({p.psu_count} x {p.psu_watts} W)")]
    if cooling_w is not None:
        limits.append(("cooling.max_system_power_w", cooling_w, f"the chassis cooling limit of {cooling_w} W"))
    for key, limit, what in limits:
        if b.total_w > limit:
            found.append(Finding(Severity.FINDING, key, f"{total}, above {what} [{b.sources}]"))
    if cooling_w is not None and p.peak_draw_w > cooling_w:
        found.append(Finding(Severity.FINDING, "cooling.max_system_power_w", f"peak_draw_w {p.peak_draw_w} W is "
                             f"above the chassis cooling limit of {cooling_w} W (the profile's own figures)"))
    return found
