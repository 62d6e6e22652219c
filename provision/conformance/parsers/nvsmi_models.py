"""Typed view of one `nvidia-smi -q` report, shared by the text and XML parsers."""

from __future__ import annotations

from provision.conformance.parsers._base import Model


class PcieLink(Model):
    """PCIe generation and lane width the GPU negotiated, and the most it supports."""

    gen_current: int | None
    gen_max: int | None
    width_current: int | None
    width_max: int | None


class FabricHealth(Model):
    """The `Fabric > Health` block drivers >= 550 print (590 on H100/H200); None values are N/A."""

    summary: str | None = None
    bandwidth: str | None = None
    route_recovery_in_progress: str | None = None
    route_unhealthy: str | None = None
    access_timeout_recovery: str | None = None
    incorrect_configuration: str | None = None


class FabricInfo(Model):
    """NVLink fabric registration as the driver reports it (535: State/Status only)."""

    state: str | None
    status: str | None
    clique_id: str | None = None
    cluster_uuid: str | None = None
    health: FabricHealth | None = None

    @property
    def completed(self) -> bool:
        """True when the GPU finished fabric registration successfully."""
        return self.state == "Completed" and self.status == "Success"


class RetiredPages(Model):
    """Retired-page counters (pre-Ampere style; N/A on H100, which remaps rows instead)."""

    single_bit_ecc: int | None
    double_bit_ecc: int | None
    pending: bool | None


class RemappedRows(Model):
    """Row-remapping counters (Ampere and later)."""

    correctable: int | None
    uncorrectable: int | None
    pending: bool | None
    failure_occurred: bool | None


class ClockEvents(Model):
    """`Clocks Event Reasons` (drivers >= 535; `Clocks Throttle Reasons` before): True = Active, None = N/A.

    The names and their meaning are NVML's nvmlClocksEventReasons (docs.nvidia.com/deploy/nvml-api,
    group nvmlClocksEventReasons): idle, applications clocks, SW power cap and sync boost are normal
    operation; HW slowdown (with its HW thermal and HW power brake parts) and SW thermal slowdown are
    the GPU protecting itself.
    """

    idle: bool | None = None
    applications_clocks_setting: bool | None = None
    sw_power_cap: bool | None = None
    hw_slowdown: bool | None = None
    hw_thermal_slowdown: bool | None = None
    hw_power_brake_slowdown: bool | None = None
    sync_boost: bool | None = None
    sw_thermal_slowdown: bool | None = None
    display_clock_setting: bool | None = None


class EccErrors(Model):
    """ECC error counts summed over the memory kinds nvidia-smi lists (SRAM, DRAM, ...); None = all N/A."""

    volatile_correctable: int | None = None
    volatile_uncorrectable: int | None = None
    aggregate_correctable: int | None = None
    aggregate_uncorrectable: int | None = None


class GpuInfo(Model):
    """One GPU of an `nvidia-smi -q` report."""

    bus_id: str
    product_name: str
    serial: str | None
    uuid: str
    vbios_version: str
    persistence_mode: bool | None
    mig_mode_current: bool | None
    mig_mode_pending: bool | None
    mig_device_count: int
    ecc_mode_current: bool | None
    ecc_mode_pending: bool | None
    fb_memory_total_mib: int
    pcie: PcieLink
    power_limit_w: float | None
    power_draw_w: float | None
    temperature_gpu_c: int | None
    temperature_memory_c: int | None
    module_id: int | None
    fabric: FabricInfo | None
    retired_pages: RetiredPages | None
    remapped_rows: RemappedRows | None
    clock_events: ClockEvents | None = None
    ecc_errors: EccErrors | None = None
    performance_state: str | None = None


class GpuQueryReport(Model):
    """A whole `nvidia-smi -q` (or `-q -x`) report."""

    timestamp: str | None
    driver_version: str
    cuda_version: str | None
    attached_gpus: int
    gpus: tuple[GpuInfo, ...]
