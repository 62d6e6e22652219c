"""Supermicro (X13 / HGX H100 SYS-821GE-TNHR and kin)."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from provision.redfish.resources import AttributeRegistry, PCIeDevice, SoftwareInventory, UpdateService
from provision.redfish.resources.bios import AttrValue, RegistryAttribute, RegistryValue
from provision.redfish.vendors.base import FwRule, VendorPlugin

_HEX = r"_[0-9A-F]{4}$"


class SupermicroPlugin(VendorPlugin):
    """BIOS names are `Name_HEXID` (the suffix changes between BIOS builds, so match the stem);
    pending values go to Bios/SD; BIOS versions read 'BIOS Date: 08/04/2023 Ver 1.4'; multipart push
    at /redfish/v1/UpdateService/upload is followed by the OEM action SmcUpdateService.Install;
    GPUs are Chassis/1/PCIeDevices/GPU1..8 (not Processors)."""

    name = "supermicro"
    manufacturers = ("supermicro",)
    oem_keys = ("Supermicro",)
    bios_pending_suffix = "SD"
    internal_ambient: ClassVar[str] = r"(?i)(\bambient\b|^system temp$)"
    """'System Temp' is the board ambient sensor of Supermicro BMCs (X13 capture: Thermal 'System Temp',
    PhysicalContext SystemBoard, beside 'Inlet Temp')."""
    bios_patterns: ClassVar[dict[str, tuple[str, ...]]] = {
        "sriov": (r"^SR_IOVSupport" + _HEX,),
        "above_4g_decoding": (r"^Above4GDecoding" + _HEX,),
        "hyperthreading": (r"^Hyper_Threading_ALL__?[0-9A-F]{4}$", r"^Hyper_Threading" + _HEX),
        "power_profile": (r"^(WorkloadProfile|PowerPerformanceTuning)" + _HEX,),
        "numa": (r"^NUMA" + _HEX,),
        "sub_numa_clustering": (r"^SNC" + _HEX,),
        "iommu": (r"^IntelVTforDirectedI_O_VT_d__?[0-9A-F]{4}$",),
        "boot_mode": (r"^BootModeSelect" + _HEX,),
        "turbo": (r"^TurboMode" + _HEX,),
        "resizable_bar": (r"^Re_SizeBARSupport" + _HEX,),
    }
    bios_values: ClassVar[dict[str, tuple[Any, ...]]] = {
        **VendorPlugin.bios_values,
        "performance": ("BIOS Controls EPB", "Maximum Performance", "Performance"),
        "uefi": ("UEFI",),
    }
    firmware_rules: ClassVar[dict[str, tuple[FwRule, ...]]] = {
        "bmc": (FwRule(id=r"^BMC$"),),
        "bios": (FwRule(id=r"^BIOS$"),),
        "gpu": (FwRule(id=r"^HGX_FW_GPU_SXM_\d+$"),),  # the HGX baseboard's copies (GPU1..8 are read-only views)
        "nvswitch": (FwRule(id=r"^HGX_FW_NVSwitch_\d+$"),),
        "ib_nic": (FwRule(name=r"^NIC\d+ .*\bMCX7"),),  # ConnectX-7 HCAs, by the model in the entry's Name
        "hgx_bmc": (FwRule(id=r"^HGX_FW_BMC_\d+$"),),
        "erot": (FwRule(id=r"^HGX_FW_ERoT_"),),
    }
    """From the capture (X13 BMC 11.01.01 with an HGX H100 baseboard behind it): Golden_/Backup_/Staging_ and
    Capsule_ copies sit beside the running BMC and BIOS and are filtered as inactive."""
    firmware_exclude = r"(?i)(?:^|[^A-Za-z0-9])(inforom|me|pldm)(?:[^A-Za-z]|$)"

    def bios_registry(self, registry: AttributeRegistry, current: dict[str, AttrValue]) -> AttributeRegistry:
        """The X13 BIOS (SYS-821GE-TNHR capture, BIOS 1.4) holds ValueDisplayNames in Bios.Attributes
        ("Enabled", "115200", "Auto") while its BiosAttributeRegistry lists ValueName "0"/"1"/"15"; its
        registry Dependencies compare display names too ("MapFromValue": "Disabled"), so that is the form
        the BIOS works in. Each enumeration is spelt as its current value is (ValueName, else
        ValueDisplayName); one with no telling current value, as most of this BIOS's attributes are. The
        other form is kept as the display name, so a spec value given either way is understood
        (AttributeRegistry.spelling). From the capture: Supermicro's Redfish guide does not say, and a PATCH
        of Bios/SD in this form was never sent to a real X13 BMC here."""
        if registry.inferred:
            return registry
        shown = {name: _form(entry, current.get(name)) for name, entry in registry.attributes.items()
                 if entry.type == "Enumeration"}
        votes = [f for f in shown.values() if f is not None]
        usual = "display" if votes.count("display") > votes.count("name") else "name"
        swapped = {name: _as_displayed(registry.attributes[name]) for name, form in shown.items()
                   if (form or usual) == "display"}
        if not swapped:
            return registry
        return registry.model_copy(update={"attributes": {**registry.attributes, **swapped}})

    def is_gpu_device(self, dev: PCIeDevice) -> bool:
        """GPU1..GPU8 under Chassis/1/PCIeDevices (the HGX baseboard's GPUs as the X13 BMC lists them)."""
        return dev.present and re.match(r"^GPU\d+$", dev.id) is not None

    def after_push(
        self, service: UpdateService, component: str, entries: list[SoftwareInventory], system_uri: str,
        manager_uri: str | None,
    ) -> tuple[str, dict[str, Any]] | None:
        """SmcUpdateService.Install names the Manager (BMC) or the System (BIOS), per its ActionInfo."""
        target = service.oem_action("#SmcUpdateService.Install")
        if not target:
            return None
        if component == "bmc" and manager_uri:
            targets = [manager_uri]
        elif component == "bios":
            targets = [system_uri]
        else:
            targets = [e.uri for e in entries]
        return target, {"Targets": targets, "InstallOptions": []}


def _form(entry: RegistryAttribute, value: AttrValue) -> str | None:
    """Which registry form a current value is: "name" (a ValueName), "display" (only a ValueDisplayName),
    None when it does not tell (absent, in both, or in neither)."""
    names = set(entry.allowed)
    shown = {v.value_display_name for v in entry.value if v.value_display_name is not None}
    if value in names and value not in shown:
        return "name"
    if value in shown and value not in names:
        return "display"
    return None


def _as_displayed(entry: RegistryAttribute) -> RegistryAttribute:
    """The entry with its display names as the values (ValueName kept as the other form)."""
    values = [RegistryValue(ValueName=v.value_display_name, ValueDisplayName=v.value_name)
              for v in entry.value if v.value_display_name is not None]
    return entry.model_copy(update={"value": values}) if values else entry
