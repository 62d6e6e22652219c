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
from provision.spec.model import NodeSpec
from provision.spec.platforms import BmcIdentity, Board, PlatformIdentity, refuse_profile


def _text(value: Any) -> str | None:
    return str(value).strip() or None if isinstance(value, str | int) and not isinstance(value, bool) else None


def host_system(systems: list[Json]) -> Json:
    """The host: the first system with a Bios, else the first."""
    return next((s for s in systems if isinstance(s.get("Bios"), dict)), systems[0] if systems else {})


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


def from_tree(systems: list[Json], chassis: list[Json], managers: list[Json]) -> PlatformIdentity:
    """Pure: the identity from what the BMC listed (full resources)."""
    system = host_system(systems)
    bmc = _pick(managers, _linked(system, "ManagedBy"))
    return PlatformIdentity(
        system=board(system) or Board(),
        chassis=board(_pick(chassis, _linked(system, "Chassis"))),
        bmc=BmcIdentity(uri=_text(bmc.get("@odata.id")), model=_text(bmc.get("Model")),
                        firmware_version=_text(bmc.get("FirmwareVersion"))) if bmc else None,
    )


def read(conn: Connector, systems: list[Json] | None = None) -> PlatformIdentity:
    """Read the identity: the Systems (unless given), the host's first chassis and its BMC."""
    systems = systems if systems is not None else conn.members(f"{ROOT}/Systems")
    system = host_system(systems)
    chassis_uri = next(iter(_linked(system, "Chassis")), None)
    manager_uri = next(iter(_linked(system, "ManagedBy")), None)
    chassis = [c] if chassis_uri and (c := conn.get_optional(chassis_uri)) else first_member(conn, f"{ROOT}/Chassis")
    managers = [m] if manager_uri and (m := conn.get_optional(manager_uri)) else first_member(conn, f"{ROOT}/Managers")
    return from_tree(systems, chassis, managers)


def check(conn: Connector, spec: NodeSpec) -> PlatformIdentity:
    """Read the identity and refuse (NotApplicable, one line, before anything is written) a node whose
    platform the spec's profile does not describe."""
    found = read(conn)
    refuse_profile(conn.opts.name or conn.opts.where, spec.profile, spec.described_platforms, found)
    return found


MANAGER_JOB = "identity:Manager"


def manager_job(conn: Connector, system: Json) -> dict[str, Callable[[], list[Json]]]:
    """For a gather (Connector.parallel): the host's BMC, the Manager its ManagedBy names, else the first."""
    uri = next(iter(_linked(system, "ManagedBy")), None)

    def read_manager() -> list[Json]:
        found = conn.get_optional(uri) if uri else None
        return [found] if found else first_member(conn, f"{ROOT}/Managers")

    return {MANAGER_JOB: read_manager}


def first_member(conn: Connector, collection: str) -> list[Json]:
    """The first member of a collection, as a full resource ([] when none)."""
    coll = conn.get_optional(collection) or {}
    refs = [m for m in coll.get("Members") or [] if isinstance(m, dict) and m.get("@odata.id")]
    return conn.resolve(refs[:1])
