"""`mdadm --detail /dev/mdX`: array attributes and the member table.

`Key : Value` lines, then the `Number Major Minor RaidDevice State` table (tested on real
mdadm 4.2 captures taken in a qemu VM, see tests/fixtures/mdraid/qemu-vm/capture.sh). The
table is checked against `Raid Devices` and `Total Devices`, which catches truncated output.
"""

from __future__ import annotations

import re

from provision.conformance.parsers._base import Model, fail, lines_of, present, to_int, tool_parser

TOOL = "mdadm --detail"

_DEVICE = re.compile(r"^(?P<dev>/dev/\S+):$")
_KV = re.compile(r"^(?P<key>[A-Za-z][A-Za-z ]*?)\s*:\s*(?P<value>.*)$")
_TABLE = re.compile(r"^Number\s+Major\s+Minor\s+RaidDevice\s+State$")
_SLOT = re.compile(r"^(?P<number>\d+|-)\s+(?P<major>\d+)\s+(?P<minor>\d+)\s+(?P<raid>\d+|-)\s+(?P<rest>.+)$")


class MdDetailMember(Model):
    """One row of the member table."""

    number: int | None
    major: int
    minor: int
    raid_device: int | None
    state: tuple[str, ...]
    device: str | None


class MdDetail(Model):
    """The whole `mdadm --detail` report for one array."""

    device: str
    version: str | None
    raid_level: str
    array_size_kib: int | None
    raid_devices: int
    total_devices: int | None
    state: tuple[str, ...]
    active_devices: int | None
    working_devices: int | None
    failed_devices: int | None
    spare_devices: int | None
    rebuild_status: str | None
    resync_status: str | None
    name: str | None
    uuid: str | None
    events: str | None
    members: tuple[MdDetailMember, ...]

    @property
    def degraded(self) -> bool:
        """The array reports itself degraded."""
        return "degraded" in self.state


def _member(line: str) -> MdDetailMember:
    match = _SLOT.match(line)
    if not match:
        fail(TOOL, f"member row {line!r} is not 'Number Major Minor RaidDevice State [device]'")
    words = match["rest"].split()
    device = words.pop() if words and words[-1].startswith("/dev/") else None
    return MdDetailMember(
        number=None if match["number"] == "-" else int(match["number"]),
        major=int(match["major"]),
        minor=int(match["minor"]),
        raid_device=None if match["raid"] == "-" else int(match["raid"]),
        state=tuple(words),
        device=device,
    )


def _count(fields: dict[str, str], key: str) -> int | None:
    return to_int(TOOL, key, fields.get(key))


def _check_table(fields: dict[str, str], members: tuple[MdDetailMember, ...]) -> None:
    raid_devices = _count(fields, "Raid Devices")
    slots = sum(1 for m in members if m.raid_device is not None)
    if raid_devices is not None and slots < raid_devices:
        fail(TOOL, f"'Raid Devices : {raid_devices}' but {slots} slot row(s) (truncated output?)")
    total = _count(fields, "Total Devices")
    with_device = sum(1 for m in members if m.device is not None)
    if total is not None and with_device != total:
        fail(TOOL, f"'Total Devices : {total}' but {with_device} device row(s) (truncated output?)")


@tool_parser(TOOL)
def parse_mdadm_detail(text: str) -> MdDetail:
    """Parse `mdadm --detail /dev/mdX` for one array."""
    lines = [line.strip() for line in lines_of(text) if line.strip()]
    head = _DEVICE.match(lines[0])
    if head is None:
        fail(TOOL, f"first line {lines[0][:80]!r} is not '/dev/mdX:'")
    table = next((i for i, line in enumerate(lines) if _TABLE.match(line)), None)
    if table is None:
        fail(TOOL, "no 'Number Major Minor RaidDevice State' table (truncated output?)")
    fields: dict[str, str] = {}
    for line in lines[1:table]:
        kv = _KV.match(line)
        if kv is None:
            fail(TOOL, f"unexpected line {line[:120]!r}")
        fields[kv["key"]] = kv["value"].strip()
    for key in ("Raid Level", "Raid Devices", "State"):
        if key not in fields:
            fail(TOOL, f"no '{key}' line")
    members = tuple(_member(line) for line in lines[table + 1 :])
    _check_table(fields, members)
    size = fields.get("Array Size", "").split(" ")[0]
    raid_devices = _count(fields, "Raid Devices")
    assert raid_devices is not None
    return MdDetail(
        device=head["dev"],
        version=present(fields.get("Version")),
        raid_level=fields["Raid Level"],
        array_size_kib=to_int(TOOL, "Array Size", size),
        raid_devices=raid_devices,
        total_devices=_count(fields, "Total Devices"),
        state=tuple(s.strip() for s in fields["State"].split(",") if s.strip()),
        active_devices=_count(fields, "Active Devices"),
        working_devices=_count(fields, "Working Devices"),
        failed_devices=_count(fields, "Failed Devices"),
        spare_devices=_count(fields, "Spare Devices"),
        rebuild_status=present(fields.get("Rebuild Status")),
        resync_status=present(fields.get("Resync Status")),
        name=present(fields.get("Name")),
        uuid=present(fields.get("UUID")),
        events=present(fields.get("Events")),
        members=members,
    )
