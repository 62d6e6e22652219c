"""Typed options and results of the qemu VM tier: what callers ask for and what they get back."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class VmImage(_Frozen):
    """A cached bootable image: kernel, ext4 root filesystem, and the apt repository the VM installs from."""

    directory: Path
    kernel: Path
    kernel_version: str
    root_image: Path
    repo: Path = Field(description="Flat apt repository (real Debian packages) served to the VM over HTTP")
    built: bool = Field(default=False, description="True when this call built it, False when reused")


class VmOptions(_Frozen):
    """One VM to boot: plain emulation (TCG), two extra blank virtio disks for the md RAID1."""

    name: str = Field(default="vm1", pattern=r"^[a-z][a-z0-9-]{0,30}$")
    memory_mib: int = Field(default=1024, ge=256, le=8192)
    cpus: int = Field(default=2, ge=1, le=8)
    data_disks: int = Field(default=2, ge=0, le=4)
    data_disk_mib: int = Field(default=256, ge=16, le=16384)
    boot_timeout_s: float = Field(default=240, gt=0)


class VmInfo(_Frozen):
    """A running VM: how to reach it over SSH (host-key checking on) and what it was given."""

    name: str
    pid: int
    address: str = "127.0.0.1"
    port: int
    user: str = "root"
    key_file: Path
    known_hosts: Path
    repo_url: str = Field(description="The apt repository as the VM sees it (forwarded as 10.0.2.100)")
    disk_ids: list[str] = Field(description="/dev/disk/by-id paths of the data disks inside the VM")
    console_log: Path
    work_dir: Path
