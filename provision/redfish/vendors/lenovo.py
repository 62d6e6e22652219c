"""Lenovo XClarity Controller (XCC / XCC2; ThinkSystem SR650 V2, SR670 V2 and kin).

From Lenovo's XCC Redfish REST API guide (pubs.lenovo.com/xcc-restapi):
- pending BIOS values go to `Systems/1/Bios/Pending`, the SettingsObject of @Redfish.Settings, applied OnReset;
- FirmwareInventory slots are named `<Component>-<Slot>`: `BMC-Primary`, `BMC-Backup`, `UEFI`, `LXPM`, and a
  `-Pending` slot for an image staged but not yet active; add-in cards are `Slot_<n>.<m>` with a
  `Slot_<n>.Bundle` entry that is the card's updateable package;
- updates go by `MultipartHttpPushUri` (`/mfwupdate`) or SimpleUpdate; XCC picks the component from the image
  and takes no `Targets` for the running images; the POST answers a Task under /redfish/v1/TaskService/Tasks.
  (In the capture, SimpleUpdate's Targets@Redfish.AllowableValues lists only `BMC-Backup`, the backup bank.)

From the capture (tests/fixtures/redfish/full/lenovo, XCC 42S-2.83, SR670 V2 with 8x L40):
- BMC-Backup is Status.State StandbySpare and the -Pending slots Disabled (the standard fields agree with the
  names); GPU firmware is GPU1..GPU8 ("GPU firmware", Oem.Lenovo.FirmwareStatus Active); `Slot_25.2`
  "Marvell UEFI NVMe Driver & BIOS" is a RAID card's option ROM, never the system BIOS; `Slot_30/31.Bundle`
  "... Switched 4x x16 PCIe Gen4 DW/SW GPU" is the PCIe switch board, not a GPU;
- BIOS attribute names are `<Page>_<Setting>` (Processors_HyperThreading, DevicesandIOPorts_SRIOV, ...).
"""

from __future__ import annotations

from typing import ClassVar

from provision.redfish.resources import SoftwareInventory
from provision.redfish.resources.bios import AttrValue
from provision.redfish.vendors.base import FwRule, VendorPlugin


class LenovoPlugin(VendorPlugin):
    """XCC: Manufacturer Lenovo, Oem "Lenovo" on its resources."""

    name = "lenovo"
    manufacturers = ("lenovo",)
    oem_keys = ("Lenovo",)
    bios_pending_suffix = "Pending"
    bios_patterns: ClassVar[dict[str, tuple[str, ...]]] = {
        "sriov": (r"^DevicesandIOPorts_SRIOV$",),
        "above_4g_decoding": (r"^DevicesandIOPorts_MMIOAbove4GB$", r"^DevicesandIOPorts_Above4GBDecoding$"),
        "resizable_bar": (r"^DevicesandIOPorts_ResizableBAR$",),
        "hyperthreading": (r"^Processors_HyperThreading$",),
        "power_profile": (r"^OperatingModes_ChooseOperatingMode$",),
        "numa": (r"^Memory_SocketInterleave$",),
        "sub_numa_clustering": (r"^Processors_SNC$",),
        "iommu": (r"^DevicesandIOPorts_IntelVTforDirectedIOVTd$", r"^Processors_AMDIOMMU$"),
        "boot_mode": (r"^BootModes_SystemBootMode$",),
        "turbo": (r"^Processors_TurboMode$",),
    }
    """From the captured registry (BiosAttributeRegistry.1.0.0); the MMIO-above-4G and ReBAR names are the XCC
    guide's for later UEFI builds and are not in this registry (unmapped there)."""
    bios_attr_values: ClassVar[dict[str, dict[str, AttrValue]]] = {
        "Memory_SocketInterleave": {"enabled": "NUMA", "disabled": "Non_NUMA"},
        "OperatingModes_ChooseOperatingMode": {"performance": "MaximumPerformance"},
        "BootModes_SystemBootMode": {"uefi": "UEFIMode"},
    }
    firmware_rules: ClassVar[dict[str, tuple[FwRule, ...]]] = {
        "bmc": (FwRule(id=r"^BMC-Primary$"),),
        "bios": (FwRule(id=r"^UEFI$"),),
        "gpu": (FwRule(id=r"^GPU\d+$"),),
        # NVIDIA/Mellanox (PCI vendor 15B3) add-in cards: the updateable bundle of the slot
        "ib_nic": (FwRule(id=r"^Slot_\d+\.Bundle$", software_id=r"^DEVICE-15B3"),),
    }

    def update_targets(self, component: str, entries: list[SoftwareInventory]) -> list[str]:
        """None: XCC takes the component from the image (only BMC-Backup is an accepted target)."""
        return []
