"""Memory population from dmidecode or Redfish (pure): is every channel populated as the spec says?

The spec states `cpu.sockets`, `memory.channels_per_socket` and `memory.dimms_per_channel`; each populated
DIMM's socket and channel come from its Locator/Bank Locator (provision/conformance/parsers/dmidecode.py) on
the node, or from the BMC's Redfish Memory.MemoryLocation (`redfish_places`, for the bmc.memory_population check).
A finding names the socket, the channel and the slots, as the node's own locators spell them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from provision.conformance.parsers.dmidecode import DimmSlot
from provision.redfish.resources.memory import Memory


class Placed(Protocol):
    """A DIMM slot as the layout needs it: a dmidecode MemoryDevice, or a Redfish Memory member (`Place`)."""

    @property
    def locator(self) -> str: ...
    @property
    def populated(self) -> bool: ...
    @property
    def slot(self) -> DimmSlot | None: ...


@dataclass(frozen=True)
class Place:
    """One Redfish Memory member's slot, in the layout's terms."""

    locator: str
    populated: bool
    slot: DimmSlot | None


def redfish_places(members: Sequence[Memory]) -> tuple[Place, ...]:
    """Redfish Memory members (their MemoryLocation) as places. Sockets are ranked in the order the BMC numbers
    them (HPE and Lenovo count from 1, Supermicro from 0: the lowest is socket 0); a channel's key is its
    memory controller and channel (`MC1/Channel2`; HPE numbers controllers across sockets). A member without
    Socket or Channel has no slot (the layout then reports it unmapped)."""
    located = [m.memory_location for m in members]
    sockets = sorted({loc.socket for loc in located if loc is not None and loc.socket is not None})
    out = []
    for m, loc in zip(members, located, strict=True):
        name = m.device_locator or m.name or m.id or m.uri or "?"
        slot = None
        if loc is not None and loc.socket is not None and loc.channel is not None:
            mc = "" if loc.memory_controller is None else f"MC{loc.memory_controller}/"
            slot = DimmSlot(socket=sockets.index(loc.socket), channel=f"{mc}Channel{loc.channel}")
        out.append(Place(locator=name, populated=m.populated, slot=slot))
    return tuple(out)


@dataclass(frozen=True)
class Layout:
    """What the DIMMs say, or why they cannot say it."""

    problems: tuple[str, ...]  # empty: populated as the spec says
    summary: str  # e.g. "2 socket(s) x 8 channel(s) x 2 DIMM(s)"
    unmapped: tuple[str, ...] = ()  # locators that carry no socket/channel: the check cannot be made


def layout(devices: Sequence[Placed], sockets: int, channels: int, per_channel: int) -> Layout:
    """Judge the populated DIMMs against sockets x channels x DIMMs per channel."""
    unmapped = tuple(d.locator for d in devices if d.populated and d.slot is None)
    if unmapped:
        return Layout((), "", unmapped)
    by_socket: dict[int, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    empty: dict[int, set[str]] = defaultdict(set)
    for d in devices:
        slot = d.slot
        if slot is None:
            continue  # an empty slot whose locators say nothing: nothing to count
        if d.populated:
            by_socket[slot.socket][slot.channel].append(d.locator)
        else:
            empty[slot.socket].add(slot.channel)
    problems: list[str] = []
    for socket in range(sockets):
        found = by_socket.get(socket, {})
        if len(found) != channels:
            idle = sorted(empty.get(socket, set()) - set(found))
            problems.append(f"socket {socket}: {len(found)} populated channel(s), spec {channels}"
                            + (f" (empty: {', '.join(idle)})" if idle else ""))
        for channel, locators in sorted(found.items()):
            if len(locators) != per_channel:
                problems.append(f"socket {socket} {channel}: {len(locators)} DIMM(s) ({', '.join(sorted(locators))}), "
                                f"spec {per_channel}")
    for socket in sorted(set(by_socket) - set(range(sockets))):
        problems.append(f"socket {socket}: DIMMs on a socket the spec does not have")
    counts = sorted({len(v) for ch in by_socket.values() for v in ch.values()})
    per_socket = sorted({len(ch) for ch in by_socket.values()})
    summary = (f"{len(by_socket)} socket(s) x {'/'.join(map(str, per_socket)) or 0} channel(s) x "
               f"{'/'.join(map(str, counts)) or 0} DIMM(s)")
    return Layout(tuple(problems), summary)
