"""The manager's own settings: NTP, SSDP and IPMI (ManagerNetworkProtocol), its host name and static DNS
servers (the manager's EthernetInterface). Read into a typed state, planned purely, written one property at
a time and read back: a value that reads otherwise after its write is an error naming the property.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, JsonValue

from provision.errors import CheckFailed
from provision.redfish.connector import Connector, Json


class ManagerSettings(BaseModel):
    """What the BMC says; None: the BMC does not offer the property (or has no such resource)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    protocol_uri: str | None = None
    ntp_servers: tuple[str, ...] | None = None
    ntp_enabled: bool | None = None
    ssdp: bool | None = None
    ipmi: bool | None = None
    ethernet_uri: str | None = None
    hostname: str | None = None
    dns: tuple[str, ...] | None = None
    slots: dict[str, int] = {}
    """Per array property (NTP.NTPServers, StaticNameServers): how many items the BMC lists, empty ones too."""


class Setting(BaseModel):
    """One property to write: `path` (e.g. NTP.NTPServers) of the resource at `uri`, and its value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    uri: str
    path: str
    value: JsonValue
    slots: int = 0
    """An array's items on the BMC now: those past the new value are removed with nulls (DSP0266 array PATCH:
    items not named are kept)."""

    def body(self) -> Json:
        out: Json = {}
        keys = self.path.split(".")
        cur = out
        for key in keys[:-1]:
            cur = cur.setdefault(key, {})
        value = self.value
        if isinstance(value, list) and self.slots > len(value):
            value = [*value, *([None] * (self.slots - len(value)))]
        cur[keys[-1]] = value
        return out


def _servers(value: object, present: bool = False) -> tuple[str, ...] | None:
    """A server list without the empty slots many BMCs pad it with (`present` and null: offered, empty)."""
    if value is None and present:
        return ()
    if not isinstance(value, list):
        return None
    return tuple(str(v) for v in value if isinstance(v, str) and v.strip())


def _enabled(proto: Json, name: str) -> bool | None:
    part = proto.get(name)
    value = part.get("ProtocolEnabled") if isinstance(part, dict) else None
    return value if isinstance(value, bool) else None


def parse(proto: Json | None, proto_uri: str | None, eth: Json | None, eth_uri: str | None) -> ManagerSettings:
    """Pure: the settings from the ManagerNetworkProtocol and EthernetInterface bodies."""
    proto = proto or {}
    ntp = proto.get("NTP") if isinstance(proto.get("NTP"), dict) else {}
    eth = eth or {}
    return ManagerSettings(
        protocol_uri=proto_uri if proto else None,
        ntp_servers=_servers(ntp.get("NTPServers"), "NTPServers" in ntp) if isinstance(ntp, dict) else None,
        ntp_enabled=_enabled(proto, "NTP"), ssdp=_enabled(proto, "SSDP"), ipmi=_enabled(proto, "IPMI"),
        ethernet_uri=eth_uri if eth else None,
        hostname=str(eth.get("HostName") or "") if "HostName" in eth else None,  # null: offered, not set
        dns=_servers(eth.get("StaticNameServers"), "StaticNameServers" in eth),
        slots={k: len(v) for k, v in (("NTP.NTPServers", ntp.get("NTPServers") if isinstance(ntp, dict) else None),
                                      ("StaticNameServers", eth.get("StaticNameServers"))) if isinstance(v, list)},
    )


def _link(obj: Json | None, key: str) -> str | None:
    ref = obj.get(key) if isinstance(obj, dict) else None
    return str(ref["@odata.id"]) if isinstance(ref, dict) and ref.get("@odata.id") else None


def pick_interface(members: list[Json], bmc_host: str) -> Json | None:
    """The manager's interface that carries the BMC's address, else its first."""
    for m in members:
        addrs = [a.get("Address") for a in m.get("IPv4Addresses") or [] if isinstance(a, dict)]
        addrs += [a.get("Address") for a in m.get("IPv6Addresses") or [] if isinstance(a, dict)]
        if bmc_host in addrs:
            return m
    return members[0] if members else None


def observe(conn: Connector, manager_uri: str | None) -> ManagerSettings:
    manager = conn.get_optional(manager_uri) if manager_uri else None
    proto_uri = _link(manager, "NetworkProtocol")
    proto = conn.get_optional(proto_uri) if proto_uri else None
    eth_coll = _link(manager, "EthernetInterfaces")
    eth = pick_interface(conn.members(eth_coll), urlsplit(conn.opts.address).hostname or "") if eth_coll else None
    eth_uri = str(eth.get("@odata.id")) if eth else None
    return parse(proto, proto_uri, eth, eth_uri)


def read_back(conn: Connector, setting: Setting) -> JsonValue:
    """The property's value as the BMC gives it after the write (server lists without empty slots)."""
    cur: object = conn.get(setting.uri)
    for key in setting.path.split("."):
        cur = cur.get(key) if isinstance(cur, dict) else None
    if isinstance(cur, list):
        return list(_servers(cur) or ())
    return cur  # type: ignore[return-value]


def write(conn: Connector, setting: Setting) -> None:
    """PATCH the property, read it back; CheckFailed naming the property when it reads otherwise."""
    conn.patch(setting.uri, setting.body())
    got = read_back(conn, setting)
    if got != setting.value:
        raise CheckFailed(f"{conn.opts.where}: {setting.path} of {setting.uri} reads {got!r} after writing "
                          f"{setting.value!r}")
