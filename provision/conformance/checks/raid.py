"""Boot mirror checks: md RAID1 present, in sync with both members, clean, and / on it."""

from __future__ import annotations

import shlex

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers.mdadm import parse_mdadm_detail
from provision.conformance.parsers.mdstat import MdArray, parse_mdstat
from provision.spec.model import NodeSpec

AREA = "raid"
MDSTAT = "mdstat"
DETAIL = "mdadm_detail"
ROOT = "root_source"


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    if spec.storage.boot.raid is None:  # no boot mirror in the spec: no RAID checks (not a pass)
        return []
    dev = shlex.quote(spec.need_boot_raid().device)
    found = [Probe(name=MDSTAT, command="cat /proc/mdstat")]
    if level is not Level.QUICK:
        found += [
            Probe(name=DETAIL, command=f"mdadm --detail {dev}"),
            Probe(name=ROOT, command="findmnt -n -o SOURCE /"),
        ]
    return found


def evaluate(ctx: Context) -> None:
    """/proc/mdstat (array, sync, members) and mdadm --detail (state) are two readings, judged each."""
    if ctx.spec.storage.boot.raid is None:
        return
    device = ctx.spec.need_boot_raid().device
    name = device.removeprefix("/dev/")
    _mdstat(ctx, device, name)
    if ctx.level is not Level.QUICK:
        _detail(ctx, device)
        _root(ctx, device)


def _mdstat(ctx: Context, device: str, name: str) -> None:
    boot, raid = ctx.spec.storage.boot, ctx.spec.need_boot_raid()
    try:
        array = next((a for a in ctx.parsed(MDSTAT, parse_mdstat).arrays if a.name == name), None)
    except Unreadable as why:
        ctx.unreadable("raid.array", AREA, f"{device} present", raid.level, why.reason)
        ctx.unreadable("raid.sync", AREA, f"{name} in sync (every member up)", "U" * boot.count, why.reason)
        ctx.unreadable("raid.members", AREA, f"{name} working members", boot.count, why.reason)
        return
    ctx.record("raid.array", AREA, f"{device} active, level {raid.level}", raid.level,
               f"{array.level} ({'active' if array.active else 'inactive'})" if array else "absent",
               bool(array and array.active and array.level == raid.level))
    if array is None:
        return
    _members(ctx, array, boot.count)


def _members(ctx: Context, array: MdArray, count: int) -> None:
    working = [m.device for m in array.members if not m.faulty and not m.spare]
    ctx.record("raid.sync", AREA, f"{array.name} in sync (every member up)", "U" * count,
               array.status or "unknown", array.status == "U" * count and not array.degraded)
    ctx.record("raid.members", AREA, f"{array.name} working members", count,
               f"{len(working)} ({', '.join(working)})" + (
                   f"; failed: {', '.join(array.failed_members)}" if array.failed_members else ""),
               len(working) == count and not array.failed_members)


# mdadm --detail's State: "clean", or "active" while writes are in flight (the superblock not yet marked
# clean: a mounted root under load), then flags. A scrub ("checking") leaves the mirror whole; "degraded",
# "recovering", "resyncing", "reshaping", "FAILED" and "Not Started" do not.
HEALTHY_STATES = frozenset({"clean", "active"})
WHOLE_FLAGS = frozenset({"checking"})


def healthy_state(words: tuple[str, ...]) -> bool:
    return bool(words) and words[0] in HEALTHY_STATES and set(words[1:]) <= WHOLE_FLAGS


def _detail(ctx: Context, device: str) -> None:
    desc = f"mdadm --detail {device}: state clean or active"
    try:
        detail = ctx.parsed(DETAIL, parse_mdadm_detail)
    except Unreadable as why:
        ctx.unreadable("raid.state", AREA, desc, "clean or active", why.reason)
        return
    state = ", ".join(detail.state)
    ctx.record("raid.state", AREA, desc, "clean or active", state,
               healthy_state(detail.state) and not detail.degraded and not detail.failed_devices)


def _root(ctx: Context, device: str) -> None:
    desc = f"root filesystem on {device}"
    try:
        source = ctx.parsed(ROOT, str.strip)
    except Unreadable as why:
        ctx.unreadable("raid.root", AREA, desc, device, why.reason)
        return
    aliases = {device, device.replace("/dev/md", "/dev/md/")}
    ctx.record("raid.root", AREA, desc, device, source or "unknown", source in aliases)
