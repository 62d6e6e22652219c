"""Inventory: observe the node's hardware as a typed inventory; plan = drift against the spec."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from provision.redfish.connector import ROOT, Connector, Json, Unreadable, is_expanded
from provision.redfish.ops import identity as platform_identity
from provision.redfish.ops.counting import (
    PortTally,
    controller_protocol,
    drives_by_identity,
    merge_simple_storage,
    port_technology,
    psus_by_identity,
    tally,
    with_controller_protocol,
)
from provision.redfish.resources import (
    ComputerSystem,
    Drive,
    Memory,
    NetworkAdapter,
    NetworkPort,
    PCIeDevice,
    Power,
    PowerControl,
    Processor,
    ServiceRoot,
    SimpleStorage,
    SoftwareInventory,
    Storage,
    Thermal,
    power_from_subsystem,
    thermal_from_subsystem,
)
from provision.redfish.vendors import GpuView
from provision.redfish.vendors.registry import detect
from provision.spec.acceptance import Comparison
from provision.spec.model import NodeSpec
from provision.spec.platforms import PlatformIdentity
from provision.spec.storage import Storage as StorageSpec


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

    @property
    def port_tally(self) -> PortTally:
        """Its ports by stated technology; an adapter that lists no port is one port of unknown technology."""
        return tally([port_technology(p) for p in self.ports] or ["unknown"])


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
    identity: PlatformIdentity | None = Field(default=None, description="What the node is (ops/identity.py)")

    @property
    def ports(self) -> PortTally:
        """Every NIC port by stated link technology (unknown where a port states none)."""
        tallies = [a.port_tally for a in self.adapters]
        return PortTally(ethernet=sum(t.ethernet for t in tallies), infiniband=sum(t.infiniband for t in tallies),
                         other=sum(t.other for t in tallies), unknown=sum(t.unknown for t in tallies))


def observe(conn: Connector) -> NodeInventory:
    """Read the whole node: expanded collections where allowed, bounded parallel GETs otherwise.

    Every standard place is read where the BMC links it, and only then: Storage, SimpleStorage and Chassis Drives
    (one drive per identity across them), Chassis Power and PowerSubsystem (one PSU per identity), Thermal or else
    ThermalSubsystem, Processors of every system (GPUs may sit on an HGX
    baseboard system beside the host), PCIeDevices as a collection or as the older list of links."""
    start = conn.stats.requests
    top = conn.parallel({
        "systems": lambda: conn.members_or_unreadable(f"{ROOT}/Systems"),
        "chassis": lambda: conn.members_or_unreadable(f"{ROOT}/Chassis", levels=2),
        "firmware": lambda: conn.members_or_unreadable(_firmware_uri(conn)),
    })
    systems: list[Json] = top["systems"]
    chassis: list[Json] = top["chassis"]
    system = platform_identity.host_system(systems)
    jobs = _system_jobs(conn, system, [s for s in systems if s is not system]) | _chassis_jobs(conn, chassis)
    link = system.get("EthernetInterfaces")
    if not any(isinstance(c.get("NetworkAdapters"), dict) for c in chassis) and isinstance(link, dict) \
            and link.get("@odata.id"):  # no NetworkAdapters: the host's interfaces are the ports there are
        jobs["sys:EthernetInterfaces"] = (lambda u=str(link["@odata.id"]): conn.members_or_unreadable(u))
    jobs |= platform_identity.identity_jobs(conn, system)
    got = conn.parallel(jobs)
    if not _by_suffix(got, "PCIeDevices") and isinstance(system.get("PCIeDevices"), list):
        got["sys:PCIeDeviceLinks"] = conn.resolve(system["PCIeDevices"])  # ComputerSystem's older link array
    inv = _assemble(conn, system, chassis, top["firmware"], got)
    return inv.model_copy(update={"requests": conn.stats.requests - start, "missing": list(conn.stats.missing),
                                  "unreadable": list(conn.stats.unreadable),
                                  "identity": platform_identity.from_tree(
                                      systems, chassis, got.get(platform_identity.MANAGER_JOB) or [],
                                      got.get(platform_identity.FABRICS_JOB))})


def _system_jobs(conn: Connector, system: Json, others: list[Json]) -> dict[str, Any]:
    jobs: dict[str, Any] = {}
    for key in ("Processors", "Memory", "Storage", "SimpleStorage", "PCIeDevices"):
        if isinstance(system.get(key), dict) and system[key].get("@odata.id"):
            uri = str(system[key]["@odata.id"])
            jobs[f"sys:{key}"] = (lambda u=uri, k=key: conn.members_or_unreadable(u, levels=2 if k == "Storage" else 1))
    for other in others:  # only their Processors: the GPUs of an HGX baseboard listed as its own system
        link = other.get("Processors")
        if isinstance(link, dict) and link.get("@odata.id"):
            jobs[f"{other.get('@odata.id')}:OtherProcessors"] = (
                lambda u=str(link["@odata.id"]): conn.members_or_unreadable(u))
    return jobs


def _chassis_jobs(conn: Connector, chassis: list[Json]) -> dict[str, Any]:
    jobs: dict[str, Any] = {}
    for c in chassis:
        cid = c.get("@odata.id")
        for key in ("PCIeDevices", "NetworkAdapters", "Drives"):
            if isinstance(c.get(key), dict):
                uri = str(c[key]["@odata.id"])
                jobs[f"{cid}:{key}"] = (
                    lambda u=uri, k=key: conn.members_or_unreadable(u, levels=2 if k == "NetworkAdapters" else 1))
        if isinstance(c.get("Power"), dict) or isinstance(c.get("PowerSubsystem"), dict):
            jobs[f"{cid}:Power"] = (lambda cc=c: _power(conn, cc))
        if isinstance(c.get("Thermal"), dict):
            jobs[f"{cid}:Thermal"] = (lambda cc=c: _parse(Thermal, conn.link(cc, "Thermal")))
        elif isinstance(c.get("ThermalSubsystem"), dict):
            jobs[f"{cid}:Thermal"] = (lambda cc=c: _thermal_subsystem(conn, cc))
    return jobs


def _parse(model: type[Power] | type[Thermal], data: Json | None) -> Power | Thermal | None:
    return model.parse(data) if data else None


def _power(conn: Connector, chassis: Json) -> Power | None:
    """Both Chassis Power and PowerSubsystem where the chassis links them (a BMC may list its PSUs in only one,
    or in both): PowerSubsystem's PSUs when Power lists none, else one PSU per identity."""
    parts = conn.parallel({"legacy": lambda: _parse(Power, conn.link(chassis, "Power")),
                           "sub": lambda: _power_subsystem(conn, chassis)})
    legacy, sub = parts["legacy"], parts["sub"]
    if not isinstance(legacy, Power):
        return sub if sub is None else sub.model_copy(update={"power_control": _environment_control(conn, chassis)})
    if sub is None:
        return legacy
    control = legacy.power_control or _environment_control(conn, chassis)
    return legacy.model_copy(update={"power_supplies": psus_by_identity(legacy.power_supplies, sub.power_supplies),
                                     "redundancy": legacy.redundancy or sub.redundancy, "power_control": control})


def _power_subsystem(conn: Connector, chassis: Json) -> Power | None:
    """PowerSubsystem -> PowerSupplies (the schema that replaces Chassis Power)."""
    if not isinstance(chassis.get("PowerSubsystem"), dict):
        return None
    sub = conn.link(chassis, "PowerSubsystem")
    link = (sub or {}).get("PowerSupplies")
    if not isinstance(link, dict) or not link.get("@odata.id"):
        return None
    supplies = link["Members"] if is_coll(link) and all(is_expanded(m) for m in link["Members"]) else \
        conn.members_or_unreadable(str(link["@odata.id"]))
    if not supplies:
        return None
    body = sub or {}
    return power_from_subsystem(str(body.get("@odata.id", "")), supplies, body.get("PowerSupplyRedundancy"))


def _environment_control(conn: Connector, chassis: Json) -> list[PowerControl]:
    watts = _chassis_power_watts(conn, chassis)
    return [] if watts is None else [PowerControl(name="EnvironmentMetrics", power_consumed_watts=watts)]


def _chassis_power_watts(conn: Connector, chassis: Json) -> float | None:
    """EnvironmentMetrics.PowerWatts.Reading of the chassis that holds the PSUs: what the node draws, in the
    schema that replaces Power.PowerControl (DMTF EnvironmentMetrics 1.0+; DSP2046's power-reading use case)."""
    if not isinstance(chassis.get("EnvironmentMetrics"), dict):
        return None
    reading = ((conn.link(chassis, "EnvironmentMetrics") or {}).get("PowerWatts") or {}).get("Reading")
    return float(reading) if isinstance(reading, int | float) else None


def _thermal_subsystem(conn: Connector, chassis: Json) -> Thermal | None:
    """ThermalSubsystem -> ThermalMetrics (temperatures) and Fans (the schema that replaces Chassis Thermal)."""
    sub = conn.link(chassis, "ThermalSubsystem")
    if not sub:
        return None
    fans_link = sub.get("Fans")
    parts = conn.parallel({
        "metrics": lambda: conn.link(sub, "ThermalMetrics"),
        "fans": lambda: conn.members_or_unreadable(str(fans_link["@odata.id"]))
        if isinstance(fans_link, dict) and fans_link.get("@odata.id") else [],
    })
    if not parts["metrics"] and not parts["fans"]:
        return None
    return thermal_from_subsystem(str(sub.get("@odata.id", "")), parts["metrics"], parts["fans"],
                                  sub.get("FanRedundancy"))


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
    others = [Processor.parse(p) for p in _by_suffix(got, "OtherProcessors")]
    storage_raw = got.get("sys:Storage") or []
    pcie_raw = (got.get("sys:PCIeDevices") or []) + _by_suffix(got, "PCIeDevices") + (got.get("sys:PCIeDeviceLinks")
                                                                                        or [])
    pcie = list({d.uri: d for d in (PCIeDevice.parse(x) for x in pcie_raw)}.values())
    drives = _drives(conn, storage_raw, _by_suffix(got, "Drives"), got.get("sys:SimpleStorage") or [])
    root = ServiceRoot.parse(conn.root)
    sysm = ComputerSystem.parse(system)
    vendor = detect(root, sysm)
    cpus = [p for p in procs if (p.processor_type or "CPU").upper() == "CPU" and p.present]
    gpu_procs = procs + [p for p in others if (p.processor_type or "").upper() == "GPU"]
    return NodeInventory(
        vendor=vendor.name, system=sysm, cpus=cpus,
        gpus=vendor.find_gpus(gpu_procs, pcie, chassis),
        memory=[Memory.parse(m) for m in got.get("sys:Memory") or []],
        drives=drives, storage=[Storage.parse(s) for s in storage_raw],
        pcie_devices=pcie, adapters=_adapters(conn, _by_suffix(got, "NetworkAdapters"))
        + _interfaces(system, got.get("sys:EthernetInterfaces") or []),
        power=[p for p in _by_suffix(got, "Power") if isinstance(p, Power)],
        thermal=[t for t in _by_suffix(got, "Thermal") if isinstance(t, Thermal)],
        firmware=[SoftwareInventory.parse(f) for f in firmware],
    )


def _drives(conn: Connector, storage: list[Json], chassis_drives: list[Json], simple: list[Json]) -> list[Drive]:
    """One drive per identity across Storage, Chassis Drives and SimpleStorage Devices; removable media none."""
    known = {str(d.get("@odata.id", "")).rstrip("/"): d for d in chassis_drives}
    links: list[Any] = []
    stated: dict[str, str] = {}  # drive URI -> the one protocol its Storage's controllers attach
    for s in storage:
        linked = [x for x in s.get("Drives") or [] if isinstance(x, dict)]
        links += [known.get(str(x.get("@odata.id", "")).rstrip("/"), x) for x in linked]
        proto = controller_protocol(s)
        stated |= {str(x.get("@odata.id", "")).rstrip("/"): proto for x in linked if proto}
    full = conn.resolve(links) + chassis_drives
    drives = drives_by_identity([with_controller_protocol(Drive.parse(d), stated) for d in full])
    return merge_simple_storage(drives, [d for s in simple for d in SimpleStorage.parse(s).drives()])


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


def _interfaces(system: Json, interfaces: list[Json]) -> list[Adapter]:
    """A system's EthernetInterfaces, read where no chassis lists NetworkAdapters, as the ports of one adapter:
    each a port whose link technology is unknown (the schema states none), virtual interfaces left out."""
    ports = [NetworkPort.parse(i) for i in interfaces if str(i.get("EthernetInterfaceType") or "") != "Virtual"]
    if not ports:
        return []
    link = system.get("EthernetInterfaces") or {}
    return [Adapter(adapter=NetworkAdapter.parse({"@odata.id": link.get("@odata.id", ""), "Id": "EthernetInterfaces",
                                                  "Name": "the system's EthernetInterfaces"}), ports=ports)]


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
    kind: Comparison = Comparison.EXACT
    """exact: observed must equal the spec; minimum: observed must be at least the spec."""


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


def _holds(kind: Comparison, value: float, want: float) -> bool:
    return value >= want if kind == Comparison.MINIMUM else value == want


def _item(key: str, kind: Comparison, want: object, observed: object, ok: bool | None) -> DriftItem:
    verdict: Verdict = "unknown" if ok is None else ("ok" if ok else "drift")
    expected = f">= {want}" if kind == Comparison.MINIMUM else str(want)
    return DriftItem(key=key, expected=expected, observed=str(observed), verdict=verdict, kind=kind)


def _expected(spec: NodeSpec, key: str, want: object) -> str:
    return f">= {want}" if spec.comparison(key) == Comparison.MINIMUM else str(want)


def _figure(spec: NodeSpec, key: str, want: float, values: list[float | None]) -> DriftItem:
    """A per-part figure (DIMM size, PSU watts): every part that reports it must hold; unknown if none does."""
    kind = spec.comparison(key)
    known = [v for v in values if v is not None]
    ok = all(_holds(kind, v, want) for v in known) if known else None
    return _item(key, kind, want, sorted(set(known)), ok)


def _count(spec: NodeSpec, key: str, want: int, seen: int, known: bool = True) -> DriftItem:
    kind = spec.comparison(key)
    return _item(key, kind, want, seen, _holds(kind, seen, want) if known else None)


def _span(spec: NodeSpec, key: str, want: int, known: int, maybe: int, observed: str, seen: bool = True,
          kind: Comparison | None = None) -> DriftItem:
    """A count of which `known` parts are certain and up to `maybe` more may be (a drive whose protocol, a port
    whose technology, the BMC does not state): ok or drift only where every possibility agrees, else unknown
    (and unknown when the BMC showed nothing to count, `seen` False)."""
    kind = kind or spec.comparison(key)
    if kind == Comparison.MINIMUM:
        ok: bool | None = True if known >= want else (False if known + maybe < want else None)
    else:
        ok = (known == want) if maybe == 0 else (False if known > want or known + maybe < want else None)
    return _item(key, kind, want, observed, ok if seen else None)


def _maybe(known: int, maybe: int, what: str) -> str:
    """"3" or "3 (+ 8 of unknown protocol)": how many are certain, and how many more might be."""
    return str(known) if not maybe else f"{known} (+ {maybe} of unknown {what})"


def _text(key: str, want: str, seen: list[str | None], same: Callable[[str, str], bool]) -> DriftItem:
    known = [x for x in seen if x]
    if any(not same(want, x) for x in known):
        ok: bool | None = False
    else:
        ok = True if seen and len(known) == len(seen) else None
    shown = ", ".join(sorted({x or "?" for x in seen}))
    return _item(key, Comparison.EXACT, want, shown, ok)


def drift(spec: NodeSpec, inv: NodeInventory) -> DriftReport:
    """Pure: compare spec and inventory figure by figure (unknown where the BMC does not say), each figure as
    exact or as a minimum (spec.comparison). A figure read from a place the BMC did not give (a collection
    answered 5xx or malformed JSON, or paging that loops) is unknown, naming that URI: counted from part of the
    hardware, it is neither ok nor drift."""
    items = _cpu_drift(spec, inv) + _memory_drift(spec, inv) + _gpu_drift(spec, inv)
    items += _storage_drift(spec, inv) + _network_drift(spec, inv) + _power_drift(spec, inv)
    holes = _holes(inv)
    out = []
    for item in items:
        uris = holes.get(item.key.split(".", 1)[0])
        if uris:
            item = item.model_copy(update={"verdict": "unknown",
                                           "observed": f"{item.observed} (unreadable: {', '.join(uris)})"})
        out.append(item)
    return DriftReport(items=out)


_AREAS: dict[str, frozenset[str]] = {  # the URI segments each drift area is read from
    "cpu": frozenset({"Processors"}),
    "gpu": frozenset({"Processors", "PCIeDevices", "PCIeFunctions"}),
    "memory": frozenset({"Memory"}),
    "storage": frozenset({"Storage", "Drives", "SimpleStorage"}),
    "network": frozenset({"NetworkAdapters", "Ports", "NetworkPorts"}),
    "power": frozenset({"Power", "PowerSubsystem", "PowerSupplies"}),
}
_CHASSIS_AREAS = ("gpu", "storage", "network", "power")


def _holes(inv: NodeInventory) -> dict[str, list[str]]:
    """Drift area -> the unreadable URIs its figures were read from (a whole system: every area; a whole
    chassis: what chassis hold)."""
    out: dict[str, list[str]] = {}
    for u in inv.unreadable:
        parts = u.uri.rstrip("/").split("/")
        tail = parts[3:] if parts[:3] == ["", "redfish", "v1"] else parts
        if tail[:1] == ["Systems"] and len(tail) <= 2:
            areas: tuple[str, ...] = tuple(_AREAS)
        elif tail[:1] == ["Chassis"] and len(tail) <= 2:
            areas = _CHASSIS_AREAS
        else:
            areas = tuple(a for a, segs in _AREAS.items() if segs & set(tail))
        for area in areas:
            out.setdefault(area, []).append(u.uri)
    return out


def _cpu_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    """A CPU whose BMC gives no Model shows its ProcessorId identity and makes the model unknown, not "?"."""
    cores = [c.total_cores for c in inv.cpus]
    model = _text("cpu.model", spec.cpu.model, [c.model for c in inv.cpus], lambda a, b: _norm(a) == _norm(b))
    unnamed = sorted({c.identity for c in inv.cpus if not c.model and c.identity})
    if unnamed:
        named = sorted({c.model for c in inv.cpus if c.model})
        model = model.model_copy(update={"observed": ", ".join(named + [f"{u} (ProcessorId)" for u in unnamed])})
    return [
        model,
        _count(spec, "cpu.sockets", spec.cpu.sockets, len(inv.cpus)),
        _figure(spec, "cpu.cores_per_socket", spec.cpu.cores_per_socket, [float(c) if c else None for c in cores]),
    ]


def _memory_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    dimms = [m for m in inv.memory if m.populated]
    sizes = [round((m.capacity_mib or 0) / 1024) for m in dimms]
    total = sum(sizes)
    return [
        _count(spec, "memory.dimm_count", spec.memory.dimm_count, len(dimms)),
        _figure(spec, "memory.dimm_size_gb", spec.memory.dimm_size_gb, [float(x) for x in sizes]),
        _count(spec, "memory.total_gb", spec.memory.total_gb, total),
        _text("memory.type", spec.memory.type, [m.memory_device_type for m in dimms] if dimms else [],
              lambda a, b: a.upper() == b.upper()),
    ]


def _gpu_match(want: str, seen: str) -> bool:
    a, b = _norm(want), _norm(seen)
    return bool(b) and (b in a or a in b)


def shown(names: list[str | None]) -> str:
    """What the BMC lists, counted by name: "8 x NVIDIA H100 80GB HBM3", "2 x ?, 1 x ConnectX-7", "0"."""
    if not names:
        return "0"
    counts: dict[str, int] = {}
    for n in names:
        counts[n or "?"] = counts.get(n or "?", 0) + 1
    return ", ".join(f"{c} x {n}" for n, c in sorted(counts.items()))


def _absent(key: str, section: str, seen: int, observed: str, known: bool = True) -> DriftItem:
    """A figure of an optional section the spec does not have: it expects none of that hardware, exactly (a
    `comparisons:` minimum would make 0 hold for anything), and drifts when the BMC shows some."""
    return _item(key, Comparison.EXACT, f"0 (no {section} section)", observed, seen == 0 if known else None)


def _gpu_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    if spec.gpu is None:  # no gpu section: no GPU expected, so every GPU the BMC lists is drift
        return [_absent("gpu.count", "gpu", len(inv.gpus), shown([g.model for g in inv.gpus]))]
    gpu = spec.gpu
    mems = [None if g.memory_gib is None else float(round(g.memory_gib)) for g in inv.gpus]
    return [
        _count(spec, "gpu.count", gpu.count, len(inv.gpus)),
        _text("gpu.model", gpu.model, [g.model for g in inv.gpus], _gpu_match),
        _figure(spec, "gpu.memory_gb", gpu.memory_gb, mems),
    ]


def _near(tb: float | None, want: float) -> bool:
    return tb is not None and abs(tb - want) <= 0.1 * want


def _storage_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    return _nvme_drift(spec, inv) + _sas_sata_drift(spec, inv)


def _sas_sata_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    """Without a storage.jbod section the only SAS/SATA drives expected are SAS/SATA boot drives: any other the
    BMC lists (a JBOD, a disk left in a bay) is drift, held exactly as every absent section is; a drive of unknown
    protocol may be one, so it makes the figure unknown unless the known ones already drift."""
    st = spec.storage
    if st.jbod is not None:
        return []
    seen = [d for d in inv.drives if (d.protocol or "").upper() in ("SAS", "SATA")]
    unknown = [d for d in inv.drives if not d.protocol_known]
    boot = st.boot.count if st.boot.interface in ("sas", "sata") else 0
    expected = f"{boot} ({'the SAS/SATA boot drives only: ' if boot else ''}no storage.jbod section)"
    observed = shown([f"{d.protocol.upper() if d.protocol else '?'} {d.model or '?'}" for d in seen])
    if unknown:
        observed += f" (+ {len(unknown)} of unknown protocol)"
    item = _span(spec, "storage.sas_sata_drives", boot, len(seen), len(unknown), observed, kind=Comparison.EXACT)
    return [item.model_copy(update={"expected": expected})]


def _sized(drives: list[Drive], *sizes: float) -> list[Drive]:
    return [d for d in drives if any(_near(d.capacity_tb, s) for s in sizes)]


def _nvme_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    """NVMe drives counted as the BMC states their protocol; a drive whose protocol it does not state may be one
    (counted as "unknown protocol"), so it can leave a figure unknown, never make it hold."""
    nvme = [d for d in inv.drives if d.is_nvme]
    unknown = [d for d in inv.drives if not d.protocol_known]
    sized = bool([d for d in nvme + unknown if d.capacity_tb])
    st = spec.storage

    def role(key: str, want: int, *sizes: float) -> DriftItem:
        known, maybe = len(_sized(nvme, *sizes)), len(_sized(unknown, *sizes))
        return _span(spec, key, want, known, maybe, _maybe(known, maybe, "protocol"), sized)

    total = _maybe(len(nvme), len(unknown), "protocol")
    if st.scratch is None:  # boot drives only: every NVMe drive the BMC lists is one, any more is drift
        return [
            _span(spec, "storage.nvme_drives", st.boot.count, len(nvme), len(unknown), total).model_copy(
                update={"expected": f"{_expected(spec, 'storage.nvme_drives', st.boot.count)} "
                                    "(boot only: no storage.scratch section)"}),
            role("storage.boot.count", st.boot.count, st.boot.size_tb).model_copy(
                update={"expected": f"{st.boot.count} x {st.boot.size_tb} TB"}),
        ]
    boot_sizes: tuple[float, ...] = (st.boot.size_tb,)
    scratch_sizes: tuple[float, ...] = (st.scratch.size_tb,)
    want_boot, want_scratch = st.boot.count, st.scratch.count
    if _near(st.boot.size_tb, st.scratch.size_tb) or _near(st.scratch.size_tb, st.boot.size_tb):
        # One drive size for both roles (e.g. eight 7.68 TB U.2 drives, two of them the RAID1 boot pair): the
        # BMC cannot tell a boot drive from a scratch drive, so both roles are held against the drives of that
        # size together, never each against all of them.
        boot_sizes = scratch_sizes = (st.boot.size_tb, st.scratch.size_tb)
        want_boot = want_scratch = st.boot.count + st.scratch.count
    return [
        _span(spec, "storage.nvme_drives", st.boot.count + st.scratch.count, len(nvme), len(unknown), total),
        role("storage.boot.count", want_boot, *boot_sizes).model_copy(
            update={"expected": _roles(st, want_boot != st.boot.count, f"{st.boot.count} x {st.boot.size_tb} TB")}),
        role("storage.scratch.count", want_scratch, *scratch_sizes).model_copy(
            update={"expected": _roles(st, want_scratch != st.scratch.count,
                                       f"{st.scratch.count} x {st.scratch.size_tb} TB")}),
    ]


def _roles(st: StorageSpec, shared: bool, own: str) -> str:
    """The expected text: the role's own drives, or both roles' when they share one drive size."""
    if not shared or st.scratch is None:
        return own
    return (f"{st.boot.count} x {st.boot.size_tb} TB boot + {st.scratch.count} x {st.scratch.size_tb} TB scratch "
            "(one drive size: counted together)")


def _network_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    """NIC ports by the technology each states; a port that states none is unknown and may be either, so the
    figures say how many are unknown ("1 (Ethernet 1, InfiniBand 1, unknown 8)") and hold only where every
    possibility agrees. A BMC that lists no port at all leaves both unknown."""
    t = inv.ports
    seen = t.total > 0

    def shown_as(n: int) -> str:
        return str(n) if not t.unknown and seen else f"{n} ({t.shown() if seen else 'the BMC lists no NIC port'})"

    eth = _span(spec, "network.ethernet.count", spec.network.ethernet.count, t.ethernet, t.unknown,
                shown_as(t.ethernet), seen)
    if spec.network.infiniband is None:  # no InfiniBand expected: every IB port the BMC lists is drift
        ib = [a for a in inv.adapters if a.port_tally.infiniband]
        observed = shown([a.adapter.model for a in ib]) if ib else "0"
        if t.unknown or not seen:
            observed += f" ({t.shown() if seen else 'the BMC lists no NIC port'})"
        item = _span(spec, "network.infiniband.count", 0, t.infiniband, t.unknown, observed, seen,
                     kind=Comparison.EXACT)
        return [eth, item.model_copy(update={"expected": "0 (no network.infiniband section)"})]
    return [eth, _span(spec, "network.infiniband.count", spec.network.infiniband.count, t.infiniband, t.unknown,
                       shown_as(t.infiniband), seen)]


def _power_drift(spec: NodeSpec, inv: NodeInventory) -> list[DriftItem]:
    psus = [p for pw in inv.power for p in pw.power_supplies if p.present]
    watts = [None if p.power_capacity_watts is None else float(int(p.power_capacity_watts)) for p in psus]
    return [
        _count(spec, "power.psu_count", spec.power.psu_count, len(psus), bool(inv.power)),
        _figure(spec, "power.psu_watts", spec.power.psu_watts, watts),
    ]
