"""GPU health, per GPU, against the spec's gpu.health thresholds (provision/spec/hardware.py GpuHealth).

From `nvidia-smi -q`: PCIe link generation and width as CURRENTLY trained, row remapping (pending /
failure / uncorrectable count), retired pages, ECC volatile uncorrectable errors, clocks event reasons,
GPU and memory temperature (warn and fail tiers). From the kernel log: the Xid events since boot. From
`nvidia-smi nvlink -e`: the NVLink error counters. Every record names the GPU (index and PCI bus id).

Code paths that depend on what was never run here: a real H100's driver printing Xids, row remaps and
throttle reasons (the formats are from real captures and NVIDIA's documents; the lab's twins print them
from the same formats), and real NVLink error counters (documented format, no capture).
"""

from __future__ import annotations

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import Probe
from provision.conformance.model import Level, Outcome, Threshold
from provision.conformance.parsers.kernel_log import XidEvent, parse_xid_events
from provision.conformance.parsers.nvsmi_errors import NvlinkErrors, parse_nvlink_errors
from provision.conformance.parsers.nvsmi_models import ClockEvents, GpuInfo
from provision.spec.hardware import GpuTemperature
from provision.spec.model import NodeSpec

AREA = "gpu"
KERNEL_LOG = "kernel_log"
NVLINK_ERRORS = "nvidia_smi_nvlink_errors"
# The ring buffer first (root reads it on every distribution); the journal's kernel messages since boot
# when dmesg is refused (dmesg_restrict). A ring buffer that wrapped on a long-running node may have lost
# early Xids: the journal keeps them, dmesg does not (a bring-up verify runs soon after boot).
KERNEL_LOG_COMMAND = "dmesg 2>/dev/null || journalctl -k -b --no-pager -q"
# Reasons that mean the GPU slows itself down to protect itself (NVML nvmlClocksEventReasons); idle,
# applications clocks, SW power cap, sync boost and display clock are normal operation and ignored.
SLOWDOWNS = {
    "hw_slowdown": "HW Slowdown",
    "hw_thermal_slowdown": "HW Thermal Slowdown",
    "hw_power_brake_slowdown": "HW Power Brake Slowdown",
    "sw_thermal_slowdown": "SW Thermal Slowdown",
}
# NVLink counters that fail above the maximum; replays are retransmissions the link absorbs: they warn.
NVLINK_FAILING = ("CRC Errors", "Recovery Errors")
NVLINK_WARNING = ("Replay Errors",)


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    if level is Level.QUICK:
        return []
    found = [Probe(name=KERNEL_LOG, command=KERNEL_LOG_COMMAND)]
    if spec.need_gpu().nvlink is not None:
        found.append(Probe(name=NVLINK_ERRORS, command="nvidia-smi nvlink -e"))
    return found


def where(index: int, info: GpuInfo) -> str:
    return f"GPU {index} ({info.bus_id})"


def evaluate_gpus(ctx: Context, gpus: tuple[GpuInfo, ...]) -> None:
    """Every health check of every GPU of `nvidia-smi -q` (called by the gpu module at full level)."""
    first = len(ctx.results)
    for index, info in enumerate(gpus):
        _pcie(ctx, index, info)
        _row_remap(ctx, index, info)
        _retired_pages(ctx, index, info)
        _ecc(ctx, index, info)
        _clocks(ctx, index, info)
        health = ctx.spec.need_gpu().health
        _temperature(ctx, f"gpu.{index}.temperature", f"{where(index, info)} GPU temperature",
                     info.temperature_gpu_c, health.gpu_temperature)
        _temperature(ctx, f"gpu.{index}.memory_temperature", f"{where(index, info)} memory temperature",
                     info.temperature_memory_c, health.memory_temperature)
    _xids(ctx, gpus)
    if ctx.spec.need_gpu().nvlink is not None:
        _nvlink_errors(ctx, gpus)
    _name_the_gpus(ctx, first, gpus)


def _name_the_gpus(ctx: Context, first: int, gpus: tuple[GpuInfo, ...]) -> None:
    """A health result that is not a pass names its GPU in the detail too (reports show id, found, detail)."""
    names = {f"gpu.{index}.": where(index, info) for index, info in enumerate(gpus)}
    for n in range(first, len(ctx.results)):
        result = ctx.results[n]
        name = next((v for k, v in names.items() if result.id.startswith(k)), None)
        if name is None or result.outcome is Outcome.PASS or name in result.detail:
            continue
        ctx.results[n] = result.model_copy(update={"detail": f"{name}; {result.detail}" if result.detail else name})


def _pcie(ctx: Context, index: int, info: GpuInfo) -> None:
    """The link as trained NOW (a GPU trained down to Gen4 or x8 in a Gen5 x16 slot fails)."""
    pcie, spec = info.pcie, ctx.spec.need_gpu().pcie
    desc = f"{where(index, info)} PCIe generation (current)"
    found = f"Gen{pcie.gen_current} (max Gen{pcie.gen_max})"
    if pcie.gen_current is None:
        ctx.error(f"gpu.{index}.pcie_gen", AREA, desc, spec.generation, "nvidia-smi reports no current generation")
    elif pcie.gen_current >= spec.generation:
        ctx.result(f"gpu.{index}.pcie_gen", AREA, desc, f"Gen{spec.generation}", found, Outcome.PASS)
    else:
        # A GPU in a low P-state may train its link down to save power (the A10G capture: Gen1 of 4 at P8);
        # an H100 in P0 keeps it (captures). Below spec in P0 fails; in a power-saving state it warns.
        saving = info.performance_state not in (None, "P0")
        why = f"in {info.performance_state}: the link may be power-saving; check again under load" if saving else ""
        ctx.result(f"gpu.{index}.pcie_gen", AREA, desc, f"Gen{spec.generation}", found,
                   Outcome.WARN if saving else Outcome.FAIL, why)


def _row_remap(ctx: Context, index: int, info: GpuInfo) -> None:
    desc = f"{where(index, info)} row remapping: none pending, no failure"
    limit = ctx.spec.need_gpu().health.remapped_rows_uncorrectable_max
    rows = info.remapped_rows
    if rows is None or rows.pending is None or rows.failure_occurred is None:
        ctx.error(f"gpu.{index}.row_remap", AREA, desc, "none pending", "nvidia-smi reports no row remapping state")
        return
    problems = []
    if rows.pending:
        problems.append("remap pending (the GPU needs a reset)")
    if rows.failure_occurred:
        problems.append("remapping failure occurred (RMA criterion)")
    if rows.uncorrectable is not None and rows.uncorrectable > limit:
        problems.append(f"{rows.uncorrectable} rows remapped for uncorrectable errors (> {limit})")
    counts = f"{rows.uncorrectable or 0} uncorrectable, {rows.correctable or 0} correctable"
    found = "; ".join(problems) or f"none pending ({counts})"
    ctx.record(f"gpu.{index}.row_remap", AREA, desc, "none pending, no failure", found, not problems)


def _retired_pages(ctx: Context, index: int, info: GpuInfo) -> None:
    """Pre-Ampere page retirement; N/A on GPUs that remap rows instead (H100): nothing to judge then."""
    pages = info.retired_pages
    if pages is None or (pages.single_bit_ecc is None and pages.double_bit_ecc is None and pages.pending is None):
        return
    limit = ctx.spec.need_gpu().health.retired_pages_max
    total = (pages.single_bit_ecc or 0) + (pages.double_bit_ecc or 0)
    problems = ([f"{total} pages retired (>= {limit})"] if total >= limit else []) + (
        ["retirement pending (needs a reboot)"] if pages.pending else [])
    ctx.record(f"gpu.{index}.retired_pages", AREA, f"{where(index, info)} retired pages", f"< {limit}, none pending",
               "; ".join(problems) or f"{total} retired, none pending", not problems)


def _ecc(ctx: Context, index: int, info: GpuInfo) -> None:
    desc = f"{where(index, info)} ECC volatile uncorrectable errors"
    limit = ctx.spec.need_gpu().health.ecc_volatile_uncorrectable_max
    count = info.ecc_errors.volatile_uncorrectable if info.ecc_errors else None
    if count is None:
        ctx.error(f"gpu.{index}.ecc_errors", AREA, desc, f"<= {limit}", "nvidia-smi reports no volatile ECC counts")
        return
    ctx.record(f"gpu.{index}.ecc_errors", AREA, desc, f"<= {limit}", count, count <= limit)


def _clocks(ctx: Context, index: int, info: GpuInfo) -> None:
    desc = f"{where(index, info)} clocks not slowed down (HW slowdown, HW thermal, power brake, SW thermal)"
    events: ClockEvents | None = info.clock_events
    if events is None:
        ctx.error(f"gpu.{index}.clocks", AREA, desc, "none active", "nvidia-smi reports no clocks event reasons")
        return
    active = [name for field, name in SLOWDOWNS.items() if getattr(events, field)]
    ctx.record(f"gpu.{index}.clocks", AREA, desc, "none active", ", ".join(active) + " active" if active else "none",
               not active)


def _temperature(ctx: Context, check_id: str, desc: str, value: int | None, tiers: GpuTemperature) -> None:
    threshold = Threshold(warn=tiers.warn_c, fail=tiers.fail_c, unit="C")
    if value is None:
        ctx.error(check_id, AREA, desc, threshold.describe(), "nvidia-smi reports no temperature")
        return
    ctx.tiered(check_id, AREA, desc, float(value), threshold)


def _xid_outcome(ctx: Context, events: list[XidEvent]) -> tuple[Outcome, str]:
    failing = set(ctx.spec.need_gpu().health.failing_xids)
    if not events:
        return Outcome.PASS, "none"
    shown = "; ".join(f"Xid {e.code}" + (f" ({e.message[:80]})" if e.message else "") for e in events[:5])
    more = f" (+{len(events) - 5} more)" if len(events) > 5 else ""
    bad = any(e.code in failing for e in events)
    return (Outcome.FAIL if bad else Outcome.WARN), shown + more


def _xids(ctx: Context, gpus: tuple[GpuInfo, ...]) -> None:
    expected = "no Xid since boot"
    try:
        events = ctx.parsed(KERNEL_LOG, parse_xid_events)
    except Unreadable as why:
        ctx.unreadable("gpu.xid", AREA, "Xid events in the kernel log", expected, why.reason)
        return
    claimed: set[int] = set()  # positions in `events` of the Xids some listed GPU logged
    for index, info in enumerate(gpus):
        positions = [n for n, e in enumerate(events) if e.matches(info.bus_id)]
        claimed.update(positions)
        mine = [events[n] for n in positions]
        outcome, found = _xid_outcome(ctx, mine)
        ctx.result(f"gpu.{index}.xid", AREA, f"{where(index, info)} Xid events since boot", expected, found, outcome,
                   "failing Xids: " + ", ".join(map(str, ctx.spec.need_gpu().health.failing_xids)) if mine else "")
    stray = [e for n, e in enumerate(events) if n not in claimed]
    if stray:  # e.g. a GPU that fell off the bus (Xid 79) is no longer in nvidia-smi's list
        outcome, found = _xid_outcome(ctx, stray)
        pcis = ", ".join(sorted({e.pci for e in stray}))
        ctx.result("gpu.xid", AREA, f"Xid events of GPUs nvidia-smi does not list ({pcis})", expected, found, outcome)


def _nvlink_errors(ctx: Context, gpus: tuple[GpuInfo, ...]) -> None:
    limit = ctx.spec.need_gpu().health.nvlink_errors_max
    expected = f"CRC and recovery errors <= {limit}"
    try:
        per_gpu = {g.uuid: g for g in ctx.parsed(NVLINK_ERRORS, parse_nvlink_errors)}
    except Unreadable as why:
        ctx.unreadable("gpu.nvlink_errors", AREA, "NVLink error counters of every GPU", expected, why.reason)
        return
    for index, info in enumerate(gpus):
        desc = f"{where(index, info)} NVLink error counters"
        counters: NvlinkErrors | None = per_gpu.get(info.uuid)
        if counters is None or not counters.counters:
            ctx.error(f"gpu.{index}.nvlink_errors", AREA, desc, expected, "GPU absent from `nvidia-smi nvlink -e`")
            continue
        totals = {name: counters.total(name) for name in (*NVLINK_FAILING, *NVLINK_WARNING)}
        found = ", ".join(f"{name} {count}" for name, count in totals.items())
        if any(totals[n] > limit for n in NVLINK_FAILING):
            outcome = Outcome.FAIL
        elif any(totals[n] > limit for n in NVLINK_WARNING):
            outcome = Outcome.WARN
        else:
            outcome = Outcome.PASS
        ctx.result(f"gpu.{index}.nvlink_errors", AREA, desc, expected, found, outcome)
