"""AMI MegaRAC based BMCs (NVIDIA DGX host BMC, many ODMs).

From NVIDIA's DGX H100 documentation (not captured here, never run): the DGX host BMC (AMI MegaRAC) lists its
own firmware as `HostBMC_0`/`HostBIOS_0` beside the HGX baseboard's `HGX_FW_GPU_SXM_<n>` and
`HGX_FW_NVSwitch_<n>`, which it aggregates; other AMI builds say plain `BMC`/`BIOS` (the generic rules).
"""

from __future__ import annotations

from typing import ClassVar

from provision.redfish.vendors.base import FwRule, VendorPlugin


class AmiPlugin(VendorPlugin):
    """Pending BIOS at Bios/SD like Supermicro; otherwise DMTF-standard."""

    name = "ami"
    manufacturers = ("ami", "american megatrends")
    oem_keys = ("Ami", "AMI")
    bios_pending_suffix = "SD"
    firmware_rules: ClassVar[dict[str, tuple[FwRule, ...]]] = {
        **VendorPlugin.firmware_rules,
        "bmc": (FwRule(id=r"^HostBMC_\d+$"), *VendorPlugin.firmware_rules["bmc"]),
        "bios": (FwRule(id=r"^HostBIOS_\d+$"), *VendorPlugin.firmware_rules["bios"]),
        "gpu": (FwRule(id=r"^HGX_FW_GPU_(SXM_)?\d+$"), *VendorPlugin.firmware_rules["gpu"]),
        "nvswitch": (FwRule(id=r"^HGX_FW_NVSwitch_\d+$"), *VendorPlugin.firmware_rules["nvswitch"]),
    }
