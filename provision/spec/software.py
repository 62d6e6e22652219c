"""The software section of the spec: pinned packages, the kernel and the OS installer."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import Field, field_validator, model_validator

from provision.spec.frozen import Frozen
from provision.spec.versions import check_apt_version, check_version


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
