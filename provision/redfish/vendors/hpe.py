"""HPE iLO 5 / iLO 6 (ProLiant Gen10, Gen10 Plus, Gen11).

From HPE's iLO Redfish documentation (servermanagementportal.ext.hpe.com, "iLO Software/Firmware update
service" and the BIOS resource pages):
- pending BIOS values go to the settings object the Bios resource names in @Redfish.Settings
  (`/redfish/v1/systems/1/bios/settings/`; iLO URIs are case-insensitive and end in `/`);
- `SimpleUpdate` takes an `ImageURI` (HTTP/HTTPS) and iLO picks the device from the image itself;
  `HttpPushUri` (`/cgi-bin/uploadFile`) is iLO's own multipart form (a session key and HPE parameters in form
  fields), not DMTF's MultipartHttpPushUri, so it is not used here;
- iLO 5 reports a SimpleUpdate's progress in `UpdateService.Oem.Hpe.State`/`FlashProgressPercent` and its
  update task queue rather than always in a DMTF Task.

From the capture (tests/fixtures/redfish/full/hpe, iLO 5 2.72, DL385 Gen10 Plus v2, AMD EPYC 7763):
- FirmwareInventory Ids are numbers; the Name says what an entry is ("iLO 5", "System ROM",
  "Redundant System ROM") and Description carries a class name ("SystemBMC", "SystemRomActive",
  "SystemRomBackup"); most entries have no Status;
- the BIOS registry (BiosAttributeRegistryA42) names: Sriov, ProcSMT, ProcAmdIoVt, ProcAMDBoost, WorkloadProfile,
  NumaGroupSizeOpt, NumaMemoryDomainsPerSocket, BootMode. Intel ProLiant names (ProcHyperthreading, IntelProcVtd,
  ProcTurbo, SubNumaClustering) come from HPE's documentation and were never run here.
"""

from __future__ import annotations

from typing import Any, ClassVar

from provision.redfish.resources import SoftwareInventory, UpdateService
from provision.redfish.resources.bios import AttrValue
from provision.redfish.vendors.base import FwRule, VendorPlugin


class HpePlugin(VendorPlugin):
    """iLO: Oem "Hpe" in the service root, Manufacturer HPE."""

    name = "hpe"
    manufacturers = ("hpe", "hewlett packard enterprise", "hewlett-packard")
    oem_keys = ("Hpe", "Hp")
    bios_pending_suffix = "settings"
    bios_patterns: ClassVar[dict[str, tuple[str, ...]]] = {
        "sriov": (r"^Sriov$",),
        "hyperthreading": (r"^ProcSMT$", r"^ProcHyperthreading$"),
        "power_profile": (r"^WorkloadProfile$",),
        "numa": (r"^NumaGroupSizeOpt$",),
        "sub_numa_clustering": (r"^NumaMemoryDomainsPerSocket$", r"^SubNumaClustering$"),
        "iommu": (r"^ProcAmdIoVt$", r"^IntelProcVtd$"),
        "boot_mode": (r"^BootMode$",),
        "turbo": (r"^ProcAMDBoost$", r"^ProcTurbo$"),
    }
    """No `above_4g_decoding` or `resizable_bar`: this registry has no such setting (the key is unmapped)."""
    bios_attr_values: ClassVar[dict[str, dict[str, AttrValue]]] = {
        # A workload profile forces other settings (the registry's Dependencies): HighPerformanceCompute(HPC),
        # LowLatency and GraphicProcessing force Sriov and ProcAmdIoVt Disabled, which a GPU node's sriov/iommu
        # contradict; GeneralThroughputCompute sets StaticHighPerf and core boost and leaves SR-IOV, IOMMU and NPS
        # to the other keys (read from the captured A42 registry)
        "WorkloadProfile": {"performance": "GeneralThroughputCompute"},
        # NUMA is always on for ProLiant; the nearest switch is how the OS is shown the NUMA nodes
        "NumaGroupSizeOpt": {"enabled": "Clustered", "disabled": "Flat"},
        # AMD NPS (nodes per socket) is the sub-NUMA clustering of EPYC: NPS1 = off
        "NumaMemoryDomainsPerSocket": {"disabled": "OneMemoryDomainPerSocket",
                                       "enabled": "TwoMemoryDomainsPerSocket"},
    }
    firmware_rules: ClassVar[dict[str, tuple[FwRule, ...]]] = {
        "bmc": (FwRule(description=r"^SystemBMC$"), FwRule(name=r"^iLO \d+$")),
        "bios": (FwRule(description=r"^SystemRomActive$"), FwRule(name=r"^System ROM$")),
        # GPUs are listed by their PCIe name on iLO (not in this capture: an assumption from HPE's docs)
        "gpu": (FwRule(name=r"(?i)^(?!.*(connectx|bluefield|ethernet|nic\b)).*"
                            r"\b(nvidia|tesla|h100|h200|a100|l40s?)\b"),),
        "ib_nic": (FwRule(name=r"(?i)(connectx|infiniband|mellanox)"),),
    }
    inactive_pattern = VendorPlugin.inactive_pattern + r"|Backup$|^Redundant "
    task_monitor = "hpe-update-service"
    """iLO 5 reports a SimpleUpdate's progress in UpdateService.Oem.Hpe (State, FlashProgressPercent) and its
    UpdateTaskQueue; a DMTF Task is not always returned (HPE update service documentation; never run here)."""

    ilo_privileges: ClassVar[dict[str, tuple[str, ...]]] = {
        "Administrator": ("LoginPriv", "RemoteConsolePriv", "UserConfigPriv", "iLOConfigPriv", "VirtualMediaPriv",
                          "VirtualPowerAndResetPriv", "HostBIOSConfigPriv", "HostNICConfigPriv",
                          "HostStorageConfigPriv"),
        "Operator": ("LoginPriv", "RemoteConsolePriv", "VirtualMediaPriv", "VirtualPowerAndResetPriv",
                     "HostBIOSConfigPriv", "HostNICConfigPriv", "HostStorageConfigPriv"),
        "ReadOnly": ("LoginPriv",),
    }
    """iLO's privileges per Redfish role (HPE "Managing iLO users": RoleId is one of three roles defined by the
    privileges an account holds; the privilege names as the capture's Accounts/1 Oem.Hpe.Privileges lists them).
    SystemRecoveryConfigPriv is granted to no role here: HPE gives it to no role by default."""
    account_roles: ClassVar[tuple[str, ...] | None] = ("Administrator", "Operator", "ReadOnly")  # ilo_privileges'

    def account_fields(self, user: str, role: str) -> dict[str, Any]:
        """A POST to the collection as the standard says, with iLO's Oem.Hpe: its LoginName (iLO's descriptive
        name; the Redfish UserName is what logs in) and the privileges that make the role, every one named."""
        from provision.errors import InputError

        granted = self.ilo_privileges.get(role)
        if granted is None:
            raise InputError(f"account {user}: role {role!r} is not one iLO defines "
                             f"({', '.join(self.ilo_privileges)})")
        every = ("SystemRecoveryConfigPriv", *self.ilo_privileges["Administrator"])
        # no Enabled: iLO's ManagerAccount (the capture's) has none, an iLO account is enabled by LoginPriv
        return {"UserName": user, "RoleId": role, "Oem": {"Hpe": {
            "LoginName": user, "Privileges": {p: p in granted for p in sorted(every)}}}}

    def is_sel(self, service: dict[str, Any]) -> bool | None:
        """The IML (Integrated Management Log, Systems/1/LogServices/IML) is iLO's system event log: the
        server's hardware and host events, what IPMI's SEL holds elsewhere. HPE's iLO Redfish "Log services"
        document lists four logs: the Security Log (SL: security events of iLO), the IML, the iLO Event Log
        (IEL, under the Manager: iLO's own events) and the Alert Event Log (`Event` in the capture). None says
        LogEntryType SEL (capture), and SL came first, so the IML is named here."""
        return True if str(service.get("Id", "")).upper() == "IML" else None

    def multipart_uri(self, service: UpdateService) -> str | None:
        """None: iLO's HttpPushUri is its own form upload, and SimpleUpdate is the documented path."""
        return None

    def update_targets(self, component: str, entries: list[SoftwareInventory]) -> list[str]:
        """iLO selects the device from the image: no Targets (HPE update service documentation)."""
        return []
