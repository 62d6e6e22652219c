"""The node's hardware sections of the spec: processors, memory, GPUs, network, power and cooling."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import Field, model_validator

from provision.spec.frozen import Frozen, NonNegativeInt, PositiveFloat, PositiveInt


class Cpu(Frozen):
    """Host processors."""

    vendor: Literal["intel", "amd"]
    model: str = Field(min_length=1, description="Model name as lscpu/Redfish report it")
    sockets: PositiveInt
    cores_per_socket: PositiveInt
    threads_per_core: PositiveInt
    threads: PositiveInt | None = None
    """Logical CPUs, where they are not sockets x cores x threads_per_core: a hybrid Intel Core part (its
    P-cores run two threads, its E-cores one: an i5-13500 has 14 cores and 20 threads)."""
    base_clock_ghz: PositiveFloat
    """Nominal (base) clock; a hybrid Intel Core part's P-core base clock. Verify reads it from SMBIOS (dmidecode
    type 4 Current Speed); `spec validate` holds it against the part (provision/spec/parts.py)."""
    l3_cache_mb_per_socket: PositiveInt
    """L3 of one socket in MB (MiB, as vendors and SMBIOS count cache); verify reads SMBIOS type 7 (Level 3)."""
    isa_flags: tuple[str, ...] = Field(description="Flags required in /proc/cpuinfo, e.g. avx512f, amx_tile")
    pcie_generation: PositiveInt
    pcie_lanes: PositiveInt
    """PCIe lanes of one socket, as the part's data sheet counts them (`spec validate` holds it against the part)."""

    @property
    def total_cores(self) -> int:
        return self.sockets * self.cores_per_socket

    @property
    def total_threads(self) -> int:
        return self.threads if self.threads is not None else self.total_cores * self.threads_per_core


class Memory(Frozen):
    """System memory."""

    total_gb: PositiveInt
    dimm_count: PositiveInt
    dimm_size_gb: PositiveInt
    type: Literal["DDR4", "DDR5"]
    ecc: bool
    min_speed_mts: PositiveInt = Field(description="Slowest configured DIMM speed (MT/s) the node must run at")
    channels_per_socket: PositiveInt = Field(description="Populated memory channels on each socket")
    dimms_per_channel: PositiveInt = Field(description="DIMMs in every populated channel")
    module: Literal["RDIMM", "UDIMM"] | None = None
    """Registered or unbuffered DIMMs (the seed's "DDR5 ECC RDIMM"); verify holds every DIMM's SMBIOS Type Detail
    against it. Absent: the seed does not say, and verify does not judge it."""

    @model_validator(mode="after")
    def _dimms_add_up(self) -> Memory:
        if self.dimm_count * self.dimm_size_gb != self.total_gb:
            raise ValueError(
                f"total_gb {self.total_gb} != dimm_count {self.dimm_count} x dimm_size_gb {self.dimm_size_gb}"
            )
        return self


class GpuInterconnect(StrEnum):
    NVSWITCH = "nvswitch"
    PCIE = "pcie"


class NvLink(Frozen):
    """NVLink expectations per GPU (NVSwitch systems)."""

    generation: PositiveInt
    links_per_gpu: PositiveInt
    link_speed_gbs: PositiveFloat = Field(description="Per-link speed as `nvidia-smi nvlink -s` prints it (GB/s)")


class Pcie(Frozen):
    generation: PositiveInt
    width: PositiveInt


# Xid codes that make a GPU unfit until serviced or reset: Azure HPC Node Health Checks' default list
# (github.com/Azure/azurehpc-health-checks, customTests/azure_gpu_xid.nhc: "48 56 57 58 62 63 64 65 68 69
# 73 74 79 80 81 92 119 120"); what each means is NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors:
# 48 double-bit ECC, 63/64 page retirement or row remap event/failure, 74 NVLink error, 79 fallen off the
# bus, 92 high single-bit ECC rate, 119/120 GSP errors). Any other Xid since boot is a warning.
DEFAULT_FAILING_XIDS = (48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119, 120)


class GpuTemperature(Frozen):
    """A warn and a fail tier in degrees C (fail must be above warn)."""

    warn_c: PositiveInt
    fail_c: PositiveInt

    @model_validator(mode="after")
    def _ordered(self) -> GpuTemperature:
        if self.fail_c <= self.warn_c:
            raise ValueError(f"fail_c ({self.fail_c}) must be above warn_c ({self.warn_c})")
        return self


class GpuHealth(Frozen):
    """GPU health thresholds (defaults from NVIDIA's documents and Azure NHC's practice; see each field).

    - Row remapping (NVIDIA "GPU Memory Error Management", docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt):
      `Pending` means a row will be remapped at the next GPU reset (the GPU needs a reset); `Remapping Failure
      Occurred` means a remap failed, which is NVIDIA's RMA criterion. Both fail, as Azure NHC's
      azure_gpu_ecc.nhc does; it also fails above 512 rows remapped for uncorrectable errors.
    - Retired pages (NVIDIA "Dynamic Page Retirement", docs.nvidia.com/deploy/dynamic-page-retirement):
      pages pending retirement need a reboot; NHC fails a GPU whose retired single + double bit pages reach
      62 with retirement pending (the table holds 64 pages); we fail at `retired_pages_max` or more.
    - ECC volatile uncorrectable errors since the driver loaded: any fails (NHC fails any SRAM uncorrectable).
    - Clocks event reasons (NVML nvmlClocksEventReasons): HW slowdown, HW thermal, HW power brake and SW
      thermal slowdown fail; idle, applications clocks, SW power cap and sync boost are normal operation
      (NHC's azure_gpu_clock_throttling.nhc ignores idle, none and SW power cap).
    - Temperatures: the project's tiers, below the slowdown temperature of H100/H200 boards (nvidia-smi's
      `GPU Slowdown Temp`, about 87-90 C on the captured H100s' T.Limit scale) so a hot GPU warns first.
    - NVLink error counters (`nvidia-smi nvlink -e`): recovery and CRC errors above the maximum fail;
      replays are retransmissions the link absorbs and only warn (GCM's dcgmi nvlink check defaults all to 0).
    """

    failing_xids: tuple[int, ...] = DEFAULT_FAILING_XIDS
    retired_pages_max: NonNegativeInt = 60
    remapped_rows_uncorrectable_max: NonNegativeInt = 512
    ecc_volatile_uncorrectable_max: NonNegativeInt = 0
    gpu_temperature: GpuTemperature = GpuTemperature(warn_c=80, fail_c=87)
    memory_temperature: GpuTemperature = GpuTemperature(warn_c=85, fail_c=95)
    nvlink_errors_max: NonNegativeInt = 0


class Gpu(Frozen):
    """Accelerators."""

    model: str = Field(min_length=1, description="Product name as nvidia-smi reports it")
    architecture: str
    count: PositiveInt
    memory_gb: PositiveInt
    memory_bandwidth_tbs: PositiveFloat
    form_factor: Literal["SXM", "PCIe"]
    interconnect: GpuInterconnect
    nvlink: NvLink | None = None
    pcie: Pcie
    persistence_mode: bool = True
    ecc: bool = True
    mig: bool = False
    power_limit_w: PositiveInt
    health: GpuHealth = GpuHealth()

    @model_validator(mode="after")
    def _nvlink_matches_interconnect(self) -> Gpu:
        if self.interconnect is GpuInterconnect.NVSWITCH and self.nvlink is None:
            raise ValueError("interconnect nvswitch needs an nvlink section")
        if self.interconnect is GpuInterconnect.PCIE and self.nvlink is not None:
            raise ValueError("interconnect pcie cannot have an nvlink section")
        return self

    @property
    def fabric_manager(self) -> bool:
        """NVSwitch systems need nvidia-fabricmanager."""
        return self.interconnect is GpuInterconnect.NVSWITCH


class Ethernet(Frozen):
    count: PositiveInt
    speed_gbps: PositiveInt
    mtu: PositiveInt = 1500


class IpoIb(Frozen):
    mode: Literal["datagram", "connected"]
    mtu: Annotated[int, Field(ge=256, le=65520)]


class InfiniBand(Frozen):
    count: NonNegativeInt
    rate_gbps: PositiveInt
    generation: Literal["HDR", "NDR", "XDR", "EDR"]
    link_layer: Literal["InfiniBand", "Ethernet"]
    ipoib: IpoIb | None = None


class Network(Frozen):
    ethernet: Ethernet
    infiniband: InfiniBand | None = None


class Power(Frozen):
    psu_count: PositiveInt
    psu_watts: PositiveInt
    redundancy: Literal["N+1", "2N", "N+N", "none"]
    efficiency: str
    peak_draw_w: PositiveInt
    platform_allowance_w: NonNegativeInt | None = None
    """What the node draws beside its CPUs and GPUs at peak (memory, drives, NICs, fans, conversion losses): the
    profile's stated allowance. `spec validate` adds it to the parts' CPU TDPs and the GPUs' power limits and holds
    the sum against peak_draw_w, the PSUs under their redundancy and the chassis cooling limit. Absent: 0 W, and
    the budget line says no allowance is stated."""


class Cooling(Frozen):
    fan_redundancy: Literal["N+1", "N+2", "none"]
    min_fans: PositiveInt = Field(description="Fans present and healthy; the redundancy's spare fans included")
    warn_internal_ambient_c: PositiveFloat
    fail_internal_ambient_c: PositiveFloat | None = Field(
        default=None, description="Internal ambient that fails verify (absent: critical_component_c)")
    max_inlet_c: PositiveFloat
    critical_component_c: PositiveFloat
    max_system_power_w: PositiveInt | None = None
    """The total system power the chassis cooling is rated to remove (seed 1.1: "Supports up to 3500W total
    system power draw"); `spec validate` holds the peak draw and the power budget against it. Absent: not stated."""

    @model_validator(mode="after")
    def _ambient_tiers(self) -> Cooling:
        fail = self.fail_internal_ambient_c
        if self.warn_internal_ambient_c >= self.critical_component_c:
            raise ValueError(f"warn_internal_ambient_c {self.warn_internal_ambient_c:g} must be below "
                             f"critical_component_c {self.critical_component_c:g}")
        if fail is not None and fail <= self.warn_internal_ambient_c:
            raise ValueError(f"fail_internal_ambient_c {fail:g} must be above warn_internal_ambient_c "
                             f"{self.warn_internal_ambient_c:g}")
        if fail is not None and fail > self.critical_component_c:
            raise ValueError(f"fail_internal_ambient_c {fail:g} must not be above critical_component_c "
                             f"{self.critical_component_c:g}")
        return self

    @property
    def ambient_fail_c(self) -> float:
        """The internal ambient that fails: fail_internal_ambient_c, else critical_component_c."""
        return self.fail_internal_ambient_c if self.fail_internal_ambient_c is not None else self.critical_component_c
