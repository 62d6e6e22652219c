"""The host's provisioning NIC as its BMC lists it: the system's EthernetInterfaces (DMTF
EthernetInterface schema: MACAddress, PermanentMACAddress, EthernetInterfaceType, InterfaceEnabled).

A host whose system lists exactly one physical interface with a MAC boots the installer from it; one
that lists several (or none) cannot be told from here: the inventory names it (provision_provisioning_mac).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from provision.redfish.ops.session import Node

Json = dict[str, Any]


class HostNic(BaseModel):
    """One of the system's EthernetInterfaces."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    mac: str


def parse_nics(members: list[Json]) -> list[HostNic]:
    """Physical, enabled interfaces with a MAC (PermanentMACAddress first: MACAddress may be an override),
    lowercase aa:bb:cc:dd:ee:ff."""
    out = []
    for m in members:
        if str(m.get("EthernetInterfaceType") or "") == "Virtual" or m.get("InterfaceEnabled") is False:
            continue
        mac = str(m.get("PermanentMACAddress") or m.get("MACAddress") or "").strip().lower().replace("-", ":")
        if len(mac.split(":")) == 6 and all(len(p) == 2 for p in mac.split(":")):
            out.append(HostNic(id=str(m.get("Id") or m.get("@odata.id") or ""), mac=mac))
    return out


def provisioning_mac(nics: list[HostNic]) -> tuple[str | None, str]:
    """The one NIC's MAC, else (None, why in words)."""
    if len(nics) == 1:
        return nics[0].mac, ""
    if not nics:
        return None, "the BMC lists no physical EthernetInterface with a MAC for the system"
    return None, (f"the BMC lists {len(nics)} interfaces ({', '.join(n.id for n in nics)}): set "
                  "provision_provisioning_mac")


def host_nics(node: Node) -> list[HostNic]:
    """The system's interfaces (none where the BMC links no EthernetInterfaces)."""
    link = node.conn.get(node.system.uri).get("EthernetInterfaces")
    if not isinstance(link, dict) or not link.get("@odata.id"):
        return []
    return parse_nics(node.conn.members_or_unreadable(str(link["@odata.id"])))
