"""Network interfaces as sysfs and `ip` present them (shared by the Ethernet and IPoIB checks)."""

from __future__ import annotations

from provision.conformance.checks._base import Context
from provision.conformance.facts import Probe
from provision.conformance.parsers._base import Model, fail, to_int, tool_parser

SECTION = "netdevs"
TOOL = "sysfs /sys/class/net"
ARPHRD_ETHER = 1
ARPHRD_INFINIBAND = 32

# One tab-separated line per interface: name, type, speed (Mb/s), mtu, phys|virt, mode, IPv4 addrs.
COMMAND = r"""for d in /sys/class/net/*; do [ -e "$d/type" ] || continue; n=${d##*/}
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$(cat "$d/type")" "$(cat "$d/speed" 2>/dev/null || echo -)" \
 "$(cat "$d/mtu")" "$([ -e "$d/device" ] && echo phys || echo virt)" "$(cat "$d/mode" 2>/dev/null || echo -)" \
 "$(ip -o -4 addr show dev "$n" 2>/dev/null | awk '{printf "%s ", $4}')"; done"""


class NetDev(Model):
    """One network interface."""

    name: str
    type: int
    speed_mbps: int | None
    mtu: int
    physical: bool
    mode: str | None
    ipv4: tuple[str, ...]


@tool_parser(TOOL)
def parse_netdevs(text: str) -> tuple[NetDev, ...]:
    devs = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != 7:
            fail(TOOL, f"expected 7 columns, got {len(cells)}: {line[:80]!r}")
        name, kind, speed, mtu, phys, mode, addrs = cells
        rate = to_int(TOOL, f"{name} speed", speed)
        devs.append(
            NetDev(
                name=name,
                type=to_int(TOOL, f"{name} type", kind) or 0,
                speed_mbps=rate if rate is not None and rate > 0 else None,
                mtu=to_int(TOOL, f"{name} mtu", mtu) or 0,
                physical=phys == "phys",
                mode=None if mode == "-" else mode,
                ipv4=tuple(addrs.split()),
            )
        )
    if not devs:
        fail(TOOL, "no interfaces at all (not even lo)")
    return tuple(devs)


def probe() -> Probe:
    return Probe(name=SECTION, command=COMMAND)


def netdevs(ctx: Context) -> tuple[NetDev, ...]:
    """Every interface of the node; raises Unreadable."""
    return ctx.parsed(SECTION, parse_netdevs)
