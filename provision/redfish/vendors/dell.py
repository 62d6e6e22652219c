"""Dell iDRAC 9 (PowerEdge R750 and kin)."""

from __future__ import annotations

from typing import ClassVar

from provision.redfish.vendors.base import VendorPlugin


class DellPlugin(VendorPlugin):
    """Pending BIOS at Bios/Settings; NUMA is NodeInterleave with the opposite sense; firmware entries
    are `Installed-<id>-<version>__<FQDD>` with `Previous-` copies to ignore; multipart push at
    /redfish/v1/UpdateService/MultipartUpload."""

    name = "dell"
    manufacturers = ("dell",)
    oem_keys = ("Dell",)
    bios_pending_suffix = "Settings"
    bios_patterns: ClassVar[dict[str, tuple[str, ...]]] = {
        **VendorPlugin.bios_patterns,
        "numa": (r"^NodeInterleave$",),
        "iommu": (r"^ProcVirtualization$",),
        "power_profile": (r"^SysProfile$",),
    }
    bios_inverted = frozenset({"numa"})
    firmware_patterns: ClassVar[dict[str, str]] = {
        "bmc": r"(?i)^(Installed-.*__iDRAC\..*|Integrated Dell Remote Access Controller)$",
        "bios": r"(?i)^(Installed-.*__BIOS\..*|BIOS)$",
        "gpu": r"(?i)^Installed-.*__(Video|GPU)\..*$",
        "nvswitch": r"(?i)^Installed-.*NVSwitch.*$",
        "ib_nic": r"(?i)^Installed-.*__(InfiniBand|NIC)\..*$",
    }
    firmware_exclude = r"(?i)^(Previous|Current)-"
