"""The vendor plugin contract and the DMTF-standard behaviour every plugin starts from."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from provision.errors import CheckFailed
from provision.redfish.resources import (
    AttributeRegistry,
    Bios,
    ComputerSystem,
    PCIeDevice,
    Processor,
    ServiceRoot,
    SoftwareInventory,
    UpdateService,
)
from provision.redfish.resources.bios import AttrValue
from provision.redfish.resources.power import Temperature
from provision.redfish.vendors import bios_names, versions
from provision.redfish.vendors.bios_names import REGISTRY_NAMES, RegistryNames
from provision.redfish.vendors.service_accounts import ServiceAccount

ENABLED = ("Enabled", "Enable", True, "On")
DISABLED = ("Disabled", "Disable", False, "Off")
STYLES = (("Enabled", "Disabled"), ("Enable", "Disable"), ("On", "Off"), (True, False))
_GPU_MODEL = re.compile(r"(?i)\b(H100|H200|H800|A100|A800|B100|B200|GB200|GH200|L40S?|L4|A40|A30|A10|GPU)\b")
_NOT_GPU = re.compile(r"(?i)nvswitch|switch|riser|backplane|retimer")
_TOKEN_START = r"(?:^|[^A-Za-z0-9])"
_TOKEN_END = r"(?:[^A-Za-z]|$)"


class FwRule(BaseModel):
    """Which FirmwareInventory entries are one component: every regex given must match (re.search)."""

    model_config = ConfigDict(frozen=True)

    label: str | None = None
    """Id or Name (either)."""
    id: str | None = None
    name: str | None = None
    software_id: str | None = None
    description: str | None = None

    def matches(self, e: SoftwareInventory) -> bool:
        checks = [(self.id, e.id), (self.name, e.name), (self.software_id, e.software_id),
                  (self.description, e.description)]
        if self.label is not None and not any(re.search(self.label, x) for x in (e.id, e.name or "") if x):
            return False
        return all(re.search(rx, value or "") for rx, value in checks if rx is not None)


def _oem_actions(oem: dict[str, Any]) -> list[tuple[str, Any]]:
    """OEM actions at Actions.Oem.<name> or one level deeper, Actions.Oem.<Vendor>.<name> (NVIDIA)."""
    out = [(k, v) for k, v in oem.items() if k.startswith("#")]
    for vendor in (v for k, v in oem.items() if not k.startswith("#") and isinstance(v, dict)):
        out += [(k, v) for k, v in vendor.items() if k.startswith("#")]
    return out


def _labels(e: SoftwareInventory) -> list[str]:
    return [x for x in (e.id, e.name, e.description) if x]



class GpuView(BaseModel):
    """A GPU wherever the vendor lists it."""

    model_config = ConfigDict(frozen=True)

    uri: str
    model: str | None
    serial_number: str | None
    firmware_version: str | None
    memory_gib: float | None
    source: str
    """processors, pcie or chassis."""


class BiosTarget(BaseModel):
    """A neutral BIOS key resolved to this vendor's attribute and value."""

    model_config = ConfigDict(frozen=True)

    key: str
    attribute: str
    value: AttrValue
    via: str | None = None
    """How the attribute was found when no plugin table names it: "registry: DisplayName 'NUMA'"."""


class BiosProof(BaseModel):
    """A BIOS setting judged from other evidence than a BIOS attribute (which this BIOS lacks)."""

    model_config = ConfigDict(frozen=True)

    key: str
    holds: bool
    evidence: str
    """What was read, e.g. 'ComputerSystem.Boot.BootSourceOverrideMode is UEFI'."""


class AccountSlot(BaseModel):
    """One member of the Accounts collection as listed: an empty slot (UserName "") is not an account."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    uri: str
    id: str
    user: str = ""


class AccountRequest(BaseModel):
    """One request that makes or removes an account: its method, URI and body (a Password is added by the
    caller, never held here)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: Literal["POST", "PATCH", "DELETE"]
    uri: str
    body: dict[str, Any] = {}


def _slot_order(slot: AccountSlot) -> tuple[int, str]:
    return (int(slot.id), slot.id) if slot.id.isdigit() else (1 << 30, slot.id)


class VendorPlugin:
    """DMTF-standard behaviour; vendor plugins override the class data or a method, never branch."""

    name: ClassVar[str] = "generic"
    manufacturers: ClassVar[tuple[str, ...]] = ()
    oem_keys: ClassVar[tuple[str, ...]] = ()

    bios_patterns: ClassVar[dict[str, tuple[str, ...]]] = {
        "sriov": (r"(?i)^(SriovGlobalEnable|Sriov|SriovSupport)$",),
        "above_4g_decoding": (r"(?i)^(MmioAbove4Gb|Above4GDecoding|Above4G)$",),
        "hyperthreading": (r"(?i)^(ProcHyperthreading|LogicalProc|HyperThreading)$",),
        "power_profile": (r"(?i)^(PowerProfile|SysProfile|WorkloadProfile)$",),
        "numa": (r"(?i)^NUMA$",),
        "sub_numa_clustering": (r"(?i)^(SubNumaCluster|SNC)$",),
        "iommu": (r"(?i)^(IntelVTd|VTd|Iommu|ProcVirtualization)$",),
        "boot_mode": (r"(?i)^BootMode$",),
        "turbo": (r"(?i)^(ProcTurboMode|TurboMode)$",),
        "resizable_bar": (r"(?i)^(ResizableBar|ReSizeBar)$",),
    }
    bios_values: ClassVar[dict[str, tuple[AttrValue, ...]]] = {
        "enabled": ENABLED,
        "disabled": DISABLED,
        "performance": ("MaxPerf", "PerfOptimized", "Performance", "MaximumPerformance"),
        "uefi": ("Uefi", "UEFI"),
    }
    bios_attr_values: ClassVar[dict[str, dict[str, AttrValue]]] = {}
    """Per vendor attribute, the value each neutral value means where it is not an Enabled/Disabled spelling
    (Lenovo Memory_SocketInterleave: enabled -> NUMA)."""
    bios_inverted: ClassVar[frozenset[str]] = frozenset()
    """Neutral keys whose vendor attribute has the opposite sense (Dell NodeInterleave for numa)."""
    bios_pending_suffix: ClassVar[str] = "Settings"
    bios_registry_names: ClassVar[dict[str, RegistryNames]] = REGISTRY_NAMES
    """Neutral keys found by the registry's AttributeName/DisplayName after `bios_patterns` (bios_names.py)."""

    firmware_rules: ClassVar[dict[str, tuple[FwRule, ...]]] = {
        "bmc": (FwRule(label=r"(?i)^(bmc|bmc firmware|host_?bmc(_\d+)?|.*remote access controller.*)$"),
                FwRule(label=r"(?i)" + _TOKEN_START + "bmc" + _TOKEN_END)),
        "bios": (FwRule(label=r"(?i)^(bios|uefi|system rom|host_?bios(_\d+)?|bios firmware|.* bios firmware)$"),
                 FwRule(label=r"(?i)^(?!.*(driver|option ?rom|nvme|raid|adapter|nic\b)).*\bbios\b.*$")),
        "gpu": (FwRule(label=r"(?i)^(?!.*(switch|riser|backplane|retimer)).*" + _TOKEN_START
                       + r"gpu(_?sxm)?(_?\d+)?" + _TOKEN_END),),
        "nvswitch": (FwRule(label=r"(?i)^.*nvswitch.*$"),),
        "ib_nic": (FwRule(label=r"(?i)^.*(connectx|infiniband|mellanox|" + _TOKEN_START + r"nic\d*"
                          + _TOKEN_END + ").*$"),),
    }
    """Per component, alternatives in order of preference: the first rule that matches a running entry wins
    (so a vendor can say "FW_BMC_0, else HGX_FW_BMC_0"). Token bounds treat `_` as a separator (`\\b` does not:
    `_` is a word character, so `\\bgpu` never matched HGX_FW_GPU_SXM_1)."""
    firmware_exclude: ClassVar[str] = r"(?i)" + _TOKEN_START + r"(erot|inforom|me|pldm)" + _TOKEN_END
    """Entries that are never one of the spec's components (root-of-trust, InfoROM, Intel ME)."""
    inactive_pattern: ClassVar[str] = (
        r"(?i)" + _TOKEN_START + r"(backup|golden|staging|staged|pending|inactive|previous|capsule|recovery"
        r"|redundant|standby|secondary|rollback)" + _TOKEN_END)
    """Names of slots that hold firmware which is not running (Supermicro Golden_/Staging_/Backup_, Lenovo
    -Backup/-Pending, HPE "Redundant System ROM", Dell Previous-)."""
    inactive_states: ClassVar[frozenset[str]] = frozenset(
        {"Disabled", "StandbySpare", "StandbyOffline", "Absent", "UnavailableOffline", "Deferring"})
    """DMTF Status.State values of a slot that is not the running image (Lenovo marks BMC-Backup StandbySpare and
    the -Pending slots Disabled)."""

    internal_ambient: ClassVar[str] = r"(?i)\bambient\b"
    """Thermal sensor names that read the air inside the chassis (judged against the spec's
    warn_internal_ambient_c / fail_internal_ambient_c), among the sensors that are not the inlet. 'Ambient' is
    the DMTF mockups' and others' name; a vendor whose board ambient is named otherwise overrides this."""
    inlet_name: ClassVar[str] = r"(?i)\binlet\b"
    """Names of the chassis inlet sensor on a BMC that marks none PhysicalContext Intake (Supermicro 'Inlet Temp',
    PhysicalContext SystemBoard)."""
    inlet_contexts: ClassVar[frozenset[str | None]] = frozenset({None, "SystemBoard", "Chassis"})
    """PhysicalContexts an inlet found by name may have: a GPU's or a GPU subsystem's 'Inlet' (Supermicro
    'GPU Inlet Temp' PhysicalContext GPU, GH200 'InletSensor_0' GPUSubsystem) is a component's, not the chassis'."""

    account_slots: ClassVar[bool] = False
    """Fixed account slots (all listed, free ones with UserName ""): made by PATCHing a free slot, removed by
    emptying it. DSP0266's default: POST to the collection, DELETE the account."""
    reserved_account_slots: ClassVar[frozenset[str]] = frozenset()
    """Slot Ids never taken for a new account, even when empty."""
    account_roles: ClassVar[tuple[str, ...] | None] = None  # the only roles an account may have, if vendor-fixed
    service_accounts: ClassVar[tuple[ServiceAccount, ...]] = ()  # the BMC's own accounts, never removed (see module)

    # ---- detection -------------------------------------------------------------------------------
    @classmethod
    def matches(cls, root: ServiceRoot, system: ComputerSystem | None) -> bool:
        maker = " ".join(filter(None, [root.vendor, system.manufacturer if system else None])).lower()
        if any(m.lower() in maker for m in cls.manufacturers):
            return True
        return any(k in root.oem for k in cls.oem_keys)

    # ---- accounts --------------------------------------------------------------------------------
    def account_fields(self, user: str, role: str) -> dict[str, Any]:
        """A new account's properties besides its Password (ManagerAccount)."""
        return {"UserName": user, "RoleId": role, "Enabled": True}

    def create_account(self, collection: str, slots: Sequence[AccountSlot], user: str, role: str) -> AccountRequest:
        """How to make `user`: a POST to the collection, or on a slot BMC a PATCH of the lowest free slot that is
        not reserved (`slots`: the collection's members as listed). CheckFailed when no slot is free."""
        if not self.account_slots:
            return AccountRequest(method="POST", uri=collection, body=self.account_fields(user, role))
        free = sorted((s for s in slots if not s.user and s.id not in self.reserved_account_slots), key=_slot_order)
        if not free:
            raise CheckFailed(f"{collection}: no free account slot for {user} (all {len(slots)} listed are taken "
                              f"or reserved)")
        return AccountRequest(method="PATCH", uri=free[0].uri, body=self.account_fields(user, role))

    def remove_account(self, uri: str) -> tuple[AccountRequest, ...]:
        """How to remove the account at `uri`: DELETE it, or on a slot BMC empty its slot."""
        if not self.account_slots:
            return (AccountRequest(method="DELETE", uri=uri),)
        return (AccountRequest(method="PATCH", uri=uri, body={"Enabled": False, "RoleId": "None"}),
                AccountRequest(method="PATCH", uri=uri, body={"UserName": ""}))

    # ---- BIOS ------------------------------------------------------------------------------------
    def pending_uri(self, bios: Bios) -> str:
        """Where pending BIOS values are written."""
        return bios.settings_uri or f"{bios.uri}/{self.bios_pending_suffix}"

    def bios_registry(self, registry: AttributeRegistry, current: dict[str, AttrValue]) -> AttributeRegistry:
        """The registry with each enumeration's values spelt as this BIOS's attributes hold them. DMTF
        AttributeRegistry: an attribute holds a ValueName (ValueDisplayName is for people), so the
        standard plugin changes nothing; a BIOS that shows display names overrides this (Supermicro)."""
        return registry

    def bios_attribute(self, key: str, names: list[str]) -> str | None:
        for pattern in self.bios_patterns.get(key, ()):
            for name in names:
                if re.match(pattern, name):
                    return name
        return None

    def resolve_bios(
        self, key: str, value: str | int | bool, current: dict[str, AttrValue], registry: AttributeRegistry
    ) -> BiosTarget | None:
        """The vendor attribute and value for one neutral key; None when this BIOS has no such setting.

        The plugin's `bios_patterns` first; then the registry's names and display names (bios_names.py), the
        target saying which it was found by. AmbiguousBiosKey when several registry attributes fit."""
        names = sorted(set(registry.attributes) | set(current))
        attr, via = self.bios_attribute(key, names), None
        if attr is None:
            found = bios_names.find(key, registry, self.bios_registry_names)
            if found is None:
                return None
            attr, via = found.attribute, found.via
        neutral = value
        if key in self.bios_inverted and isinstance(value, str) and value in ("enabled", "disabled"):
            neutral = "disabled" if value == "enabled" else "enabled"
        return BiosTarget(key=key, attribute=attr, value=self._bios_value(attr, neutral, current, registry), via=via)

    def _bios_value(
        self, attr: str, neutral: str | int | bool, current: dict[str, AttrValue], registry: AttributeRegistry
    ) -> AttrValue:
        mapped = self.bios_attr_values.get(attr, {})
        if isinstance(neutral, str) and neutral in mapped:
            return mapped[neutral]
        if not isinstance(neutral, str) or neutral not in self.bios_values:
            return registry.spelling(attr, neutral)  # a value given in the other registry form
        candidates = self.bios_values[neutral]
        entry = registry.attributes.get(attr)
        if entry is not None and not registry.inferred:
            if entry.type == "Boolean":
                return neutral == "enabled"
            allowed = entry.allowed
            for cand in candidates:
                if cand in allowed:
                    return cand
            for cand in candidates:  # a registry whose ValueNames are codes ("0"/"1"): by ValueDisplayName
                for v in entry.value:
                    if v.value_display_name is not None and v.value_display_name == cand:
                        return v.value_name
        cur = current.get(attr)
        if cur in candidates:
            return cur
        for style in STYLES:
            if cur in style and neutral in ("enabled", "disabled"):
                return style[0] if neutral == "enabled" else style[1]
        return next((c for c in candidates if isinstance(c, str)), candidates[0])

    def prove_bios(self, key: str, value: str | int | bool, system: ComputerSystem) -> BiosProof | None:
        """A neutral key this BIOS has no attribute for, judged another way; None when it cannot be.

        Generic: boot_mode from ComputerSystem.Boot.BootSourceOverrideMode (DMTF ComputerSystem schema:
        "the BIOS boot mode to use when the system boots from the BootSourceOverrideTarget boot source";
        the BMCs of the captures report the firmware's mode there, e.g. Supermicro X13, whose BIOS has no
        boot-mode attribute). A vendor with better evidence overrides this.
        """
        mode = system.boot.boot_source_override_mode
        if key != "boot_mode" or not isinstance(value, str) or not mode:
            return None
        return BiosProof(key=key, holds=mode.lower() == value.lower(),
                         evidence=f"ComputerSystem.Boot.BootSourceOverrideMode is {mode}")

    def is_sel(self, service: dict[str, Any]) -> bool | None:
        """Is this LogService the system event log by the vendor's own naming? None: judge by the standard
        (LogEntryType SEL, or SEL in its Id or Name; ops.sel)."""
        return None

    def is_internal_ambient(self, sensor_name: str | None) -> bool:
        """Does this sensor's name say internal ambient (see `internal_ambient`)? The inlet is excluded by
        `temperature_roles`, which callers use."""
        return bool(sensor_name) and re.search(self.internal_ambient, sensor_name or "") is not None

    def temperature_roles(self, temps: Sequence[Temperature]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(inlet, internal ambient) sensor names. Inlet: every sensor of PhysicalContext Intake (HPE
        '01-Inlet Ambient', Lenovo 'Ambient Temp'); where none is, a name matching `inlet_name` in one of
        `inlet_contexts`. Internal ambient: a name matching `internal_ambient` that is not an inlet."""
        named = [t for t in temps if t.name]
        inlet = [t.name for t in named if t.physical_context == "Intake"] or [
            t.name for t in named
            if t.physical_context in self.inlet_contexts and re.search(self.inlet_name, t.name or "")]
        ambient = [t.name for t in named if t.name not in inlet and self.is_internal_ambient(t.name)]
        return tuple(n for n in inlet if n), tuple(n for n in ambient if n)

    # ---- firmware --------------------------------------------------------------------------------
    def parse_version(self, raw: str | None) -> str | None:
        return versions.parse_version(raw)

    def match_firmware(
        self, component: str, entries: list[SoftwareInventory], override: dict[str, str] | None = None
    ) -> list[SoftwareInventory]:
        """The FirmwareInventory entries that are this component's running firmware (never a pending, backup,
        staging or inactive copy, even when the spec's `match` names it)."""
        pattern = (override or {}).get(self.name)
        rules = (FwRule(label=pattern),) if pattern else self.firmware_rules.get(component, ())
        running = [e for e in entries if self.is_running(e)]
        for rule in rules:
            found = [e for e in running if rule.matches(e) and not self._excluded(e)]
            if found:
                return found
        return []

    def is_running(self, entry: SoftwareInventory) -> bool:
        """False for slots that hold firmware the device is not running, by standard state or by name."""
        state = entry.status.state if entry.status else None
        if state in self.inactive_states:
            return False
        return not any(re.search(self.inactive_pattern, x) for x in _labels(entry))

    def _excluded(self, entry: SoftwareInventory) -> bool:
        return any(re.search(self.firmware_exclude, x) for x in _labels(entry))

    def multipart_uri(self, service: UpdateService) -> str | None:
        return service.multipart_http_push_uri

    task_monitor: ClassVar[str] = "task"
    """How an update's progress is followed: "task" (the DMTF Task the POST answers, to TaskState Completed)."""

    def update_methods(self, service: UpdateService) -> tuple[str, ...]:
        """What this BMC offers, as it advertises it: multipart (MultipartHttpPushUri with UpdateParameters
        Targets), simple (SimpleUpdate with ImageURI), http_push (the deprecated HttpPushUri PUT/POST) and the
        OEM install actions (e.g. oem:#SmcUpdateService.Install); the ones this plugin uses come first."""
        offered = []
        if self.multipart_uri(service):
            offered.append("multipart")
        if service.simple_update_target:
            offered.append("simple")
        if service.multipart_http_push_uri and "multipart" not in offered:
            offered.append("multipart (not used)")
        if service.http_push_uri:
            offered.append("http_push")
        raw = service.actions.get("Oem")
        oem: dict[str, Any] = raw if isinstance(raw, dict) else {}
        for name, action in sorted(_oem_actions(oem)):
            if isinstance(action, dict) and action.get("target"):
                offered.append(f"oem:{name}")
        return tuple(offered)

    def update_targets(self, component: str, entries: list[SoftwareInventory]) -> list[str]:
        """The `Targets` of an update: the inventory entries themselves (DMTF semantics)."""
        return [e.uri for e in entries]

    def after_push(
        self, service: UpdateService, component: str, entries: list[SoftwareInventory], system_uri: str,
        manager_uri: str | None,
    ) -> tuple[str, dict[str, Any]] | None:
        """An extra action some BMCs need after a multipart push (URI, body); None for none."""
        return None

    # ---- GPUs ------------------------------------------------------------------------------------
    def find_gpus(
        self, processors: list[Processor], pcie: list[PCIeDevice], chassis: list[dict[str, Any]]
    ) -> list[GpuView]:
        """GPUs from Processors (type GPU, with or without a model string), else PCIe devices, else HGX GPU
        chassis. A GPU Processor without a Model takes it from the PCIe device it links (Lenovo XCC)."""
        boards = {d.uri: d for d in pcie}
        found = [_gpu_from_proc(p, boards.get(p.pcie_device_uri or "")) for p in processors
                 if (p.processor_type or "").upper() == "GPU" and p.present]
        if found:
            return found
        found = [_gpu_from_pcie(d) for d in pcie if self.is_gpu_device(d)]
        if found:
            return found
        return [
            GpuView(uri=str(c.get("@odata.id")), model=c.get("Model"), serial_number=c.get("SerialNumber"),
                    firmware_version=None, memory_gib=_gib_from_model(c.get("Model")), source="chassis")
            for c in chassis if re.match(r"(?i)^HGX_GPU_(SXM_)?\d+$", str(c.get("Id", "")))
        ]

    def is_gpu_device(self, dev: PCIeDevice) -> bool:
        label = " ".join(filter(None, [dev.id, dev.name, dev.model]))
        return dev.present and bool(_GPU_MODEL.search(label)) and not _NOT_GPU.search(label)


def _gib_from_model(model: str | None) -> float | None:
    m = re.search(r"(\d+)\s*GB", model or "")
    return float(m.group(1)) if m else None


def _gpu_from_proc(p: Processor, board: PCIeDevice | None) -> GpuView:
    model = p.model or (board.label if board else None)
    return GpuView(uri=p.uri, model=model, serial_number=p.serial_number, firmware_version=p.firmware_version,
                   memory_gib=p.own_memory_gib or _gib_from_model(model), source="processors")


def _gpu_from_pcie(d: PCIeDevice) -> GpuView:
    return GpuView(uri=d.uri, model=d.label, serial_number=d.serial_number, firmware_version=d.firmware_version,
                   memory_gib=_gib_from_model(d.label), source="pcie")
