"""AMI MegaRAC based BMCs (NVIDIA DGX host BMC, many ODMs)."""

from __future__ import annotations

from provision.redfish.vendors.base import VendorPlugin


class AmiPlugin(VendorPlugin):
    """Pending BIOS at Bios/SD like Supermicro; otherwise DMTF-standard."""

    name = "ami"
    manufacturers = ("ami", "american megatrends")
    oem_keys = ("Ami", "AMI")
    bios_pending_suffix = "SD"
