"""Where discovery looks: an address range (CIDR or a comma list, with ports), bounded by `--max`.

Pure: text in, typed targets out, nothing sent. `127.0.5.0/28`, `10.1.0.0/22:8443`, `10.1.0.5,10.1.0.9:8443`,
`[fd00::5]:443`, `https://10.1.0.7:8443` are all ranges; a CIDR's network and broadcast addresses are left out
for IPv4 prefixes up to /30 (as `ipaddress.hosts()`). A range larger than `max_addresses` is refused in one
line before any address is listed (so a /8 by mistake costs nothing).
"""

from __future__ import annotations

import ipaddress
import re

from pydantic import BaseModel, ConfigDict, Field

from provision.errors import InputError

DEFAULT_MAX = 4096
DEFAULT_PORT = 443
_HOSTPORT = re.compile(r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^:\s/]+))(?P<cidr>/\d+)?(?::(?P<port>\d+))?$")
_V6CIDR = re.compile(r"^\[(?P<net>[0-9A-Fa-f:.]+/\d+)\](?::(?P<port>\d+))?$")


class Target(BaseModel):
    """One address to ask for a Redfish service root."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    host: str = Field(description="An IP address")
    port: int = Field(default=DEFAULT_PORT, ge=1, le=65535)
    scheme: str = Field(default="https", pattern="^https?$")

    @property
    def url(self) -> str:
        """`https://10.1.0.5` (the default port left out), `https://[fd00::5]:8443`."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return f"{self.scheme}://{host}" + ("" if self.port == default else f":{self.port}")


def parse_range(text: str, *, port: int = DEFAULT_PORT, scheme: str = "https",
                max_addresses: int = DEFAULT_MAX) -> list[Target]:
    """Every target `text` names, in the order given, each once; InputError (one line) for a malformed
    term or a range larger than `max_addresses`."""
    terms = [t.strip() for t in text.split(",") if t.strip()]
    if not terms:
        raise InputError(f"address range {text!r}: empty (give a CIDR such as 10.1.0.0/22 or a comma list)")
    if max_addresses < 1:
        raise InputError(f"--max {max_addresses}: must be at least 1")
    networks = [_term(t, port, scheme) for t in terms]
    total = sum(net.num_addresses for net, _, _ in networks)
    if total > max_addresses:
        raise InputError(f"address range {text!r}: {total} addresses, more than --max {max_addresses}; "
                         "nothing sent (narrow the range or raise --max)")
    out: dict[tuple[str, int], Target] = {}
    for net, p, s in networks:
        for ip in _addresses(net):
            out.setdefault((str(ip), p), Target(host=str(ip), port=p, scheme=s))
    return list(out.values())


def _addresses(net: ipaddress.IPv4Network | ipaddress.IPv6Network) -> list[ipaddress.IPv4Address |
                                                                           ipaddress.IPv6Address]:
    if net.num_addresses == 1:
        return [net.network_address]
    return list(net.hosts())


def _term(term: str, port: int, scheme: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, int, str]:
    """One comma term: `[scheme://]address[/prefix][:port]` or `[v6/prefix]:port`."""
    where = f"address range term {term!r}"
    if "://" in term:
        scheme, _, term = term.partition("://")
        if scheme not in ("http", "https"):
            raise InputError(f"{where}: scheme {scheme!r} is not http or https")
        term = term.rstrip("/")
    v6 = _V6CIDR.match(term)
    if v6:
        net_text, port_text = v6["net"], v6["port"]
    elif term.count(":") > 1 and not term.startswith("["):  # bare IPv6 (no port can be given without [])
        net_text, port_text = term, None
    else:
        m = _HOSTPORT.match(term)
        if not m:
            raise InputError(f"{where}: not an address, a CIDR or address:port")
        net_text = (m["v6"] or m["host"]) + (m["cidr"] or "")
        port_text = m["port"]
    try:
        net = ipaddress.ip_network(net_text, strict=False)
    except ValueError:
        raise InputError(f"{where}: {net_text!r} is not an IP address or network (names are not scanned)") from None
    p = int(port_text) if port_text else port
    if not 1 <= p <= 65535:
        raise InputError(f"{where}: port {p} is not 1..65535")
    return net, p, scheme
