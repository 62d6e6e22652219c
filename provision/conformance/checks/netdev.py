"""Network interfaces (shared by the Ethernet and IPoIB checks).

The interface list comes from `ip -j -d addr show`, which always answers for the node's own
network namespace. Link speed and IPoIB mode are only in sysfs; a sysfs entry is used only when
its ifindex matches (inside a container /sys can be the host's view of other interfaces).
"""

from __future__ import annotations

import json

from provision.conformance.checks._base import Context
from provision.conformance.facts import Probe
from provision.conformance.parsers._base import Model, fail, tool_parser

SECTION = "netdevs"
TOOL = "ip -j -d addr show"
SYSFS_MARK = "@@sysfs"

# sysfs is read with the shell's own `read` (no process per file: a container may list many interfaces).
COMMAND = (
    f"ip -j -d addr show; echo; echo {SYSFS_MARK}; "
    'for d in /sys/class/net/*; do [ -r "$d/ifindex" ] && read i < "$d/ifindex" || continue; '
    's=-; read s < "$d/speed" 2>/dev/null || s=-; '
    'm=-; if [ -r "$d/mode" ]; then read m < "$d/mode" 2>/dev/null || m=-; fi; '
    'echo "${d##*/} $i ${s:--} ${m:--}"; done'
)


class NetDev(Model):
    """One network interface of the node."""

    name: str
    link_type: str  # ether, infiniband, loopback, none...
    kind: str | None  # veth, bond, vlan...: set for virtual links
    physical: bool  # has a parent bus device (PCI...)
    mtu: int
    operstate: str
    speed_mbps: int | None
    mode: str | None  # IPoIB datagram/connected
    ipv4: tuple[str, ...]


@tool_parser(TOOL)
def parse_netdevs(text: str) -> tuple[NetDev, ...]:
    links_text, _, sysfs_text = text.partition(SYSFS_MARK)
    links = json.loads(links_text)
    if not isinstance(links, list) or not links:
        fail(TOOL, "no interfaces at all (not even lo)")
    sysfs: dict[str, tuple[int, str, str]] = {}
    for line in sysfs_text.splitlines():
        cells = line.split()
        if len(cells) == 4 and cells[1].isdigit():
            sysfs[cells[0]] = (int(cells[1]), cells[2], cells[3])
    return tuple(_dev(link, sysfs) for link in links)


def _dev(link: dict[str, object], sysfs: dict[str, tuple[int, str, str]]) -> NetDev:
    name = str(link["ifname"])
    info = link.get("linkinfo")
    kind = info.get("info_kind") if isinstance(info, dict) else None
    own = sysfs.get(name)
    speed = mode = None
    if own is not None and own[0] == link.get("ifindex"):
        speed = int(own[1]) if own[1].lstrip("-").isdigit() and int(own[1]) > 0 else None
        mode = None if own[2] == "-" else own[2]
    addrs = link.get("addr_info") or []
    assert isinstance(addrs, list)
    return NetDev(
        name=name,
        link_type=str(link.get("link_type", "none")),
        kind=str(kind) if kind else None,
        physical="parentbus" in link and not kind,
        mtu=int(str(link["mtu"])),
        operstate=str(link.get("operstate", "UNKNOWN")),
        speed_mbps=speed,
        mode=mode,
        ipv4=tuple(
            f"{a['local']}/{a['prefixlen']}" for a in addrs if isinstance(a, dict) and a.get("family") == "inet"
        ),
    )


def probe() -> Probe:
    return Probe(name=SECTION, command=COMMAND)


def netdevs(ctx: Context) -> tuple[NetDev, ...]:
    """Every interface of the node; raises Unreadable."""
    return ctx.parsed(SECTION, parse_netdevs)
