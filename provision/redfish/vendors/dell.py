"""Dell iDRAC 9 (PowerEdge R750 and kin)."""

from __future__ import annotations

from typing import ClassVar

from provision.redfish.vendors.base import FwRule, VendorPlugin


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
    firmware_rules: ClassVar[dict[str, tuple[FwRule, ...]]] = {
        "bmc": (FwRule(id=r"(?i)^Installed-.*__iDRAC\."),),
        "bios": (FwRule(id=r"(?i)^Installed-.*__BIOS\."),),
        "gpu": (FwRule(id=r"(?i)^Installed-.*__(Video|GPU)\."),),
        "nvswitch": (FwRule(id=r"(?i)^Installed-.*NVSwitch"),),
        "ib_nic": (FwRule(id=r"(?i)^Installed-.*__(InfiniBand|NIC)\."),),
    }
    """Dell's documented convention (iDRAC Redfish API guide, FirmwareInventory): `Installed-` is the running
    image, `Previous-` the rollback copy, `Available-` a staged one; `Current-` duplicates Installed-."""
    inactive_pattern = r"(?i)^(Previous|Current|Available)-"
