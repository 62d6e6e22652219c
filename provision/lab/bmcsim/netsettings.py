"""The manager's network settings: ManagerNetworkProtocol (HostName, FQDN, NTP, SSDP and IPMI enable) and the
manager's EthernetInterfaces (HostName, FQDN, StaticNameServers). A PATCH is checked whole, then applied whole;
the host name and FQDN are the manager's one name, shown alike on NetworkProtocol and its interfaces."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from provision.lab.bmcsim import events
from provision.lab.bmcsim.messages import message
from provision.lab.bmcsim.tree import Json, Resources

_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOSTNAME = re.compile(rf"^{_LABEL}$")
DNS_NAME = re.compile(rf"^({_LABEL}\.)*{_LABEL}\.?$")
PROTOCOL_SWITCHES = ("SSDP", "IPMI")  # protocols whose ProtocolEnabled may be written
MAX_NTP_SERVERS = 4


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        return False


def _is_name(value: str) -> bool:
    return len(value) <= 253 and bool(DNS_NAME.match(value))


def _refuse(current: Json, key: str, prop: str) -> Json:
    return message("PropertyNotWritable" if key in current else "PropertyUnknown", key, related=[prop])


def _names(body: Json, errors: list[Json]) -> None:
    if "HostName" in body:
        val = body["HostName"]
        if not isinstance(val, str):
            errors.append(message("PropertyValueTypeError", val, "HostName", related=["/HostName"]))
        elif not HOSTNAME.match(val):
            errors.append(message("PropertyValueFormatError", val, "HostName", related=["/HostName"]))
    if "FQDN" in body:
        val = body["FQDN"]
        if not isinstance(val, str):
            errors.append(message("PropertyValueTypeError", val, "FQDN", related=["/FQDN"]))
        elif not _is_name(val) or "." not in val.rstrip("."):
            errors.append(message("PropertyValueFormatError", val, "FQDN", related=["/FQDN"]))


def _array(current: list[Any], patch: object, prop: str, ok: Any, limit: int) -> tuple[list[Any], list[Json]]:
    """A Redfish array PATCH (DSP0266): an item replaces, null removes, {} keeps the current item."""
    if not isinstance(patch, list):
        return current, [message("PropertyValueTypeError", patch, prop.rsplit("/", 1)[-1], related=[prop])]
    out: list[Any] = []
    errors: list[Json] = []
    for i, item in enumerate(patch):
        if item is None:
            continue
        if item == {}:
            if i < len(current):
                out.append(current[i])
            continue
        if not isinstance(item, str) or not ok(item):
            errors.append(message("PropertyValueFormatError", item, prop.rsplit("/", 1)[-1], related=[f"{prop}/{i}"]))
            continue
        out.append(item)
    out += current[len(patch):]
    if len(out) > limit:
        errors.append(message("PropertyValueOutOfRange", len(out), prop.rsplit("/", 1)[-1], related=[prop]))
    return out, errors


def patch_protocol(node: str, res: Resources, uri: str, body: Json, interfaces: list[str]) -> list[Json]:
    cur = res.get(uri) or {}
    errors: list[Json] = []
    _names(body, errors)
    ntp_servers: list[Any] | None = None
    for key, val in body.items():
        if key.startswith("@") or key in ("HostName", "FQDN"):
            continue
        if key == "NTP" or key in PROTOCOL_SWITCHES:
            if not isinstance(val, dict):
                errors.append(message("PropertyValueTypeError", val, key, related=[f"/{key}"]))
                continue
            for sub, sval in val.items():
                prop = f"/{key}/{sub}"
                if sub == "ProtocolEnabled":
                    if not isinstance(sval, bool):
                        errors.append(message("PropertyValueTypeError", sval, sub, related=[prop]))
                elif key == "NTP" and sub == "NTPServers":
                    have = list((cur.get("NTP") or {}).get("NTPServers") or [])
                    ntp_servers, errs = _array(have, sval, prop, lambda s: _is_ip(s) or _is_name(s),
                                               MAX_NTP_SERVERS)
                    errors += errs
                else:
                    errors.append(_refuse(cur.get(key) or {}, sub, prop))
        else:
            errors.append(_refuse(cur, key, f"/{key}"))
    if errors:
        return errors
    proto = res.mutable(uri)
    for key in ("NTP", *PROTOCOL_SWITCHES):
        if key in body:
            section = proto.setdefault(key, {})
            if "ProtocolEnabled" in body[key]:
                section["ProtocolEnabled"] = body[key]["ProtocolEnabled"]
            if key == "NTP" and ntp_servers is not None:
                section["NTPServers"] = ntp_servers
                section.pop("NTPServers@odata.count", None)
    _set_names(res, uri, interfaces, body)
    events.record(node, "manager.network_protocol", keys=sorted(k for k in body if not k.startswith("@")))
    return []


def patch_interface(node: str, res: Resources, uri: str, body: Json, proto: str | None,
                    interfaces: list[str]) -> list[Json]:
    cur = res.get(uri) or {}
    errors: list[Json] = []
    _names(body, errors)
    static: list[Any] | None = None
    for key, val in body.items():
        if key.startswith("@") or key in ("HostName", "FQDN"):
            continue
        if key == "StaticNameServers":
            static, errs = _array(list(cur.get("StaticNameServers") or []), val, "/StaticNameServers", _is_ip, 3)
            errors += errs
        else:
            errors.append(_refuse(cur, key, f"/{key}"))
    if errors:
        return errors
    if static is not None:
        nic = res.mutable(uri)
        nic["StaticNameServers"] = static
        nic["NameServers"] = list(static)  # no DHCP-given servers in the lab: the static ones are in use
    _set_names(res, uri, [*([proto] if proto else []), *interfaces], body)
    events.record(node, "manager.interface", interface=uri.rsplit("/", 1)[-1],
                  keys=sorted(k for k in body if not k.startswith("@")))
    return []


def _set_names(res: Resources, target: str, others: list[str], body: Json) -> None:
    """The patched resource takes the name; the manager's other resources that show a name show it too."""
    for key in ("HostName", "FQDN"):
        if key not in body:
            continue
        res.mutable(target)[key] = body[key]
        for uri in others:
            obj = res.get(uri)
            if uri != target and obj is not None and key in obj:
                res.mutable(uri)[key] = body[key]
