"""`/proc/mdstat`: md arrays, their members, health and resync/recovery progress.

The file always ends with `unused devices: ...`; without it the read was truncated.
"""

from __future__ import annotations

import re

from provision.conformance.parsers._base import Model, fail, lines_of, tool_parser

TOOL = "/proc/mdstat"

_ARRAY = re.compile(r"^(?P<name>md[\w/-]+) : (?P<state>active|inactive)(?: \((?P<mode>[^)]+)\))?(?P<rest>(?: \S+)*)$")
_MEMBER = re.compile(r"^(?P<dev>[^\s\[\]]+)\[(?P<role>\d+)\](?P<flags>(?:\([A-Z]\))*)$")
_LEVEL = re.compile(r"^(raid\d+|linear|multipath|faulty|container)$")
_BLOCKS = re.compile(r"^(?P<blocks>\d+) blocks(?: super (?P<super>\S+))?")
_COUNTS = re.compile(r"\[(?P<total>\d+)/(?P<active>\d+)\] \[(?P<status>[U_]+)\]")
_PROGRESS = re.compile(r"(?P<action>resync|recovery|reshape|check|repair)\s*=\s*(?P<pct>\d+(?:\.\d+)?)%")
_PENDING = re.compile(r"(?P<action>resync|recovery|reshape|check|repair)\s*=\s*(?P<state>DELAYED|PENDING)")
_UNUSED = re.compile(r"^unused devices: ")


class MdMember(Model):
    """A member device of an array: `sdb2[2](F)`."""

    device: str
    role: int
    faulty: bool
    spare: bool
    write_mostly: bool
    replacement: bool


class MdArray(Model):
    """One array of /proc/mdstat."""

    name: str
    active: bool
    mode: str | None
    level: str | None
    members: tuple[MdMember, ...]
    blocks: int
    superblock: str | None
    raid_disks: int | None
    active_disks: int | None
    status: str | None
    sync_action: str | None
    sync_percent: float | None
    sync_state: str | None
    bitmap: str | None

    @property
    def degraded(self) -> bool:
        """Fewer working members than the array needs ([2/1] [U_])."""
        if self.status is not None and "_" in self.status:
            return True
        return self.raid_disks is not None and self.active_disks is not None and self.active_disks < self.raid_disks

    @property
    def failed_members(self) -> tuple[str, ...]:
        """Devices flagged (F)."""
        return tuple(m.device for m in self.members if m.faulty)


class MdStat(Model):
    """The whole file."""

    personalities: tuple[str, ...]
    arrays: tuple[MdArray, ...]
    unused_devices: str


def _member(array: str, token: str) -> MdMember:
    match = _MEMBER.match(token)
    if not match:
        fail(TOOL, f"{array}: member {token!r} is not DEV[N](FLAGS)")
    flags = match["flags"]
    return MdMember(
        device=match["dev"],
        role=int(match["role"]),
        faulty="(F)" in flags,
        spare="(S)" in flags,
        write_mostly="(W)" in flags,
        replacement="(R)" in flags,
    )


def _array(header: re.Match[str], detail: list[str]) -> MdArray:
    name = header["name"]
    tokens = header["rest"].split()
    level = tokens[0] if tokens and _LEVEL.match(tokens[0]) else None
    members = tuple(_member(name, t) for t in tokens[1 if level else 0 :])
    if not detail:
        fail(TOOL, f"{name}: no size line (truncated output?)")
    blocks = _BLOCKS.match(detail[0])
    if not blocks:
        fail(TOOL, f"{name}: size line {detail[0]!r} does not start with 'N blocks'")
    counts = _COUNTS.search(detail[0])
    rest = " ".join(detail[1:])
    progress, pending = _PROGRESS.search(rest), _PENDING.search(rest)
    sync = progress or pending
    bitmap = next((line.split(":", 1)[1].strip() for line in detail[1:] if line.startswith("bitmap:")), None)
    return MdArray(
        name=name,
        active=header["state"] == "active",
        mode=header["mode"],
        level=level,
        members=members,
        blocks=int(blocks["blocks"]),
        superblock=blocks["super"],
        raid_disks=int(counts["total"]) if counts else None,
        active_disks=int(counts["active"]) if counts else None,
        status=counts["status"] if counts else None,
        sync_action=sync["action"] if sync else None,
        sync_percent=float(progress["pct"]) if progress else None,
        sync_state=pending["state"] if pending else ("running" if progress else None),
        bitmap=bitmap,
    )


@tool_parser(TOOL)
def parse_mdstat(text: str) -> MdStat:
    """Parse /proc/mdstat."""
    lines = [line.strip() for line in lines_of(text)]
    if not lines[0].startswith("Personalities :"):
        fail(TOOL, "first line is not 'Personalities : ...'")
    personalities = tuple(p.strip("[]") for p in lines[0].split(":", 1)[1].split())
    unused = next((i for i, line in enumerate(lines) if _UNUSED.match(line)), None)
    if unused is None:
        fail(TOOL, "no 'unused devices:' line (truncated output?)")
    arrays: list[tuple[re.Match[str], list[str]]] = []
    for line in lines[1:unused]:
        if not line:
            continue
        header = _ARRAY.match(line)
        if header:
            arrays.append((header, []))
        elif arrays:
            arrays[-1][1].append(line)
        else:
            fail(TOOL, f"unexpected line {line[:120]!r}")
    return MdStat(
        personalities=personalities,
        arrays=tuple(_array(h, d) for h, d in arrays),
        unused_devices=lines[unused].split(":", 1)[1].strip(),
    )
