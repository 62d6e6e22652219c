"""Platform identity: what a node is, read from its BMC (provision/spec/platforms.py has the model and the
patterns a profile or an image names).

The host system is the first ComputerSystem with a Bios (an HGX baseboard listed beside it has none), else the
first; its chassis is the first its Links.Chassis names, else the first Chassis; the BMC is the Manager its
Links.ManagedBy names, else the first Manager. `from_tree` is pure (tested on whole captures); `read` makes
the few GETs it needs (the Systems collection, one Chassis, one Manager).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from provision.redfish.connector import ROOT, Connector, Json
from provision.redfish.ops.session import Node, host_system
from provision.redfish.resources.base import real_text
from provision.spec.model import NodeSpec
from provision.spec.platforms import BmcIdentity, Board, DeviceKind, PlatformIdentity, refuse_profile


def _text(value: Any) -> str | None:
    """A string or number the BMC states; None for a placeholder ("N/A", "Unknown", "") that names nothing: two
    boards reporting serial "N/A" are not the same board."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return real_text(value)


def _linked(obj: Json, key: str) -> list[str]:
    links = obj.get("Links") if isinstance(obj.get("Links"), dict) else {}
    refs = links.get(key) if isinstance(links, dict) else None
    return [str(r["@odata.id"]).rstrip("/") for r in refs or [] if isinstance(r, dict) and r.get("@odata.id")] \
        if isinstance(refs, list) else []


def board(obj: Json | None) -> Board | None:
    if not obj:
        return None
    return Board(uri=_text(obj.get("@odata.id")), manufacturer=_text(obj.get("Manufacturer")),
                 model=_text(obj.get("Model")), sku=_text(obj.get("SKU")), part_number=_text(obj.get("PartNumber")),
                 serial_number=_text(obj.get("SerialNumber")), uuid=_text(obj.get("UUID")))


def _pick(items: list[Json], wanted: list[str]) -> Json | None:
    by_uri = {str(i.get("@odata.id", "")).rstrip("/"): i for i in items}
    return next((by_uri[u] for u in wanted if u in by_uri), items[0] if items else None)


def host_cpus(system: Json) -> int | None:
    """ProcessorSummary.Count: the host's CPUs as the system states them (None: not stated)."""
    summary = system.get("ProcessorSummary")
    count = summary.get("Count") if isinstance(summary, dict) else None
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def device_kind(system: Json, chassis: list[Json], fabrics: int | None) -> DeviceKind:
    """Pure: what answers as the node, from standard properties only. SystemType DPU is a DPU; a system that
    states CPUs, or does not say, is a compute node; one that states none is a switch tray where the service
    has Fabrics with members (an NVLink switch tray), a DPU where a Card chassis carries the system's Model (a
    BlueField's Card1), else a device."""
    if system.get("SystemType") == "DPU":
        return DeviceKind.DPU
    if host_cpus(system) != 0:
        return DeviceKind.COMPUTE
    if fabrics:
        return DeviceKind.SWITCH
    model = _text(system.get("Model"))
    if model and any(c.get("ChassisType") == "Card" and _text(c.get("Model")) == model for c in chassis):
        return DeviceKind.DPU
    return DeviceKind.DEVICE


def from_tree(systems: list[Json], chassis: list[Json], managers: list[Json],
              fabrics: int | None = None) -> PlatformIdentity:
    """Pure: the identity from what the BMC listed (full resources; `fabrics`: how many Fabrics it lists,
    needed only for a system that states no host CPUs)."""
    system = host_system(systems)
    bmc = _pick(managers, _linked(system, "ManagedBy"))
    return PlatformIdentity(
        system=board(system) or Board(),
        chassis=board(_pick(chassis, _linked(system, "Chassis"))),
        bmc=BmcIdentity(uri=_text(bmc.get("@odata.id")), model=_text(bmc.get("Model")),
                        firmware_version=_text(bmc.get("FirmwareVersion"))) if bmc else None,
        kind=device_kind(system, chassis, fabrics), host_cpus=host_cpus(system),
    )


def fabric_count(conn: Connector) -> int:
    """How many Fabrics the service lists (0 when it has none)."""
    link = conn.root.get("Fabrics")
    uri = str(link["@odata.id"]) if isinstance(link, dict) and link.get("@odata.id") else None
    coll = conn.get_optional(uri) if uri else None
    members = coll.get("Members") if coll else None
    return len(members) if isinstance(members, list) else 0


def read(conn: Connector, systems: list[Json] | None = None) -> PlatformIdentity:
    """Read the identity: the Systems (unless given), the host's first chassis and its BMC."""
    systems = systems if systems is not None else conn.members(f"{ROOT}/Systems")
    system = host_system(systems)
    chassis_uri = next(iter(_linked(system, "Chassis")), None)
    manager_uri = next(iter(_linked(system, "ManagedBy")), None)
    chassis = [c] if chassis_uri and (c := conn.get_optional(chassis_uri)) else first_member(conn, f"{ROOT}/Chassis")
    managers = [m] if manager_uri and (m := conn.get_optional(manager_uri)) else first_member(conn, f"{ROOT}/Managers")
    if host_cpus(system) != 0:  # a compute node (the common case): nothing more to read
        return from_tree(systems, chassis, managers)
    every = conn.members(f"{ROOT}/Chassis")  # no host CPUs: what is it (device_kind)?
    return from_tree(systems, [*chassis, *every], managers, fabric_count(conn))


def of_node(node: Node) -> PlatformIdentity:
    """The identity of a logged-in node, from the Systems its facts already hold (no second read of them)."""
    return read(node.conn, list(node.systems) or None)


def check(conn: Connector, spec: NodeSpec, known: PlatformIdentity | None = None) -> PlatformIdentity:
    """The identity (`known`, else read now); NotApplicable (one line, before anything is written) for a node
    whose platform the spec's profile does not describe."""
    found = known or read(conn)
    refuse_profile(conn.opts.name or conn.opts.where, spec.profile, spec.described_platforms, found)
    return found


MANAGER_JOB = "identity:Manager"
FABRICS_JOB = "identity:Fabrics"


def identity_jobs(conn: Connector, system: Json) -> dict[str, Callable[[], Any]]:
    """For a gather (Connector.parallel): the host's BMC, the Manager its ManagedBy names, else the first;
    and how many Fabrics the service lists, for a system that states no host CPUs (device_kind)."""
    uri = next(iter(_linked(system, "ManagedBy")), None)

    def read_manager() -> list[Json]:
        found = conn.get_optional(uri) if uri else None
        return [found] if found else first_member(conn, f"{ROOT}/Managers")

    jobs: dict[str, Callable[[], Any]] = {MANAGER_JOB: read_manager}
    if host_cpus(system) == 0:
        jobs[FABRICS_JOB] = lambda: fabric_count(conn)
    return jobs


def first_member(conn: Connector, collection: str) -> list[Json]:
    """The first member of a collection, as a full resource ([] when none)."""
    coll = conn.get_optional(collection) or {}
    refs = [m for m in coll.get("Members") or [] if isinstance(m, dict) and m.get("@odata.id")]
    return conn.resolve(refs[:1])
