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
    account_slots = True
    reserved_account_slots = frozenset({"1"})
    """iDRAC's documented account model (Dell iDRAC Redfish API guide, ManagerAccount; Dell's
    CreateIdracUserPasswordREDFISH scripts): a fixed set of user slots, Accounts/1..16 on iDRAC9 (1..32 on
    iDRAC10), every one listed, an unused one with UserName "". There is no POST to the collection: a user is made
    by PATCHing a free slot's UserName, Password, RoleId and Enabled, and removed by disabling it (RoleId None)
    then emptying its UserName; DELETE is not allowed. Slot 1 is reserved (the anonymous user) and never taken."""
