"""NVIDIA Xid events in the kernel log (`dmesg`, or `journalctl -k`) -> tuple[XidEvent].

The line format is NVIDIA's ("Xid Errors", docs.nvidia.com/deploy/xid-errors): the driver logs
`NVRM: Xid (PCI:0000:19:00): 79, pid=..., GPU has fallen off the bus.`, older drivers without the
`PCI:` prefix. Any prefix (dmesg's `[  12.345678] `, journalctl's `date host kernel: `) is allowed.
No real capture of a kernel log with Xid lines was available: the format is the documented one.
"""

from __future__ import annotations

import re

from provision.conformance.parsers._base import Model, fail, lines_of, tool_parser

TOOL = "dmesg"

_XID = re.compile(
    r"NVRM: Xid \((?:PCI:)?(?P<domain>[0-9A-Fa-f]{4,8}):(?P<bus>[0-9A-Fa-f]{2}):(?P<device>[0-9A-Fa-f]{2})"
    r"(?:\.[0-7])?\): (?P<code>\d+)(?:, (?P<message>.*))?$"
)


class XidEvent(Model):
    """One Xid the driver logged for one GPU (PCI domain:bus:device as the driver prints it)."""

    pci: str
    code: int
    message: str

    def matches(self, bus_id: str) -> bool:
        """True when `bus_id` (nvidia-smi's 00000000:19:00.0) is this event's GPU."""
        return _key(bus_id) == _key(self.pci)


def _key(pci: str) -> tuple[int, int, int] | None:
    parts = pci.split(".")[0].split(":")
    if len(parts) != 3:
        return None
    try:
        return int(parts[0], 16), int(parts[1], 16), int(parts[2], 16)
    except ValueError:
        return None


@tool_parser(TOOL)
def parse_xid_events(text: str) -> tuple[XidEvent, ...]:
    """Every Xid line of a kernel log, in order. An empty log is an error: a booted kernel always logs."""
    lines = [line.rstrip() for line in lines_of(text) if line.strip()]
    if not lines:
        fail(TOOL, "empty kernel log (not readable by this user?)")
    events = []
    for line in lines:
        match = _XID.search(line)
        if match:
            pci = f"{match['domain']}:{match['bus']}:{match['device']}"
            events.append(XidEvent(pci=pci, code=int(match["code"]), message=(match["message"] or "").strip()))
    return tuple(events)
