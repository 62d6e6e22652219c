"""The node spec: one frozen, typed description of what a node class must be.

Built from the `provision_spec` variable of each host's merged Ansible variables, so the
Ansible roles and the Python side read the very same figures.
"""

from __future__ import annotations

import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

_VERSION_RE = re.compile(r"^[0-9]+(?:[.\-][0-9A-Za-z]+)*$")
_APT_VERSION_RE = re.compile(r"^(?:[0-9]+:)?[0-9][0-9A-Za-z.+~\-]*$")
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")

PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]


def _check_version(value: str) -> str:
    if not _VERSION_RE.match(value):
        raise ValueError(f"{value!r} is not a version (expected digits separated by dots, e.g. 550.127.08)")
    return value


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
    base_clock_ghz: PositiveFloat
    l3_cache_mb_per_socket: PositiveInt
    isa_flags: tuple[str, ...] = Field(description="Flags required in /proc/cpuinfo, e.g. avx512f, amx_tile")
    pcie_generation: PositiveInt
    pcie_lanes: PositiveInt

    @property
    def total_cores(self) -> int:
        return self.sockets * self.cores_per_socket

    @property
    def total_threads(self) -> int:
        return self.total_cores * self.threads_per_core


class Memory(Frozen):
    """System memory."""

    total_gb: PositiveInt
    dimm_count: PositiveInt
    dimm_size_gb: PositiveInt
    type: Literal["DDR4", "DDR5"]
    ecc: bool
    min_speed_mts: PositiveInt
    channels: PositiveInt

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
    raid: BootRaid

    @model_validator(mode="after")
    def _raid1_needs_two(self) -> BootStorage:
        if self.raid.level == "raid1" and self.count != 2:
            raise ValueError(f"raid1 boot needs exactly 2 drives, count is {self.count}")
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


class Jbod(Frozen):
    enabled: bool
    count: NonNegativeInt
    size_tb: PositiveFloat
    interface: Literal["sas", "sata"]


class NvmeHealth(Frozen):
    max_percentage_used: Annotated[int, Field(ge=0, le=100)]
    max_media_errors: NonNegativeInt


class Storage(Frozen):
    boot: BootStorage
    scratch: ScratchStorage
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


class Cooling(Frozen):
    fan_redundancy: Literal["N+1", "N+2", "none"]
    min_fans: PositiveInt
    warn_internal_ambient_c: PositiveFloat
    max_inlet_c: PositiveFloat
    critical_component_c: PositiveFloat


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
    apply_time: Literal["Immediate", "OnReset"] = "OnReset"
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

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        return _check_version(value)

    @field_validator("sha256")
    @classmethod
    def _sha(cls, value: str) -> str:
        if not _SHA256_RE.match(value):
            raise ValueError("sha256 must be 64 lowercase hex characters")
        return value


class Pin(Frozen):
    """A pinned software component: upstream version and the apt package version."""

    version: str
    apt_version: str

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        return _check_version(value)

    @field_validator("apt_version")
    @classmethod
    def _apt_version(cls, value: str) -> str:
        if not _APT_VERSION_RE.match(value):
            raise ValueError(f"{value!r} is not a Debian package version")
        return value


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


class Software(Frozen):
    """Pinned OS and GPU stack."""

    os_distribution: Literal["debian", "ubuntu"]
    os_release: str
    kernel: KernelPin
    nvidia_driver: DriverPin
    fabric_manager: Pin | None = None
    cuda: Pin
    cudnn: Pin
    nccl: Pin
    container_toolkit: Pin
    rdma: RdmaPin | None = None
    dcgm: Pin
    zfs: Pin
    mdadm: Pin

    @model_validator(mode="after")
    def _fabric_manager_equals_driver(self) -> Software:
        fm = self.fabric_manager
        if fm is not None and fm.version != self.nvidia_driver.version:
            raise ValueError(
                f"fabric_manager {fm.version} must equal nvidia_driver {self.nvidia_driver.version}"
            )
        return self


class Acceptance(Frozen):
    """Acceptance thresholds from the seed; burn-in gates are optional."""

    scratch_seq_read_gbs: PositiveFloat
    scratch_rand_read_iops_4k: PositiveInt
    allreduce_latency_us_p99: PositiveFloat
    allreduce_busbw_gbs: PositiveFloat
    ib_write_bw_gbps: PositiveFloat
    dcgm_diag_level: Annotated[int, Field(ge=1, le=4)]
    resnet50_images_per_sec: PositiveInt | None = None
    llm_finetune_tokens_per_sec: PositiveInt | None = None


class NodeSpec(Frozen):
    """Everything a node of one class must be."""

    profile: str = Field(min_length=1, description="Human name of the class, e.g. ML-PROD-V4")
    description: str = ""
    form_factor: str
    cpu: Cpu
    memory: Memory
    gpu: Gpu
    storage: Storage
    network: Network
    power: Power
    cooling: Cooling
    bios: Bios
    firmware: tuple[FirmwareComponent, ...]
    software: Software
    acceptance: Acceptance

    @model_validator(mode="after")
    def _cross_checks(self) -> NodeSpec:
        if self.gpu.fabric_manager and self.software.fabric_manager is None:
            raise ValueError("gpu interconnect nvswitch needs software.fabric_manager")
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


class SshEndpoint(BaseModel):
    """How to reach a node's OS over SSH (Ansible's connection variables)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str
    port: int = 22
    user: str = "root"
    key_file: Path | None = None
    known_hosts: Path | None = None
    common_args: str = ""


class HostEntry(BaseModel):
    """One inventory host with its resolved spec and endpoints."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    profile: str
    groups: tuple[str, ...]
    spec: NodeSpec
    bmc: BmcEndpoint
    ssh: SshEndpoint | None = None


class Fleet(BaseModel):
    """Every host of an inventory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    inventory: Path
    hosts: dict[str, HostEntry]
    profiles: dict[str, NodeSpec] = Field(default_factory=dict)

    def select(self, names: list[str] | None = None, group: str | None = None) -> list[HostEntry]:
        """Hosts by name and/or group; unknown names raise InventoryError."""
        from provision.errors import InventoryError

        chosen = list(self.hosts.values())
        if group:
            chosen = [h for h in chosen if group in h.groups]
            if not chosen:
                raise InventoryError(f"{self.inventory}: no host in group {group!r}")
        if names:
            missing = [n for n in names if n not in self.hosts]
            if missing:
                raise InventoryError(f"{self.inventory}: unknown host(s) {', '.join(missing)}")
            chosen = [h for h in chosen if h.name in names]
        return chosen
