"""Typed configuration of one simulator process (written by `provision lab up`, read by the process)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, FieldSerializationInfo, SecretStr, field_serializer

DEFAULT_TREE = "supermicro"
TREES_DIR = Path(__file__).resolve().parent.parent / "data" / "trees"


class Parts(BaseModel):
    """The parts a complete lab server presents, taken from the node spec (ML-PROD-V4 defaults)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cpus: int = 2
    cpu_model: str = "Intel(R) Xeon(R) Platinum 8592+"
    cpu_cores: int = 64
    dimms: int = 32
    dimm_mib: int = 65536
    dimm_type: str = "DDR5"
    channels_per_socket: int = 8
    dimms_per_channel: int = 2
    gpus: int = 8
    gpu_model: str = "NVIDIA H100 80GB HBM3"
    boot_drives: int = 2
    scratch_drives: int = 8
    psus: int = 2
    psu_watts: int = 3200
    boot_drive_tb: float = 1.92
    drive_protocol: str = "NVMe"
    scratch_drive_tb: float = 7.68
    eth_ports: int = 2
    eth_speed_gbps: int = 100
    ib_ports: int = 2
    ib_rate_gbps: int = 400


class Timings(BaseModel):
    """Simulated durations (seconds of simulated time)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    power_on: float = 5.0
    power_off: float = 3.0
    graceful_shutdown: float = 10.0
    flash: float = 60.0
    bmc_reboot: float = 30.0
    session_timeout: float = 1800.0


class VmDrive(BaseModel):
    """One emulated NVMe drive of a VM host: its serial (what /dev/disk/by-id shows) and size."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    serial: str = Field(pattern=r"^[A-Za-z0-9._-]{1,20}$")
    size_mib: int = Field(ge=16, le=1024 * 1024)


class VmProvisioningNic(BaseModel):
    """The VM's second NIC, on the lab's private provisioning network: a tap device in a network namespace
    the lab made (never the host's network); the host opens the tap inside that namespace and hands qemu
    its file descriptor, so qemu itself (its SSH forward) stays in the host's namespace."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    mac: str = Field(pattern=r"^52:54:00(:[0-9a-f]{2}){3}$", description="qemu's locally administered prefix")
    netns: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    tap: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,15}$", description="a persistent tap device in `netns`")


class VmHostConfig(BaseModel):
    """A BMC whose host is a qemu VM (plain emulation, UEFI): its drives, firmware and SSH port.

    The drives are sparse raw files in `work_dir`, kept across power cycles like real disks; the boot
    pair is the spec's RAID1 pair, far smaller than the spec's drives (TCG writes every byte slowly).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    work_dir: Path
    boot_drives: tuple[VmDrive, ...] = Field(min_length=1)
    scratch_drives: tuple[VmDrive, ...] = ()
    firmware_code: Path = Path("/usr/share/OVMF/OVMF_CODE_4M.fd")
    firmware_vars: Path = Path("/usr/share/OVMF/OVMF_VARS_4M.fd")
    memory_mib: int = Field(default=1024, ge=256, le=8192)
    cpus: int = Field(default=2, ge=1, le=8)
    ssh_port: int = Field(ge=1024, le=65535, description="127.0.0.1 port forwarded to the guest's port 22")
    guest_ports: tuple[Annotated[int, Field(ge=1, le=65535)], ...] = Field(
        default=(), description="127.0.0.1 ports the guest may reach (as 10.0.2.100:<port>): its network reaches "
                                "nothing else (provision/lab/guestnet.py)")
    mac: str = Field(default="52:54:00:12:34:56", pattern=r"^52:54:00(:[0-9a-f]{2}){3}$",
                     description="the first NIC's (qemu's user network) MAC; qemu's own default")
    provisioning: VmProvisioningNic | None = Field(
        default=None, description="a second NIC on the lab's provisioning network, the one it boots from at Pxe")


class BmcConfig(BaseModel):
    """One simulated BMC."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    index: int
    tree: Path = TREES_DIR / DEFAULT_TREE
    as_captured: bool = False
    username: str = "admin"
    password: SecretStr
    http: bool = True
    https: bool = True
    vm: VmHostConfig | None = None
    factory: bool = Field(default=False, description="as from the factory: the one account's password must be "
                          "changed (PasswordChangeRequired), HTTPS serves a self-signed certificate of its own")

    @field_serializer("password")
    def _password(self, value: SecretStr, info: FieldSerializationInfo) -> str:
        return _reveal(value, info)


def factory_cert_file(lab_dir: Path, node: str) -> Path:
    """Where the simulator writes a factory-state BMC's self-signed certificate (PEM, public)."""
    return lab_dir / "factory-certs" / f"{node}.pem"


class SimConfig(BaseModel):
    """The whole simulator process."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    lab_dir: Path
    nodes: list[BmcConfig]
    speed: float = Field(default=1.0, gt=0)
    cert_file: Path | None = None
    key_file: Path | None = None
    control_token: SecretStr
    ready_file: Path
    log_file: Path
    parts: Parts = Parts()
    timings: Timings = Timings()
    twins: bool = False
    allow_image_hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")

    @field_serializer("control_token")
    def _token(self, value: SecretStr, info: FieldSerializationInfo) -> str:
        return _reveal(value, info)

    def to_file_json(self) -> str:
        """The config with its secrets in clear, for the lab's own 0600 file and nothing else."""
        return self.model_dump_json(indent=1, context={"reveal": True})


def _reveal(value: SecretStr, info: FieldSerializationInfo) -> str:
    ctx = info.context or {}
    return value.get_secret_value() if ctx.get("reveal") else str(value)


class NodePorts(BaseModel):
    """Where one BMC answers, as the running process reports it."""

    name: str
    https_port: int | None
    http_port: int | None


class Ready(BaseModel):
    """Written by the process once every BMC listens."""

    pid: int
    control_port: int
    nodes: list[NodePorts]
