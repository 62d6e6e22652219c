"""Facts of a whole Mockup-Creator capture, read straight from its files by plain JSON walking (independent of the
product: nothing from `provision` is imported), to hold the inventory against.

It follows the links the Redfish standard defines, from the service root: the host system (the one with a Bios),
its Processors, Storage (each subsystem's Drives) and SimpleStorage; every chassis' Drives, Power and
PowerSubsystem/PowerSupplies and NetworkAdapters (Ports or NetworkPorts); the FirmwareInventory. Counting rules
(the issue's): a drive or PSU is one per serial number, absent slots are none, removable media (a name or model
with "virtual", a CD/DVD/USB MediaType, Removable true) is not a drive, a SimpleStorage device without serial is
one of the drives of its model (a model counts the larger of its two listings), a port states Ethernet or
InfiniBand in LinkNetworkTechnology (else ActiveLinkTechnology) or is unknown, an adapter listing no port is one
unknown port, and where no chassis has NetworkAdapters each non-virtual EthernetInterface of the host is one
unknown port."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

FULL = Path(__file__).resolve().parents[2] / "fixtures" / "redfish" / "full"
CAPTURES = ("hpe", "lenovo", "nvidia_dpu", "nvidia_gbswitch", "nvidia_gh200", "supermicro",
            "dmtf_tower", "dmtf_localstorage", "dmtf_liquid_cooled_server", "dmtf_catfish")
R = "/redfish/v1"


@dataclass(frozen=True)
class Facts:
    drives: int
    drive_serials: frozenset[str]
    psus: int
    ports: dict[str, int]  # Ethernet, InfiniBand, other, unknown
    cpus: tuple[str | None, ...]  # the host's CPU models, as the capture names them (Model, else a named family)
    gpus: int
    firmware: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)  # Id -> (Version, State)
    system: dict[str, str | None] = field(default_factory=dict)  # the host system's URI and identity properties
    device: bool = False  # the host system states no host CPU (ProcessorSummary.Count 0): a DPU's or switch's BMC


class Capture:
    def __init__(self, name: str) -> None:
        self.root = FULL / name

    def get(self, uri: str) -> Any:
        path = self.root / uri.split("?")[0].strip("/") / "index.json"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def follow(self, obj: Any, key: str) -> Any:
        link = obj.get(key) if isinstance(obj, dict) else None
        return self.get(link["@odata.id"]) if isinstance(link, dict) and link.get("@odata.id") else None

    def members(self, coll: Any) -> list[dict[str, Any]]:
        out = []
        for m in (coll or {}).get("Members") or []:
            body = self.get(m["@odata.id"]) if isinstance(m, dict) and m.get("@odata.id") else None
            if isinstance(body, dict):
                out.append(body)
        return out


def _present(obj: dict[str, Any]) -> bool:
    return ((obj.get("Status") or {}).get("State")) != "Absent"


def _serial(obj: dict[str, Any]) -> str | None:
    s = obj.get("SerialNumber")
    return s.strip().upper() if isinstance(s, str) and s.strip() else None


def _removable(obj: dict[str, Any]) -> bool:
    words = " ".join(str(obj.get(k) or "") for k in ("Name", "Model", "Id")).lower()
    return obj.get("Removable") is True or "virtual" in words or \
        str(obj.get("MediaType") or "").upper() in ("CD", "DVD", "FLOPPY", "USBSTICK", "OPTICAL")


def _host(cap: Capture) -> dict[str, Any]:
    systems = cap.members(cap.follow(cap.get(R), "Systems"))
    return next((s for s in systems if isinstance(s.get("Bios"), dict)), systems[0] if systems else {})


def _chassis(cap: Capture) -> list[dict[str, Any]]:
    return cap.members(cap.follow(cap.get(R), "Chassis"))


def _drives(cap: Capture) -> tuple[int, frozenset[str]]:
    host = _host(cap)
    listed: dict[str, dict[str, Any]] = {}
    for st in cap.members(cap.follow(host, "Storage")):
        for link in st.get("Drives") or []:
            d = cap.get(link["@odata.id"])
            if isinstance(d, dict):
                listed[d["@odata.id"].rstrip("/")] = d
    for ch in _chassis(cap):
        for d in cap.members(cap.follow(ch, "Drives")):
            listed[d["@odata.id"].rstrip("/")] = d
    by_identity = {(_serial(d) or uri): d for uri, d in listed.items() if _present(d) and not _removable(d)}
    devices = [dev for ss in cap.members(cap.follow(host, "SimpleStorage")) for dev in ss.get("Devices") or []
               if isinstance(dev, dict) and _present(dev) and not _removable(dev)]
    per_model = Counter(str(d.get("Model")) for d in by_identity.values())
    extra = sum(max(0, n - per_model[m]) for m, n in Counter(str(d.get("Model")) for d in devices).items())
    return len(by_identity) + extra, frozenset(s for s in (_serial(d) for d in by_identity.values()) if s)


def _psus(cap: Capture) -> int:
    total = 0
    for ch in _chassis(cap):
        legacy = [p for p in ((cap.follow(ch, "Power") or {}).get("PowerSupplies") or []) if _present(p)]
        sub = [p for p in cap.members(cap.follow(cap.follow(ch, "PowerSubsystem"), "PowerSupplies")) if _present(p)]
        if not legacy:
            total += len(sub)
            continue
        serials = {_serial(p) for p in legacy} | {_serial(p) for p in sub}
        unnamed = max(len([p for p in legacy if not _serial(p)]), len([p for p in sub if not _serial(p)]))
        total += len(serials - {None}) + unnamed
    return total


def _ports(cap: Capture) -> dict[str, int]:
    """NetworkAdapters' ports; where no chassis has NetworkAdapters, the host's non-virtual EthernetInterfaces,
    each of unknown technology (the schema states none)."""
    out = Counter({"Ethernet": 0, "InfiniBand": 0, "other": 0, "unknown": 0})
    if not any(isinstance(ch.get("NetworkAdapters"), dict) for ch in _chassis(cap)):
        out["unknown"] += len([i for i in cap.members(cap.follow(_host(cap), "EthernetInterfaces"))
                               if i.get("EthernetInterfaceType") != "Virtual"])
    for ch in _chassis(cap):
        for adapter in cap.members(cap.follow(ch, "NetworkAdapters")):
            ports = cap.members(cap.follow(adapter, "Ports") or cap.follow(adapter, "NetworkPorts"))
            for p in ports:
                tech = str(p.get("LinkNetworkTechnology") or p.get("ActiveLinkTechnology") or "").strip()
                out[tech if tech in ("Ethernet", "InfiniBand") else "other" if tech else "unknown"] += 1
            if not ports:
                out["unknown"] += 1
    return dict(out)


def _cpu_name(p: dict[str, Any]) -> str | None:
    model = str(p.get("Model") or "").strip()
    if model and model.upper() not in ("N/A", "UNKNOWN"):
        return model
    family = str((p.get("ProcessorId") or {}).get("EffectiveFamily") or "").strip()
    return family if any(c.isalpha() for c in family.replace("0x", "")) and " " in family else None


def _processors(cap: Capture, system: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in cap.members(cap.follow(system, "Processors")) if _present(p)]


def _gpus(cap: Capture) -> int:
    """GPUs as Processors of type GPU on any system; a capture that lists none there (Supermicro's HGX tree) lists
    them as PCIe devices named GPU<n>."""
    systems = cap.members(cap.follow(cap.get(R), "Systems"))
    gpus = [p for s in systems for p in _processors(cap, s) if str(p.get("ProcessorType")).upper() == "GPU"]
    if gpus:
        return len(gpus)
    devices = [d for ch in _chassis(cap) for d in cap.members(cap.follow(ch, "PCIeDevices"))]
    return len({d["@odata.id"] for d in devices if _present(d) and str(d.get("Id", "")).startswith("GPU")
                and str(d.get("Id"))[3:].isdigit()})


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def _system(cap: Capture) -> dict[str, str | None]:
    """The host system's own identity properties, as its file gives them (blank: None)."""
    host = _host(cap)
    keys = {"manufacturer": "Manufacturer", "model": "Model", "sku": "SKU", "serial_number": "SerialNumber",
            "uuid": "UUID"}
    return {"uri": host.get("@odata.id")} | {k: _text(host.get(v)) for k, v in keys.items()}


def _firmware(cap: Capture) -> dict[str, tuple[str | None, str | None]]:
    coll = cap.follow(cap.get(R), "UpdateService")
    entries = cap.members(cap.follow(coll, "FirmwareInventory"))
    return {str(e["Id"]): (e.get("Version"), (e.get("Status") or {}).get("State")) for e in entries}


@cache
def facts(name: str) -> Facts:
    cap = Capture(name)
    drives, serials = _drives(cap)
    cpus = tuple(_cpu_name(p) for p in _processors(cap, _host(cap))
                 if str(p.get("ProcessorType") or "CPU").upper() == "CPU")
    return Facts(drives=drives, drive_serials=serials, psus=_psus(cap), ports=_ports(cap), cpus=cpus,
                 gpus=_gpus(cap), firmware=_firmware(cap), system=_system(cap),
                 device=(_host(cap).get("ProcessorSummary") or {}).get("Count") == 0)
