"""The node spec: one frozen, typed description of what a node class must be.

Built from the `provision_spec` variable of each host's merged Ansible variables, so the
Ansible roles and the Python side read the very same figures.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SecretStr, field_validator, model_validator

from provision.errors import SpecError
from provision.spec.bmc_setup import BmcSetup
from provision.spec.containers import Containers
from provision.spec.digests import check_sha256
from provision.spec.nfs import NfsMount, unique_mounts
from provision.spec.patterns import HostPatterns
from provision.spec.platforms import AppliesTo, Platforms, entries_named, missing_applies_to
from provision.spec.slurm import SlurmSettings
from provision.spec.versions import VersionScheme, check_apt_version, check_scheme, check_version

PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]


Version = Annotated[str, Field(min_length=1)]


class Frozen(BaseModel):
    """Base of every spec model: immutable, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


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


class BootRaid(Frozen):
    level: Literal["raid1"]
    device: str = Field(pattern=r"^/dev/md[0-9a-z_]+$")
    mountpoint: str = Field(pattern=r"^/")


class BootStorage(Frozen):
    """The OS drive pair."""

    count: PositiveInt
    size_tb: PositiveFloat
    interface: Literal["nvme", "sata", "sas"]
    form: str
    raid: BootRaid | None = None
    """Absent: the boot drive(s) carry no md array (a catalogue server installed on one of its drives)."""

    @model_validator(mode="after")
    def _raid1_needs_two(self) -> BootStorage:
        if self.raid is not None and self.raid.level == "raid1" and self.count != 2:
            raise ValueError(f"raid1 boot needs exactly 2 drives, count is {self.count}")
        return self


_CAL_WORD = r"[0-9*][0-9*,./~]*"
_CAL_DOW = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)(?:(?:,|\.\.)(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun))*"
_ON_CALENDAR_RE = re.compile(
    rf"^(?:{_CAL_DOW}\s+)?(?:{_CAL_WORD}-{_CAL_WORD}-{_CAL_WORD}\s+)?{_CAL_WORD}:{_CAL_WORD}(?::{_CAL_WORD})?$"
)
# systemd.time(7) shorthands and the longest gap between two of their runs (days).
CALENDAR_SHORTHANDS: dict[str, float] = {
    "hourly": 1 / 24, "daily": 1, "weekly": 7, "monthly": 31, "quarterly": 92, "semiannually": 184,
    "yearly": 366, "annually": 366,
}
SNAPSHOT_INTERVALS_H: dict[str, int] = {"hourly": 1, "daily": 24, "weekly": 24 * 7, "monthly": 24 * 31}
"""The longest gap between two snapshots of each sanoid period (hours; a month is at most 31 days)."""
_DATASET_RE = re.compile(r"^[A-Za-z0-9_.:\-]+(?:/[A-Za-z0-9_.:\-]+)*$")
_EMAIL_RE = re.compile(r"^[^@\s,;'\"]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}$")


class SnapshotSchedule(Frozen):
    """Snapshots of the scratch pool (sanoid's template): how many of each period to keep.

    The scratch stripe has no redundancy (seed 5.4): snapshots protect checkpoints from deletion and
    overwrite, not from a lost drive."""

    hourly: NonNegativeInt = 24
    daily: NonNegativeInt = 7
    weekly: NonNegativeInt = 4
    monthly: NonNegativeInt = 0
    datasets: tuple[str, ...] = Field(default=(), description="Datasets under the pool to snapshot, relative "
                                      "to it (e.g. checkpoints); none: the pool's root dataset")
    recursive: bool = Field(default=True, description="Snapshot the child datasets as well")
    grace_minutes: Annotated[int, Field(ge=0, le=1440)] = Field(
        default=30, description="How late past its period the newest snapshot may be before verify fails")

    @field_validator("datasets")
    @classmethod
    def _datasets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _DATASET_RE.match(name):
                raise ValueError(f"{name!r} is not a dataset name relative to the pool (e.g. checkpoints/run1)")
        if len(set(value)) != len(value):
            raise ValueError(f"datasets listed twice: {sorted({d for d in value if value.count(d) > 1})}")
        return value

    @model_validator(mode="after")
    def _something_kept(self) -> SnapshotSchedule:
        if not any(self.retention.values()):
            raise ValueError("hourly, daily, weekly and monthly are all 0: nothing would be snapshotted "
                             "(leave snapshots out instead)")
        return self

    @property
    def retention(self) -> dict[str, int]:
        """Snapshots kept per period (periods with 0 are not taken)."""
        return {"hourly": self.hourly, "daily": self.daily, "weekly": self.weekly, "monthly": self.monthly}


class ScrubSchedule(Frozen):
    """When the scratch pool is scrubbed (a systemd OnCalendar expression) and how old a scrub may get."""

    on_calendar: str = Field(default="monthly", description="systemd.time(7) calendar event, e.g. monthly or "
                             "'Sun *-*-01..07 03:00:00'")
    max_age_days: PositiveFloat | None = Field(
        default=None, description="Oldest acceptable last scrub; default: the shorthand's period + grace_days "
        "(required for a full calendar expression)")
    grace_days: Annotated[float, Field(ge=0)] = 2.0

    @field_validator("on_calendar")
    @classmethod
    def _calendar(cls, value: str) -> str:
        if value in CALENDAR_SHORTHANDS or _ON_CALENDAR_RE.match(value):
            return value
        raise ValueError(f"{value!r} is not a systemd OnCalendar expression (a shorthand such as "
                         f"{', '.join(CALENDAR_SHORTHANDS)}, or '[DOW] YYYY-MM-DD HH:MM[:SS]' with * , .. /)")

    @model_validator(mode="after")
    def _age_known(self) -> ScrubSchedule:
        if self.on_calendar not in CALENDAR_SHORTHANDS and self.max_age_days is None:
            raise ValueError(f"on_calendar {self.on_calendar!r} is not a shorthand: set max_age_days")
        return self

    @property
    def allowed_age_days(self) -> float:
        """How old the last finished scrub may be before verify fails."""
        if self.max_age_days is not None:
            return self.max_age_days
        return CALENDAR_SHORTHANDS[self.on_calendar] + self.grace_days


class ZedSettings(Frozen):
    """The ZFS Event Daemon: who hears of a faulted drive, a failed scrub or checksum errors."""

    email: str | None = Field(default=None, description="ZED_EMAIL_ADDR")
    hook: str | None = Field(default=None, pattern=r"^/[^\s'\"]+$",
                             description="An executable on the node run for every event (ZEVENT_* environment)")
    notify_verbose: bool = Field(default=False, description="ZED_NOTIFY_VERBOSE: also notify healthy scrubs")
    notify_interval_s: PositiveInt = Field(default=3600, description="ZED_NOTIFY_INTERVAL_SECS")
    notify_data: bool = Field(default=True, description="ZED_NOTIFY_DATA: notify data (checksum) errors")

    @field_validator("email")
    @classmethod
    def _email(cls, value: str | None) -> str | None:
        if value is not None and not _EMAIL_RE.match(value):
            raise ValueError(f"{value!r} is not an e-mail address")
        return value

    @model_validator(mode="after")
    def _someone_hears(self) -> ZedSettings:
        if self.email is None and self.hook is None:
            raise ValueError("zed needs an email or a hook: events would reach no one")
        return self


class ZfsLayout(Frozen):
    """ZFS pool over the scratch drives."""

    pool: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.\-]*$")
    layout: Literal["stripe", "mirror", "raidz1", "raidz2"]
    vdevs: PositiveInt
    mountpoint: str = Field(pattern=r"^/")
    ashift: Annotated[int, Field(ge=9, le=16)]
    recordsize: str = Field(pattern=r"^[0-9]+[KM]$")
    compression: Literal["off", "lz4", "zstd", "gzip"]
    atime: Literal["on", "off"]
    snapshots: SnapshotSchedule | None = Field(default=None, description="Snapshot schedule (sanoid)")
    scrub: ScrubSchedule | None = Field(default=None, description="Scrub timer; absent: no scrub is scheduled")
    zed: ZedSettings | None = Field(default=None, description="ZFS Event Daemon notifications")

    def dataset_names(self) -> tuple[str, ...]:
        """Full names of the datasets the snapshot schedule covers (the pool itself when it names none)."""
        if self.snapshots is None:
            return ()
        return tuple(f"{self.pool}/{d}" for d in self.snapshots.datasets) or (self.pool,)


class ScratchStorage(Frozen):
    """The high-speed scratch set."""

    count: PositiveInt
    size_tb: PositiveFloat
    interface: Literal["nvme", "sata", "sas"]
    pcie_generation: PositiveInt
    zfs: ZfsLayout

    @model_validator(mode="after")
    def _layout_matches_drives(self) -> ScratchStorage:
        z = self.zfs
        if z.layout == "stripe" and z.vdevs != self.count:
            raise ValueError(f"zfs stripe has {z.vdevs} vdevs but the scratch set has {self.count} drives")
        if z.layout != "stripe" and self.count % z.vdevs:
            raise ValueError(f"{self.count} drives cannot be split into {z.vdevs} {z.layout} vdevs")
        return self


def scratch_zfs(spec: NodeSpec) -> ZfsLayout | None:
    """The scratch pool's ZFS layout, or None when the spec has no scratch set: the one place the checkpoint
    role vars, checks and CLI read `storage.scratch` (a profile without one skips them all)."""
    scratch: ScratchStorage | None = spec.storage.scratch
    return None if scratch is None else scratch.zfs


class Jbod(Frozen):
    enabled: bool
    count: NonNegativeInt
    size_tb: PositiveFloat
    interface: Literal["sas", "sata"]


class NvmeHealth(Frozen):
    max_percentage_used: Annotated[int, Field(ge=0, le=100)]
    max_media_errors: NonNegativeInt
    warn_percentage_used: Annotated[int | None, Field(ge=0, le=100)] = None
    """Optional warning tier for wear: above it a drive warns (never fails the exit code)."""
    warn_available_spare_pct: Annotated[int | None, Field(ge=0, le=100)] = None
    """Optional warning tier: available spare below it warns; below the drive's own threshold fails."""
    warn_media_errors: NonNegativeInt | None = None
    """Optional warning tier for media errors: above it warns; above max_media_errors fails."""
    endurance_tbw: PositiveFloat | None = None
    """Rated endurance in terabytes written (10^12 bytes), every drive alike; when absent it is
    endurance_dwpd x the drive's own capacity x 365 x endurance_years."""
    endurance_dwpd: PositiveFloat = 1.0
    """Drive writes per day over endurance_years. The seed names no drive model or rating: 1 DWPD over 5
    years is the usual rating of read-intensive data-centre U.2 drives, a documented default, not the seed's."""
    endurance_years: PositiveInt = 5
    warn_endurance_used_pct: Annotated[int, Field(ge=0, le=1000)] = 80
    """Bytes written as a share of the rated endurance: above it warns."""
    max_endurance_used_pct: Annotated[int, Field(ge=0, le=1000)] = 100
    """Above it fails: the drive has written more than it is rated for."""
    warn_endurance_days: NonNegativeInt = 365
    """Projected to reach its rated endurance within this many days (from the write rate between two
    verify runs kept in the journal): warns."""
    max_endurance_days: NonNegativeInt = 30
    """Projected within this many days (or already past it): fails."""

    @model_validator(mode="after")
    def _tiers(self) -> NvmeHealth:
        pairs = (("warn_percentage_used", self.warn_percentage_used, "max_percentage_used", self.max_percentage_used),
                 ("warn_media_errors", self.warn_media_errors, "max_media_errors", self.max_media_errors),
                 ("warn_endurance_used_pct", self.warn_endurance_used_pct, "max_endurance_used_pct",
                  self.max_endurance_used_pct))
        for warn_key, warn, max_key, top in pairs:
            if warn is not None and warn > top:
                raise ValueError(f"{warn_key} {warn} is above {max_key} {top}")
        if self.warn_endurance_days < self.max_endurance_days:
            raise ValueError(f"warn_endurance_days {self.warn_endurance_days} is below max_endurance_days "
                             f"{self.max_endurance_days}")
        return self

    def rated_bytes(self, capacity_bytes: int | None) -> int | None:
        """The drive's rated endurance in bytes; None when it is given in DWPD and the capacity is unknown."""
        if self.endurance_tbw is not None:
            return int(self.endurance_tbw * 10**12)
        if capacity_bytes is None:
            return None
        return int(self.endurance_dwpd * capacity_bytes * 365 * self.endurance_years)


class Storage(Frozen):
    boot: BootStorage
    scratch: ScratchStorage | None = None
    """Absent: no scratch set (no ZFS pool, no scratch checks or burn-in gates)."""
    jbod: Jbod | None = None
    nvme_health: NvmeHealth


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


class BiosValue(StrEnum):
    ENABLED = "enabled"
    DISABLED = "disabled"


BIOS_NEUTRAL_KEYS: frozenset[str] = frozenset(
    {
        "sriov",
        "above_4g_decoding",
        "hyperthreading",
        "power_profile",
        "numa",
        "sub_numa_clustering",
        "iommu",
        "boot_mode",
        "turbo",
        "resizable_bar",
    }
)


class Bios(Frozen):
    """BIOS settings by vendor-neutral key, plus raw per-vendor attributes."""

    settings: dict[str, str | int | bool]
    vendor_attributes: dict[str, dict[str, str | int | bool]] = Field(default_factory=dict)

    @field_validator("settings")
    @classmethod
    def _known_keys(cls, value: dict[str, str | int | bool]) -> dict[str, str | int | bool]:
        unknown = sorted(set(value) - BIOS_NEUTRAL_KEYS)
        if unknown:
            raise ValueError(f"unknown BIOS key(s) {unknown}; known: {sorted(BIOS_NEUTRAL_KEYS)}")
        return value


class FirmwareComponent(Frozen):
    """One line of the firmware baseline."""

    component: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    version: str
    image: str = Field(min_length=1, description="Path relative to the inventory directory, or absolute")
    sha256: str
    apply_time: Literal["Immediate", "OnReset"] | None = Field(
        default=None, description="When the BMC applies the image; unset: the BMC's choice among what it offers "
        "for the update method, OnReset first (a GH200's multipart push offers Immediate only)")
    needs_host_reset: bool = True
    order: NonNegativeInt = 50
    updated_by: Literal["bmc", "os"] = Field(
        default="bmc",
        description="bmc: flashed out-of-band through Redfish; os: flashed in-band (e.g. mlxfwmanager for "
        "ConnectX adapters the BMC marks not updateable) and checked on the node",
    )
    match: dict[str, str] = Field(
        default_factory=dict,
        description="Per-vendor regex over FirmwareInventory Id/Name; vendors/ supply defaults",
    )
    version_scheme: VersionScheme | None = Field(
        default=None, description="How the running and baseline versions are ordered (dotted, hex-dotted, date, "
        "opaque); unset: the scheme both read in; versions of no common scheme are never ordered")
    applies_to: AppliesTo | None = Field(
        default=None, validate_default=True,
        description="The platforms the image is for and the FirmwareInventory entries it updates, or `any` "
        "(provision/spec/platforms.py); required")

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        return check_version(value)

    @model_validator(mode="after")
    def _in_scheme(self) -> FirmwareComponent:
        check_scheme(self.version, self.version_scheme)
        return self

    @field_validator("sha256")
    @classmethod
    def _sha(cls, value: str) -> str:
        return check_sha256(value)

    @field_validator("applies_to")
    @classmethod
    def _applies_to(cls, value: AppliesTo | None) -> AppliesTo:
        return missing_applies_to(value)

    @model_validator(mode="after")
    def _entries_named(self) -> FirmwareComponent:
        return entries_named(self, self.updated_by == "bmc")

    @property
    def target(self) -> AppliesTo:
        """`applies_to`, never None once validated."""
        return missing_applies_to(self.applies_to)


class Pin(Frozen):
    """A pinned software component: upstream version and the apt package version."""

    version: str
    apt_version: str

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        return check_version(value)

    @field_validator("apt_version")
    @classmethod
    def _apt_version(cls, value: str) -> str:
        return check_apt_version(value)


class DriverPin(Pin):
    branch: str = Field(pattern=r"^[0-9]{3}$")
    kernel_modules: Literal["open", "proprietary"]

    @model_validator(mode="after")
    def _branch_prefix(self) -> DriverPin:
        if not self.version.startswith(self.branch + "."):
            raise ValueError(f"driver version {self.version} is not on branch {self.branch}")
        return self


class RdmaPin(Pin):
    stack: Literal["rdma-core", "doca-ofed", "mlnx-ofed"]


class KernelPin(Frozen):
    release: str = Field(min_length=1, description="uname -r")
    package: str
    apt_version: str


class InstallMethod(StrEnum):
    """How the os stage boots the installer: the BMC's virtual CD, or the network (dnsmasq: provision netboot)."""

    VIRTUAL_MEDIA = "virtual_media"
    PXE = "pxe"
    """DHCP + TFTP: the firmware's PXE loads iPXE, which loads the node's boot script (kernel, initrd, seed)."""
    HTTP_BOOT = "http_boot"
    """UEFI HTTP boot: the firmware fetches iPXE from the boot URL DHCP gives, then the same boot script."""

    @property
    def boot_target(self) -> str:
        """The Redfish BootSourceOverrideTarget that boots the installer once."""
        return {InstallMethod.VIRTUAL_MEDIA: "Cd", InstallMethod.PXE: "Pxe", InstallMethod.HTTP_BOOT: "UefiHttp"}[self]


class OsInstaller(Frozen):
    """The unattended installer the os stage boots on a node without an OS: from virtual media (the image at
    `url`), or over the network (`kernel` and `initrd`, given `url` on their command line as the installer's
    image, as Ubuntu's live installer takes `url=`)."""

    url: str = Field(pattern=r"^(https?|nfs|cifs)://\S+$", description="URL of the installer image")
    method: InstallMethod = Field(default=InstallMethod.VIRTUAL_MEDIA,
                                  description="virtual_media, pxe or http_boot (a host's "
                                  "provision_os_install_method overrides it)")
    kernel: str | None = Field(default=None, pattern=r"^https?://\S+$",
                               description="network boot: the installer's kernel (HTTP URL)")
    initrd: str | None = Field(default=None, pattern=r"^https?://\S+$",
                               description="network boot: the installer's initrd (HTTP URL)")
    cmdline: str = Field(default="", pattern=r"^[^\n]*$", description="network boot: more kernel arguments")

    @model_validator(mode="after")
    def _network_needs_kernel(self) -> OsInstaller:
        if self.method is not InstallMethod.VIRTUAL_MEDIA and (self.kernel is None or self.initrd is None):
            raise ValueError(f"method {self.method.value} boots a kernel and an initrd: give both "
                             "(software.os_installer.kernel, .initrd)")
        return self


class Software(Frozen):
    """Pinned OS and GPU stack."""

    os_distribution: Literal["debian", "ubuntu"]
    os_release: str
    kernel: KernelPin
    nvidia_driver: DriverPin | None = None
    fabric_manager: Pin | None = None
    cuda: Pin | None = None
    cudnn: Pin | None = None
    nccl: Pin | None = None
    container_toolkit: Pin | None = None
    rdma: RdmaPin | None = None
    dcgm: Pin | None = None
    zfs: Pin | None = None
    mdadm: Pin | None = None
    os_installer: OsInstaller | None = None
    """Absent: a node without an OS is installed only with --os-image (else the os stage stops)."""

    @model_validator(mode="after")
    def _fabric_manager_equals_driver(self) -> Software:
        fm = self.fabric_manager
        if fm is not None and self.nvidia_driver is None:
            raise ValueError("fabric_manager is pinned but nvidia_driver is not")
        if fm is not None and self.nvidia_driver is not None and fm.version != self.nvidia_driver.version:
            raise ValueError(
                f"fabric_manager {fm.version} must equal nvidia_driver {self.nvidia_driver.version}"
            )
        return self


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

_TEXT_FIGURES = frozenset({"cpu.model", "memory.type", "gpu.model"})


_T = TypeVar("_T")


def required(value: _T | None, key: str) -> _T:
    """`value`, for code reached only when the spec has it (`key` names it); SpecError when it is absent."""
    if value is None:
        raise SpecError(f"spec key {key} is absent: code for it ran on a profile without it")
    return value


_PINS_NEEDED_BY: dict[str, tuple[str, ...]] = {
    "gpu": ("nvidia_driver", "cuda", "cudnn", "nccl", "container_toolkit", "dcgm"),
    "storage.scratch": ("zfs",),
    "storage.boot.raid": ("mdadm",),
}
"""Pins an optional hardware section needs: present hardware without its pin is an error."""

_ACCEPTANCE_NEEDED_BY: dict[str, tuple[str, ...]] = {
    "gpu": ("dcgm_diag_level",),
    "gpus": ("allreduce_latency_us_p99", "allreduce_busbw_gbs"),
    "storage.scratch": ("scratch_seq_read_gbs", "scratch_rand_read_iops_4k"),
    "network.infiniband": ("ib_write_bw_gbps",),
}
"""Acceptance figures an optional hardware section needs (burn-in gates on them); `gpus`: more than one GPU
(NCCL all_reduce across one GPU measures nothing)."""


class NodeSpec(Frozen):
    """Everything a node of one class must be."""

    profile: str = Field(min_length=1, description="Human name of the class, e.g. ML-PROD-V4")
    description: str = ""
    platforms: Platforms | None = Field(
        default=None, validate_default=True,
        description="The platforms (Manufacturer + Model or SKU globs) the profile describes, or `any`; required")
    form_factor: str
    cpu: Cpu
    memory: Memory
    gpu: Gpu | None = None
    """Absent: a node without accelerators (no GPU stack, no GPU checks)."""
    storage: Storage
    network: Network
    power: Power
    cooling: Cooling
    bios: Bios
    firmware: tuple[FirmwareComponent, ...]
    software: Software
    acceptance: Acceptance
    containers: Containers = Field(default_factory=Containers, description="Container engines wired to the GPUs")
    nfs_mounts: tuple[NfsMount, ...] = Field(default=(), description="NFS checkpoint mounts (none: no NFS)")
    reference: Reference = Field(default_factory=Reference, description="Figures recorded, not judged")
    comparisons: dict[str, Comparison] = Field(
        default_factory=dict,
        description="Per drift figure, exact or minimum; figures not named keep the default kind (COMPARISONS)",
    )
    bmc: BmcSetup | None = Field(default=None, description="Day zero: how the BMC is taken over (bmc setup)")

    @field_validator("platforms")
    @classmethod
    def _platforms(cls, value: Platforms | None) -> Platforms:
        if value is None:
            raise ValueError("missing: name the platforms the profile describes ([{manufacturer, model or sku}]), "
                             "or `platforms: any`")
        return value

    @property
    def described_platforms(self) -> Platforms:
        """`platforms`, never None once validated."""
        if self.platforms is None:
            raise SpecError("spec key platforms is absent")
        return self.platforms

    @field_validator("nfs_mounts")
    @classmethod
    def _unique_mounts(cls, value: tuple[NfsMount, ...]) -> tuple[NfsMount, ...]:
        return unique_mounts(value)

    @field_validator("comparisons")
    @classmethod
    def _known_figures(cls, value: dict[str, Comparison]) -> dict[str, Comparison]:
        unknown = sorted(set(value) - set(COMPARISONS))
        if unknown:
            raise ValueError(f"unknown comparison figure(s) {unknown}; known: {sorted(COMPARISONS)}")
        text = sorted(k for k, v in value.items() if k in _TEXT_FIGURES and v == Comparison.MINIMUM)
        if text:
            raise ValueError(f"{text} are names, not figures: they can only be compared exactly")
        return value

    def comparison(self, figure: str) -> Comparison:
        """How `figure` (e.g. power.psu_watts) is compared: the profile's choice, else the default."""
        return self.comparisons.get(figure, COMPARISONS.get(figure, Comparison.EXACT))

    @property
    def effective_comparisons(self) -> dict[str, Comparison]:
        return {k: self.comparison(k) for k in COMPARISONS}

    def has(self, section: str) -> bool:
        """Whether an optional hardware section (gpu, network.infiniband, storage.scratch, storage.jbod,
        storage.boot.raid) is present: an absent one means no role, no check and no twin part for it."""
        if section == "gpus":
            return self.gpu is not None and self.gpu.count > 1
        value = {"gpu": self.gpu, "network.infiniband": self.network.infiniband,
                 "storage.scratch": self.storage.scratch, "storage.jbod": self.storage.jbod,
                 "storage.boot.raid": self.storage.boot.raid}[section]
        return value is not None

    def need_gpu(self) -> Gpu:
        """The gpu section, for code reached only when it is present (a caller that forgot to skip raises)."""
        return required(self.gpu, "gpu")

    def need_scratch(self) -> ScratchStorage:
        """The storage.scratch section, for code reached only when it is present."""
        return required(self.storage.scratch, "storage.scratch")

    def need_boot_raid(self) -> BootRaid:
        """The storage.boot.raid section, for code reached only when it is present."""
        return required(self.storage.boot.raid, "storage.boot.raid")

    def need_driver(self) -> DriverPin:
        """software.nvidia_driver, present whenever gpu is (the cross-checks make sure)."""
        return required(self.software.nvidia_driver, "software.nvidia_driver")

    def unused_pins(self) -> list[str]:
        """Pinned software whose hardware the spec does not have (allowed: `spec validate` warns)."""
        return [f"software.{pin}" for section, pins in _PINS_NEEDED_BY.items() if not self.has(section)
                for pin in pins if getattr(self.software, pin) is not None]

    @model_validator(mode="after")
    def _cross_checks(self) -> NodeSpec:
        if self.gpu is not None and self.gpu.fabric_manager and self.software.fabric_manager is None:
            raise ValueError("gpu interconnect nvswitch needs software.fabric_manager")
        for section, pins in _PINS_NEEDED_BY.items():
            if self.has(section):
                missing = [p for p in pins if getattr(self.software, p) is None]
                if missing:
                    raise ValueError(f"{section} is present, so software needs {', '.join(missing)} pinned")
        for section, figures in _ACCEPTANCE_NEEDED_BY.items():
            missing = [f for f in figures if getattr(self.acceptance, f) is None]
            if self.has(section) and missing:
                raise ValueError(f"{section} is present, so acceptance needs {', '.join(missing)}")
        names = [f.component for f in self.firmware]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"firmware component(s) listed twice: {dupes}")
        return self


class BmcEndpoint(BaseModel):
    """How to reach a node's BMC. The password never prints."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    address: str = Field(pattern=r"^https?://[^/\s]+/?$")
    username: str
    password: SecretStr
    ca_file: Path | None = None
    verify_tls: bool = True
    auth: Literal["auto", "session", "basic"] = Field(
        default="auto",
        description="provision_bmc_auth: session, basic, or auto (a session where the service root links a "
        "SessionService, else basic; basic again after a session login refused with 401)",
    )
    insecure_http: bool = Field(default=False, description="provision_bmc_insecure_http: plain http:// allowed")
    deadline_s: float = Field(default=120.0, gt=0, allow_inf_nan=False,
                              description="provision_bmc_deadline_s: seconds one BMC command's requests may take in "
                              "all (waits with their own bound, a firmware task or a reset, stand it still)")

    @model_validator(mode="after")
    def _no_plain_http(self) -> BmcEndpoint:
        """The plain-HTTP rule, in this one place: http:// only where the inventory opted in."""
        if self.plain_http and not self.insecure_http:
            raise ValueError(f"provision_bmc_address {self.address} is plain HTTP, the BMC password would travel "
                             "in clear; use https:// (or set provision_bmc_insecure_http: true for this host or group)")
        return self

    @property
    def plain_http(self) -> bool:
        """An http:// address (allowed only with insecure_http): the password travels in clear."""
        return self.address.startswith("http://")


class InstallerAccess(BaseModel):
    """How the os stage's preflight reads the installer URL (inventory variables, per host or group)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    ca_file: Path | None = Field(
        default=None,
        description="provision_os_installer_ca_file: the CA bundle an https:// installer's certificate is verified "
        "against (None: the system's); verification is never off")
    skip_boot_check: bool = Field(
        default=False,
        description="provision_os_installer_skip_boot_check: the preflight only proves the URL answers; the El "
        "Torito boot check is not made (a warning says so), for a server whose catalog cannot be checked")
    method: InstallMethod | None = Field(
        default=None, description="provision_os_install_method: this host's install method (None: the profile's)")
    provisioning_mac: str | None = Field(
        default=None, pattern=r"^([0-9a-f]{2}:){5}[0-9a-f]{2}$",
        description="provision_provisioning_mac: the MAC of the NIC the host boots the installer from over the "
        "network (None: read from the BMC's EthernetInterfaces of the system)")


class SshEndpoint(BaseModel):
    """How to reach a node's OS over SSH (Ansible's connection variables)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str
    port: int = 22
    user: str = "root"
    key_file: Path | None = None
    known_hosts: Path | None = None
    common_args: str = ""


_WAIVER_PATTERN_RE = re.compile(r"^[A-Za-z0-9_.*?/:\-\[\]]+$")


class Waiver(BaseModel):
    """A conformance check the inventory waives on this host: check id or glob pattern, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    pattern: str = Field(min_length=1, description="A check id, or an fnmatch pattern such as kernel.module.*")
    reason: str = Field(min_length=1, description="Why the check cannot be judged on this host")

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str) -> str:
        if not _WAIVER_PATTERN_RE.match(value):
            raise ValueError(f"{value!r} is not a check id or pattern (letters, digits, . _ - / : * ? [ ])")
        return value


class LabDeclaration(BaseModel):
    """What the inventory declares about a lab host (`provision_lab`, `provision_lab_waivers`).

    A host is a lab twin only when its inventory says so: nothing found on the node makes it one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    lab: bool = False
    waivers: tuple[Waiver, ...] = ()
    standins: tuple[str, ...] = Field(default=(), description="provision_lab_standins: the twin's stand-in tools")
    notice: str = Field(default="", description="provision_lab_notice: the line reports show beside its results")


class Rack(BaseModel):
    """One rack of `provision_racks` (inventory): what its circuits and cooling are sized for."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    power_budget_w: PositiveInt = Field(description="The most its nodes may draw together (their peak_draw_w summed)")


class RecordedIdentity(BaseModel):
    """`provision_bmc_identity`: what the BMC said it was when `provision enroll` wrote the host (so a later
    discovery knows it by serial or UUID wherever its address moves)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    manufacturer: str | None = None
    model: str | None = None
    serial: str | None = None
    uuid: str | None = None
    bmc_mac: str | None = None
    bmc_firmware: str | None = None


class HostEntry(BaseModel):
    """One inventory host with its resolved spec and endpoints."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    profile: str
    groups: tuple[str, ...]
    spec: NodeSpec
    bmc: BmcEndpoint
    ssh: SshEndpoint | None = None
    installer: InstallerAccess = InstallerAccess()
    lab: LabDeclaration = LabDeclaration()
    slurm: SlurmSettings | None = Field(default=None, description="provision_slurm: drain/resume in Slurm")
    rack: str | None = Field(default=None, description="provision_rack: the rack (of provision_racks) it sits in")
    identity: RecordedIdentity | None = Field(default=None, description="provision_bmc_identity (enroll writes it)")

    @property
    def install_method(self) -> InstallMethod:
        """How the os stage boots its installer: provision_os_install_method, else the profile's, else virtual media."""
        pinned = self.spec.software.os_installer
        return self.installer.method or (pinned.method if pinned is not None else InstallMethod.VIRTUAL_MEDIA)


class Fleet(BaseModel):
    """Every host of an inventory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    inventory: Path
    hosts: dict[str, HostEntry]
    profiles: dict[str, NodeSpec] = Field(default_factory=dict)
    racks: dict[str, Rack] = Field(default_factory=dict, description="provision_racks: rack name -> its budget")
    _patterns: HostPatterns | None = PrivateAttr(default=None)

    def select(self, pattern: str | Sequence[str] | None = None, limit: str | None = None) -> list[HostEntry]:
        """Hosts an Ansible host pattern selects (a list: each element a pattern), narrowed by `limit`.

        Groups, globs, `~regex`, subscripts, `!`, `&`, comma lists, host and Slurm ranges: see
        provision/spec/patterns.py. A pattern or term that matches no host raises InputError."""
        names = self.patterns().select(pattern or "all", limit)
        return [self.hosts[n] for n in names]

    def patterns(self) -> HostPatterns:
        """The inventory's pattern resolver: the one load_fleet read, or one built from the hosts' groups."""
        if self._patterns is None:
            self._patterns = HostPatterns.from_groups({n: h.groups for n, h in self.hosts.items()},
                                                      str(self.inventory))
        return self._patterns
