"""NVIDIA HGX baseboard BMC and NVIDIA's OpenBMC (DGX/HGX H100 baseboards, Grace Hopper GH200).

From NVIDIA's documentation (HGX/DGX Redfish guides, the nvfwupd tool's guide at docs.nvidia.com):
- firmware goes as a signed PLDM bundle (`.fwpkg`) to `MultipartHttpPushUri`
  (`/redfish/v1/UpdateService/update-multipart`) with `UpdateParameters.Targets` naming the
  FirmwareInventory entries to flash (empty: every component in the bundle); the POST answers a Task under
  /redfish/v1/TaskService/Tasks, followed to Completed; GPU/NVSwitch images activate on the next host power
  cycle (AC or `ComputerSystem.Reset`), ERoT-protected images after the ERoT's own activation;
- inventory entries are `HGX_FW_<Device>_<n>` (`HGX_FW_GPU_SXM_1`, `HGX_FW_NVSwitch_0`, `HGX_FW_BMC_0`),
  with `HGX_FW_ERoT_<Device>` for each device's root of trust and `HGX_InfoROM_<Device>` for its
  InfoROM: neither is the device's firmware.

From the capture (tests/fixtures/redfish/full/nvidia_gh200, OpenBMC GH200-24.05-2): the service root has
Vendor "NVIDIA" and no Oem; Systems are `System_0` (the host) and `HGX_Baseboard_0` (its GPUs as Processors
`GPU_0`, ProcessorType GPU); FirmwareInventory has `FW_BMC_0` (this BMC) beside `HGX_FW_BMC_0`, `UEFI` for the
host firmware, `HGX_FW_GPU_<n>` without `SXM`. Never run against a real HGX baseboard BMC here. The BlueField
DPU's BMC (tests/fixtures/redfish/full/nvidia_dpu, OpenBMC BF-24.10-10, root Vendor "Nvidia") is detected here too.

The BMC's own accounts (`service_accounts`, never removed by a clean or the bmc-accounts stage; see
vendors/service_accounts.py), none of which these BMCs mark HostBootstrapAccount (their ManagerAccount is v1_4_0
and v1_7_0; the property came in v1_8_0):
- BlueField: NVIDIA's "NVIDIA BlueField BMC Software" documentation, User Management, "List User Accounts"
  (networking-docs.nvidia.com/bluefieldbmc/2404/user-management) shows a BMC's accounts as `NvdBluefieldUefi`
  beside `root`; NVIDIA says no more of it there. The capture lists `NvBluefieldUefi0` and `NvBluefieldUefi1`
  (Administrator, AccountTypes Redfish and WebUI): the `Nv...<n>` spelling is from the capture only, and that the
  BlueField's UEFI uses it is inferred from its name.
- GH200: `fwupd` (Administrator, every AccountType) is from the capture only (OpenBMC GH200-24.05-2): no NVIDIA
  document found names it; by its name, the BMC's firmware-update service.
- GH200: two accounts of 16 random letters and digits, Administrator, AccountTypes exactly Redfish and WebUI:
  host-interface bootstrap accounts as DSP0270 section 9 makes them (the service generates the name, at most 16
  characters; it deletes them itself at a host or service reset). OpenBMC gives such an account only its
  `redfish` group (openbmc/docs designs/bootstrap-account-access-restriction.md), which bmcweb lists as Redfish
  and WebUI, and names the first `bootstrap0`. Recognised by that form, inferred from the capture: a site
  account of that exact form is kept too, and reported.
"""

from __future__ import annotations

from typing import ClassVar

from provision.redfish.resources import ComputerSystem, ServiceRoot
from provision.redfish.vendors.base import FwRule, VendorPlugin
from provision.redfish.vendors.service_accounts import ServiceAccount

HOST_INTERFACE_ONLY = frozenset({"Redfish", "WebUI"})
SERVICE_ACCOUNTS = (
    ServiceAccount(pattern=r"Nvd?BluefieldUefi\d*", why="the BlueField UEFI's account (NVIDIA BlueField BMC docs)"),
    ServiceAccount(pattern="fwupd", why="the BMC's firmware-update account (as captured on a GH200 BMC)"),
    ServiceAccount(pattern=r"[A-Za-z0-9]{16}|bootstrap\d+", account_types=HOST_INTERFACE_ONLY,
                   why="a host-interface bootstrap account (DSP0270; the BMC deletes it at a host reset)"),
)


class NvidiaHgxPlugin(VendorPlugin):
    """The BMC whose own root says NVIDIA (Vendor "NVIDIA", or Oem "Nvidia" on the root).

    An AMI or Supermicro host BMC that merely aggregates an HGX baseboard keeps its own plugin: detection looks
    at the root's Vendor/Oem, not at the HGX_ entries those BMCs also list."""

    name = "nvidia_hgx"
    manufacturers = ("nvidia",)
    oem_keys = ("Nvidia", "NVIDIA")
    bios_pending_suffix = "Settings"
    firmware_rules: ClassVar[dict[str, tuple[FwRule, ...]]] = {
        # this BMC first; an HGX baseboard BMC addressed directly has only HGX_FW_BMC_0
        "bmc": (FwRule(id=r"^FW_BMC_\d+$"), FwRule(id=r"^HGX_FW_BMC_\d+$")),
        "bios": (FwRule(id=r"^UEFI$"), FwRule(id=r"^HostBIOS_\d+$")),
        "gpu": (FwRule(id=r"^HGX_FW_GPU_(SXM_)?\d+$"),),
        "nvswitch": (FwRule(id=r"^HGX_FW_NVSwitch_\d+$"),),
        "hgx_bmc": (FwRule(id=r"^HGX_FW_BMC_\d+$"),),
        "erot": (FwRule(id=r"^(HGX_)?FW_ERoT_"),),
        "cpu": (FwRule(id=r"^HGX_FW_CPU_\d+$"),),
        "fpga": (FwRule(id=r"^HGX_FW_FPGA_\d+$"),),
    }
    firmware_exclude = r"(?i)(?:^|[^A-Za-z0-9])(inforom)(?:[^A-Za-z]|$)"
    service_accounts = SERVICE_ACCOUNTS

    @classmethod
    def matches(cls, root: ServiceRoot, system: ComputerSystem | None) -> bool:
        """The root's own Vendor or Oem only: a host system reporting Manufacturer NVIDIA (a DGX behind an AMI
        BMC) is not enough."""
        return (root.vendor or "").strip().lower() == "nvidia" or any(k in root.oem for k in cls.oem_keys)
