"""GPU checks: count, driver, and per GPU model, memory, modes, PCIe link, power limit, NVLinks."""

from __future__ import annotations

from provision.conformance.checks import gpu_health
from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers.nvsmi_list import NvlinkGpu, parse_nvlink_status
from provision.conformance.parsers.nvsmi_models import GpuInfo, GpuQueryReport
from provision.conformance.parsers.nvsmi_query import parse_nvidia_smi_query
from provision.spec.model import NodeSpec

AREA = "gpu"
QUERY = "nvidia_smi_q"
NVLINK = "nvidia_smi_nvlink"


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    if spec.gpu is None:  # no gpu section: no GPU checks at all (not a pass)
        return []
    found = [Probe(name=QUERY, command="nvidia-smi -q")]
    if spec.gpu.nvlink is not None and level is not Level.QUICK:
        found.append(Probe(name=NVLINK, command="nvidia-smi nvlink -s"))
    return found + gpu_health.probes(spec, level)


def evaluate(ctx: Context) -> None:
    if ctx.spec.gpu is None:
        return
    gpu = ctx.spec.gpu
    driver = ctx.spec.need_driver().version
    try:
        report = ctx.parsed(QUERY, parse_nvidia_smi_query)
    except Unreadable as why:
        ctx.unreadable("gpu.count", AREA, "GPUs present", gpu.count, why.reason)
        ctx.unreadable("gpu.driver_version", AREA, "NVIDIA driver version", driver, why.reason)
        return
    ctx.equal("gpu.count", AREA, "GPUs present", gpu.count, len(report.gpus))
    ctx.equal("gpu.driver_version", AREA, "NVIDIA driver version", driver, report.driver_version)
    for index, info in enumerate(report.gpus):
        _per_gpu(ctx, index, info)
    if ctx.level is not Level.QUICK:
        _nvlinks(ctx, report)
        gpu_health.evaluate_gpus(ctx, report.gpus)


def _per_gpu(ctx: Context, index: int, info: GpuInfo) -> None:
    gpu = ctx.spec.need_gpu()
    pid = f"gpu.{index}"
    where = f"GPU {index} ({info.bus_id})"
    ctx.equal(f"{pid}.model", AREA, f"{where} model", gpu.model, info.product_name)
    if ctx.level is Level.QUICK:
        return
    gib = info.fb_memory_total_mib / 1024
    ctx.record(
        f"{pid}.memory", AREA, f"{where} memory (GB, rounded)", gpu.memory_gb,
        f"{round(gib)} ({info.fb_memory_total_mib} MiB)", round(gib) == gpu.memory_gb,
    )  # fmt: skip
    ctx.equal(f"{pid}.persistence", AREA, f"{where} persistence mode", gpu.persistence_mode, info.persistence_mode)
    ctx.equal(f"{pid}.ecc", AREA, f"{where} ECC mode (current)", gpu.ecc, info.ecc_mode_current)
    mig = bool(info.mig_mode_current)  # N/A: the GPU has no MIG, so MIG is not enabled
    ctx.record(
        f"{pid}.mig", AREA, f"{where} MIG mode (current)", gpu.mig,
        "n/a" if info.mig_mode_current is None else mig, mig == gpu.mig,
    )  # fmt: skip
    # The generation as trained now is judged with the health checks (gpu_health._pcie), not the max it supports.
    ctx.equal(f"{pid}.pcie_width", AREA, f"{where} PCIe link width (current)", gpu.pcie.width, info.pcie.width_current)
    limit = info.power_limit_w
    ctx.record(
        f"{pid}.power_limit", AREA, f"{where} power limit (W)", gpu.power_limit_w,
        limit, limit is not None and round(limit) == gpu.power_limit_w,
    )  # fmt: skip


def _nvlinks(ctx: Context, report: GpuQueryReport) -> None:
    nvlink = ctx.spec.need_gpu().nvlink
    if nvlink is None:
        return
    expected = f"{nvlink.links_per_gpu} active at {nvlink.link_speed_gbs} GB/s"
    try:
        per_gpu = {g.uuid: g for g in ctx.parsed(NVLINK, parse_nvlink_status)}
    except Unreadable as why:
        ctx.unreadable("gpu.nvlink", AREA, "NVLinks of every GPU", expected, why.reason)
        return
    for index, info in enumerate(report.gpus):
        _nvlink(ctx, index, info.bus_id, per_gpu.get(info.uuid), expected)


def _nvlink(ctx: Context, index: int, bus_id: str, links: NvlinkGpu | None, expected: str) -> None:
    nvlink = ctx.spec.need_gpu().nvlink
    assert nvlink is not None
    desc = f"GPU {index} ({bus_id}) NVLinks active at spec speed"
    if links is None:
        ctx.record(f"gpu.{index}.nvlink", AREA, desc, expected, "GPU absent from `nvlink -s`", False)
        return
    at_speed = [
        link for link in links.active_links
        if link.speed_gbps is not None and abs(link.speed_gbps - nvlink.link_speed_gbs) < 0.01
    ]  # fmt: skip
    speedy = {link.link for link in at_speed}  # link numbers are 0..n-1, each once (the parser checks)
    down = [str(link.link) for link in links.links if link.link not in speedy]
    found = f"{len(at_speed)} of {len(links.links)} at spec speed"
    detail = f"links not active at spec speed: {', '.join(down)}" if down else ""
    passed = len(at_speed) == nvlink.links_per_gpu == len(links.links)
    ctx.record(f"gpu.{index}.nvlink", AREA, desc, expected, found, passed, detail)
