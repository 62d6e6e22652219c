"""SSDP: Redfish services found by DSP0266's M-SEARCH (`ST: urn:dmtf-org:service:redfish-rest:1`), sent only
on the interfaces the operator names (IPv4 multicast to 239.255.255.250:1900, TTL 2).

DSP0266 ("Discovery"): a service answers with `ST` the Redfish URN, `USN` `uuid:<service root
UUID>::urn:dmtf-org:service:redfish-rest:1` and `AL` the URI of its service root. `parse_answer` is pure;
`search` sends one M-SEARCH per interface and reads the answers for `wait_s`. An answer whose `AL` names
another host than the one that answered is left out: SSDP never points discovery at a third address.
"""

from __future__ import annotations

import socket
import struct
import time
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from provision.discover.targets import Target
from provision.errors import InputError

GROUP = ("239.255.255.250", 1900)
ST = "urn:dmtf-org:service:redfish-rest:1"


class SsdpAnswer(BaseModel):
    """One service that answered, and where its service root is."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    target: Target
    uuid: str | None = None


def msearch(mx: int = 2) -> bytes:
    """The M-SEARCH request (UDA 1.1 over DSP0266's search target)."""
    return (f'M-SEARCH * HTTP/1.1\r\nHOST: {GROUP[0]}:{GROUP[1]}\r\nMAN: "ssdp:discover"\r\nMX: {mx}\r\n'
            f"ST: {ST}\r\n\r\n").encode("ascii")


def parse_answer(data: bytes, source: str) -> SsdpAnswer | None:
    """A Redfish service's answer, or None (another service type, malformed, or an AL at another host)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    lines = text.split("\r\n") if "\r\n" in text else text.split("\n")
    if not lines or not lines[0].upper().startswith("HTTP/1.1 200"):
        return None
    headers = {}
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep:
            headers[key.strip().lower()] = value.strip()
    if not headers.get("st", "").lower().startswith(ST):
        return None
    al = urlsplit(headers.get("al", "").strip("<>"))
    if al.scheme not in ("http", "https") or al.hostname is None or al.hostname != source:
        return None
    try:
        port = al.port or (443 if al.scheme == "https" else 80)
    except ValueError:
        return None
    usn = headers.get("usn", "")
    uuid = usn.split("::", 1)[0].removeprefix("uuid:") if usn.lower().startswith("uuid:") else None
    return SsdpAnswer(source=source, target=Target(host=source, port=port, scheme=al.scheme), uuid=uuid or None)


def search(interfaces: list[str], wait_s: float = 3.0) -> list[SsdpAnswer]:
    """One M-SEARCH on each named interface; the answers read for `wait_s`, each service once."""
    found: dict[tuple[str, int], SsdpAnswer] = {}
    for name in interfaces:
        try:
            index = socket.if_nametoindex(name)
        except OSError:
            raise InputError(f"--ssdp {name}: no such network interface; nothing sent") from None
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP) as sock:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, struct.pack("4s4si", bytes(4), bytes(4), index))
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 2)
            sock.sendto(msearch(max(1, int(wait_s))), GROUP)
            for answer in _answers(sock, wait_s):
                found.setdefault((answer.target.host, answer.target.port), answer)
    return list(found.values())


def _answers(sock: socket.socket, wait_s: float) -> list[SsdpAnswer]:
    out = []
    end = time.monotonic() + wait_s
    while (left := end - time.monotonic()) > 0:
        sock.settimeout(left)
        try:
            data, (source, _port) = sock.recvfrom(8192)
        except TimeoutError:
            break
        answer = parse_answer(data, source)
        if answer is not None:
            out.append(answer)
    return out
