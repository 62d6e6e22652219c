"""ECC counters of one GPU, summed the same way for `nvidia-smi -q` (text) and `nvidia-smi -q -x` (XML).

Each parser hands over the leaf counters under `Volatile` / `Aggregate` as (name, raw value) pairs:
`SRAM Uncorrectable Parity` / `sram_uncorrectable_parity`, `DRAM Correctable` / `dram_correctable`, ...
A counter is uncorrectable when its name says so, correctable when it says correctable and not
uncorrectable; anything else (thresholds, headers) is not counted. An `N/A` counter is not a zero.
"""

from __future__ import annotations

from collections.abc import Iterable

from provision.conformance.parsers._base import to_int
from provision.conformance.parsers.nvsmi_models import EccErrors

Counters = Iterable[tuple[str, str | None]]


def ecc_sum(tool: str, bus_id: str, counters: Counters | None, uncorrectable: bool) -> int | None:
    """Sum of the (un)correctable counters; None when there are none or every one is N/A."""
    if counters is None:
        return None
    total: int | None = None
    for name, raw in counters:
        lower = name.lower()
        if raw is None or "correctable" not in lower or ("uncorrectable" in lower) is not uncorrectable:
            continue
        count = to_int(tool, f"GPU {bus_id} ECC {name}", raw)
        if count is not None:
            total = (total or 0) + count
    return total


def ecc_errors(tool: str, bus_id: str, volatile: Counters | None, aggregate: Counters | None) -> EccErrors:
    """The four sums of one GPU (each side's counters are read once: a generator is fine)."""
    v = list(volatile) if volatile is not None else None
    a = list(aggregate) if aggregate is not None else None
    return EccErrors(
        volatile_correctable=ecc_sum(tool, bus_id, v, False),
        volatile_uncorrectable=ecc_sum(tool, bus_id, v, True),
        aggregate_correctable=ecc_sum(tool, bus_id, a, False),
        aggregate_uncorrectable=ecc_sum(tool, bus_id, a, True),
    )
