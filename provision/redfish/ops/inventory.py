"""Inventory: observe the node's hardware as a typed inventory (its drift against the spec: drift.py)."""

from __future__ import annotations

from typing import Any

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
from provision.spec.platforms import PlatformIdentity


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


