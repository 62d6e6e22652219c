"""Inventory: observe the node's hardware as a typed inventory; plan = drift against the spec."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from provision.redfish.connector import ROOT, Connector, Json, Unreadable
from provision.redfish.resources import (
    ComputerSystem,
    Drive,
    Memory,
    NetworkAdapter,
    NetworkPort,
    PCIeDevice,
    Power,
    Processor,
    ServiceRoot,
    SoftwareInventory,
    Storage,
    Thermal,
)
from provision.redfish.vendors import GpuView
from provision.redfish.vendors.registry import detect
from provision.spec.model import NodeSpec


class Adapter(BaseModel):
    """A network adapter with its ports."""

    model_config = ConfigDict(frozen=True)

    adapter: NetworkAdapter
    ports: list[NetworkPort] = Field(default_factory=list)

    @property
    def technology(self) -> str | None:
        techs = {p.technology for p in self.ports if p.technology}
        return "InfiniBand" if "InfiniBand" in techs else ("Ethernet" if techs else None)

    @property
    def speed_gbps(self) -> float | None:
        speeds = [p.speed_gbps for p in self.ports if p.speed_gbps]
        return max(speeds) if speeds else None


class NodeInventory(BaseModel):
    """Everything observe() read, typed."""

    model_config = ConfigDict(frozen=True)

    vendor: str
    system: ComputerSystem
    cpus: list[Processor]
    gpus: list[GpuView]
    memory: list[Memory]
    drives: list[Drive]
    storage: list[Storage]
    pcie_devices: list[PCIeDevice]
    adapters: list[Adapter]
    power: list[Power]
    thermal: list[Thermal]
    firmware: list[SoftwareInventory]
    missing: list[str] = Field(default_factory=list, description="Linked URIs the BMC answered 404 for")
    unreadable: list[Unreadable] = Field(default_factory=list, description="Linked URIs the BMC did not give "
                                         "(HTTP error after retries, HTML, malformed JSON), with why")
    requests: int = 0


def observe(conn: Connector) -> NodeInventory:
    """Read the whole node: expanded collections where allowed, bounded parallel GETs otherwise."""
    start = conn.stats.requests
    top = conn.parallel({
        "systems": lambda: conn.members(f"{ROOT}/Systems"),
        "chassis": lambda: conn.members(f"{ROOT}/Chassis", levels=2),
        "firmware": lambda: conn.members(_firmware_uri(conn)),
    })
    systems: list[Json] = top["systems"]
    chassis: list[Json] = top["chassis"]
    system = systems[0] if systems else {}
    jobs: dict[str, Any] = {}
    for key in ("Processors", "Memory", "Storage", "SimpleStorage", "PCIeDevices"):
        if isinstance(system.get(key), dict):
            uri = str(system[key]["@odata.id"])
            jobs[f"sys:{key}"] = (lambda u=uri, k=key: conn.members(u, levels=2 if k == "Storage" else 1))
    for c in chassis:
        for key in ("PCIeDevices", "NetworkAdapters", "Drives"):
            if isinstance(c.get(key), dict):
                uri = str(c[key]["@odata.id"])
                jobs[f"{c.get('@odata.id')}:{key}"] = (
                    lambda u=uri, k=key: conn.members(u, levels=2 if k == "NetworkAdapters" else 1))
        for key in ("Power", "Thermal"):
            if isinstance(c.get(key), dict):
                jobs[f"{c.get('@odata.id')}:{key}"] = (lambda cc=c, k=key: conn.link(cc, k))
    got = conn.parallel(jobs)
    inv = _assemble(conn, system, chassis, top["firmware"], got)
    return inv.model_copy(update={"requests": conn.stats.requests - start, "missing": list(conn.stats.missing),
                                "unreadable": list(conn.stats.unreadable)})


def _firmware_uri(conn: Connector) -> str:
    link = (conn.root.get("UpdateService") or {}).get("@odata.id")
    return f"{str(link).rstrip('/')}/FirmwareInventory" if link else f"{ROOT}/UpdateService/FirmwareInventory"


def _by_suffix(got: dict[str, Any], suffix: str) -> list[Any]:
    out: list[Any] = []
    for k, v in got.items():
        if k.endswith(f":{suffix}") and v:
            out += v if isinstance(v, list) else [v]
    return out


def _assemble(conn: Connector, system: Json, chassis: list[Json], firmware: list[Json],
              got: dict[str, Any]) -> NodeInventory:
    procs = [Processor.parse(p) for p in got.get("sys:Processors") or []]
    storage_raw = got.get("sys:Storage") or []
    pcie = [PCIeDevice.parse(d) for d in (got.get("sys:PCIeDevices") or []) + _by_suffix(got, "PCIeDevices")]
    pcie = list({d.uri: d for d in pcie}.values())
    drives = _drives(conn, storage_raw, _by_suffix(got, "Drives"))
    adapters = _adapters(conn, _by_suffix(got, "NetworkAdapters"))
    root = ServiceRoot.parse(conn.root)
    sysm = ComputerSystem.parse(system)
    vendor = detect(root, sysm)
    cpus = [p for p in procs if (p.processor_type or "CPU").upper() == "CPU" and p.present]
    return NodeInventory(
        vendor=vendor.name, system=sysm, cpus=cpus,
        gpus=vendor.find_gpus(procs, pcie, chassis),
        memory=[Memory.parse(m) for m in got.get("sys:Memory") or []],
        drives=drives, storage=[Storage.parse(s) for s in storage_raw],
        pcie_devices=pcie, adapters=adapters,
        power=[Power.parse(p) for p in _by_suffix(got, "Power")],
        thermal=[Thermal.parse(t) for t in _by_suffix(got, "Thermal")],
        firmware=[SoftwareInventory.parse(f) for f in firmware],
    )


def _drives(conn: Connector, storage: list[Json], chassis_drives: list[Json]) -> list[Drive]:
    known = {str(d.get("@odata.id", "")).rstrip("/"): d for d in chassis_drives}
    links: list[Any] = []
    for s in storage:
        links += [known.get(str(x.get("@odata.id", "")).rstrip("/"), x) for x in s.get("Drives") or []
                  if isinstance(x, dict)]
    full = conn.resolve(links) + chassis_drives
    uniq = {str(d.get("@odata.id", "")).rstrip("/"): d for d in full}
    return [Drive.parse(d) for d in uniq.values() if Drive.parse(d).present]


def _adapters(conn: Connector, raw: list[Json]) -> list[Adapter]:
    """Adapters with their ports; every port link of every adapter resolved in one parallel batch."""
    port_links: dict[int, list[Any]] = {}
    collections: dict[int, str] = {}
    for i, a in enumerate(raw):
        ref = a.get("Ports") or a.get("NetworkPorts")
        if isinstance(ref, dict) and "Members" in ref:
            port_links[i] = list(ref["Members"])
        elif isinstance(ref, dict) and ref.get("@odata.id"):
            collections[i] = str(ref["@odata.id"])
    fetched = conn.get_many(collections.values())
    for idx, uri in collections.items():
        port_links[idx] = list((fetched.get(uri) or {}).get("Members") or [])
    flat = [link for links in port_links.values() for link in links]
    full = {str(p.get("@odata.id", "")).rstrip("/"): p for p in conn.resolve(flat)}
    out = []
    for i, a in enumerate(raw):
        ids = [str(link.get("@odata.id", "")).rstrip("/") for link in port_links.get(i, []) if isinstance(link, dict)]
        ports = [NetworkPort.parse(full[x]) for x in ids if x in full]
        out.append(Adapter(adapter=NetworkAdapter.parse(a), ports=ports))
    return out


def is_coll(obj: Json) -> bool:
    return "Members" in obj


# ---- drift (plan) --------------------------------------------------------------------------------
Verdict = Literal["ok", "drift", "unknown"]


class DriftItem(BaseModel):
    """One spec figure compared with what the BMC reports."""

    model_config = ConfigDict(frozen=True)

    key: str
    expected: str
    observed: str
    verdict: Verdict


class DriftReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    items: list[DriftItem]

    @property
    def drifted(self) -> list[DriftItem]:
        return [i for i in self.items if i.verdict == "drift"]


def _norm(text: str | None) -> str:
    t = re.sub(r"\((r|tm)\)", "", (text or "").lower())
    t = re.sub(r"\b(cpu|processor|nvidia)\b|@.*$", " ", t)
    return " ".join(t.split())


def _item(key: str, expected: object, observed: object, ok: bool | None) -> DriftItem:
    verdict: Verdict = "unknown" if ok is None else ("ok" if ok else "drift")
    return DriftItem(key=key, expected=str(expected), observed=str(observed), verdict=verdict)


def _same_all(values: list[Any], want: Any) -> bool | None:
    known = [v for v in values if v is not None]
    return None if not known else all(v == want for v in known)


def drift(spec: NodeSpec, inv: NodeInventory) -> DriftReport:
    """Pure: compare spec and inventory figure by figure (unknown where the BMC does not say)."""
    items = _cpu_drift(spec, inv) + _memory_drift(spec, inv) + _gpu_drift(spec, inv)
    items += _storage_drift(spec, inv) + _network_drift(spec, inv) + _power_drift(spec, inv)
    return DriftReport(items=items)


def _cpu_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    models = sorted({c.model or "?" for c in inv.cpus})
    cores = [c.total_cores for c in inv.cpus]
    return [
        _item("cpu.model", spec.cpu.model, ", ".join(models),
              all(_norm(spec.cpu.model) == _norm(m) for m in models) if inv.cpus else None),
        _item("cpu.sockets", spec.cpu.sockets, len(inv.cpus), len(inv.cpus) == spec.cpu.sockets),
        _item("cpu.cores_per_socket", spec.cpu.cores_per_socket, sorted({c for c in cores if c}),
              _same_all(cores, spec.cpu.cores_per_socket)),
    ]


def _memory_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    dimms = [m for m in inv.memory if m.populated]
    sizes = [round((m.capacity_mib or 0) / 1024) for m in dimms]
    total = sum(sizes)
    types = [m.memory_device_type for m in dimms]
    return [
        _item("memory.dimm_count", spec.memory.dimm_count, len(dimms), len(dimms) == spec.memory.dimm_count),
        _item("memory.dimm_size_gb", spec.memory.dimm_size_gb, sorted(set(sizes)),
              _same_all(sizes, spec.memory.dimm_size_gb)),
        _item("memory.total_gb", spec.memory.total_gb, total, total == spec.memory.total_gb),
        _item("memory.type", spec.memory.type, sorted({t for t in types if t}), _same_all(types, spec.memory.type)),
    ]


def _gpu_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    models = sorted({g.model or "?" for g in inv.gpus})
    want = _norm(spec.gpu.model)
    model_ok = all(_norm(m) and (_norm(m) in want or want in _norm(m)) for m in models) if inv.gpus else None
    mems = [g.memory_gib for g in inv.gpus]
    return [
        _item("gpu.count", spec.gpu.count, len(inv.gpus), len(inv.gpus) == spec.gpu.count),
        _item("gpu.model", spec.gpu.model, ", ".join(models), model_ok),
        _item("gpu.memory_gb", spec.gpu.memory_gb, sorted({m for m in mems if m}),
              _same_all([None if m is None else round(m) for m in mems], spec.gpu.memory_gb)),
    ]


def _near(tb: float | None, want: float) -> bool:
    return tb is not None and abs(tb - want) <= 0.1 * want


def _storage_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    nvme = [d for d in inv.drives if (d.protocol or "NVMe").upper() == "NVME"]
    sized = [d for d in nvme if d.capacity_tb]
    boot = [d for d in sized if _near(d.capacity_tb, spec.storage.boot.size_tb)]
    scratch = [d for d in sized if _near(d.capacity_tb, spec.storage.scratch.size_tb)]
    known = bool(sized)
    return [
        _item("storage.nvme_drives", spec.storage.boot.count + spec.storage.scratch.count, len(nvme),
              len(nvme) == spec.storage.boot.count + spec.storage.scratch.count),
        _item("storage.boot.count", f"{spec.storage.boot.count} x {spec.storage.boot.size_tb} TB", len(boot),
              len(boot) == spec.storage.boot.count if known else None),
        _item("storage.scratch.count", f"{spec.storage.scratch.count} x {spec.storage.scratch.size_tb} TB",
              len(scratch), len(scratch) == spec.storage.scratch.count if known else None),
    ]


def _network_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    known = [a for a in inv.adapters if a.technology]
    ib = [a for a in known if a.technology == "InfiniBand"]
    eth = [a for a in known if a.technology == "Ethernet"]
    want_ib = spec.network.infiniband.count if spec.network.infiniband else 0
    return [
        _item("network.ethernet.count", spec.network.ethernet.count, len(eth),
              len(eth) == spec.network.ethernet.count if known else None),
        _item("network.infiniband.count", want_ib, len(ib), len(ib) == want_ib if known else None),
    ]


def _power_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    psus = [p for pw in inv.power for p in pw.power_supplies if p.present]
    watts = [p.power_capacity_watts for p in psus]
    return [
        _item("power.psu_count", spec.power.psu_count, len(psus), len(psus) == spec.power.psu_count if inv.power
              else None),
        _item("power.psu_watts", spec.power.psu_watts, sorted({int(w) for w in watts if w}),
              _same_all([None if w is None else int(w) for w in watts], spec.power.psu_watts)),
    ]
