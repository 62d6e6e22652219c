"""Acceptance figures, benchmarks, recorded references, and how the BMC-side drift compares each figure."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import Field

from provision.spec.frozen import Frozen, PositiveFloat, PositiveInt


class Acceptance(Frozen):
    """Acceptance thresholds from the seed; burn-in gates are optional. The figures of an optional hardware
    section (GPUs, scratch, InfiniBand) are required when it is present (NodeSpec's cross-checks)."""

    scratch_seq_read_gbs: PositiveFloat | None = None
    scratch_rand_read_iops_4k: PositiveInt | None = None
    allreduce_latency_us_p99: PositiveFloat | None = None
    allreduce_busbw_gbs: PositiveFloat | None = None
    ib_write_bw_gbps: PositiveFloat | None = None
    dcgm_diag_level: Annotated[int | None, Field(ge=1, le=4)] = None
    scratch_drive_seq_read_gbs: PositiveFloat | None = None
    """Per scratch drive raw sequential read (GB/s). The seed states none; absent, burn-in gates each drive on
    the array's figure over its drive count (the stripe can only reach scratch_seq_read_gbs if each drive
    gives its share)."""
    allreduce_multinode_busbw_gbs: PositiveFloat | None = None
    """NCCL all_reduce bus bandwidth across nodes (GB/s). Absent, burn-in gates on allreduce_busbw_gbs capped at
    what the spec'd HCAs can carry (count x ib_write_bw_gbps / 8): the inter-node ring runs over them."""
    resnet50_images_per_sec: PositiveInt | None = None
    llm_finetune_tokens_per_sec: PositiveInt | None = None


class Benchmark(Frozen):
    """A figure the seed quotes for the class, recorded as given: nothing measures or judges it."""

    score: PositiveFloat
    unit: str = Field(min_length=1, description="What the score counts, as the seed names it")
    source: str = Field(min_length=1, description="Where the figure comes from (e.g. the seed's table)")


class Reference(Frozen):
    """Figures recorded for reference only (no check, no gate)."""

    cpu_benchmark: Benchmark | None = None


class Comparison(StrEnum):
    """How an observed figure is held against the spec's."""

    EXACT = "exact"
    """Observed must equal the spec (a model name, a DIMM size, a count that must not grow)."""
    MINIMUM = "minimum"
    """Observed must be at least the spec (seed figures written "(Minimum)" or "at least": a PSU's rating)."""


COMPARISONS: dict[str, Comparison] = {
    "cpu.model": Comparison.EXACT,
    "cpu.sockets": Comparison.EXACT,
    "cpu.cores_per_socket": Comparison.EXACT,
    "memory.dimm_count": Comparison.EXACT,
    "memory.dimm_size_gb": Comparison.EXACT,
    "memory.total_gb": Comparison.EXACT,
    "memory.type": Comparison.EXACT,
    "gpu.count": Comparison.EXACT,
    "gpu.model": Comparison.EXACT,
    "gpu.memory_gb": Comparison.EXACT,
    "storage.nvme_drives": Comparison.EXACT,
    "storage.boot.count": Comparison.EXACT,
    "storage.scratch.count": Comparison.EXACT,
    "network.ethernet.count": Comparison.EXACT,
    "network.infiniband.count": Comparison.EXACT,
    "power.psu_count": Comparison.EXACT,
    "power.psu_watts": Comparison.MINIMUM,
}
"""The default kind of each figure the BMC-side drift compares. A figure the seed writes as "(Minimum)" or "at
least" (a PSU's rating) is a minimum; the rest are exact. A profile overrides any of them under `comparisons:`
(e.g. `power.psu_count: minimum` for a class that accepts extra PSUs). Figures named min_* (memory.min_speed_mts,
cooling.min_fans) are minimums by their name and are checked node-side by conformance (memory.speed, bmc.fans)."""
