"""Scratch pool checks: ONLINE, the spec's vdev count and layout, properties, mounted where the spec says."""

from __future__ import annotations

import re
import shlex

from provision.conformance.checks._base import Context, Unreadable
from provision.conformance.facts import Probe
from provision.conformance.model import Level
from provision.conformance.parsers.zfs_lists import parse_zfs_get
from provision.conformance.parsers.zpool_status import Pool, Vdev, parse_zpool_status
from provision.spec.model import NodeSpec
from provision.spec.storage import ZfsLayout

AREA = "zfs"
STATUS = "zpool_status"
POOL_PROPS = "zpool_get"
DATASET_PROPS = "zfs_get"
_GROUP = re.compile(r"^(mirror|raidz1|raidz2|raidz3|raidz|draid\d?)(-\d+)?")
_SIZE = {"K": 1 << 10, "M": 1 << 20}


def probes(spec: NodeSpec, level: Level) -> list[Probe]:
    if spec.storage.scratch is None:  # no scratch set in the spec: no pool checks (not a pass)
        return []
    pool = shlex.quote(spec.need_scratch().zfs.pool)
    found = [Probe(name=STATUS, command=f"zpool status -P {pool}")]
    if level is not Level.QUICK:
        found += [
            Probe(name=POOL_PROPS, command=f"zpool get -Hp ashift {pool}"),
            Probe(name=DATASET_PROPS,
                  command=f"zfs get -Hp mountpoint,mounted,compression,atime,recordsize {pool}"),
        ]
    return found


def evaluate(ctx: Context) -> None:
    if ctx.spec.storage.scratch is None:
        return
    z = ctx.spec.need_scratch().zfs
    try:
        pool = next((p for p in ctx.parsed(STATUS, parse_zpool_status) if p.name == z.pool), None)
    except Unreadable as why:
        ctx.unreadable("zfs.pool", AREA, f"pool {z.pool} ONLINE", "ONLINE", why.reason)
        return
    ctx.record("zfs.pool", AREA, f"pool {z.pool} ONLINE", "ONLINE", pool.state if pool else "absent",
               bool(pool and pool.state == "ONLINE"))
    if pool is None:
        return
    _layout(ctx, z, pool)
    if ctx.level is not Level.QUICK:
        _properties(ctx, z)


def _layout(ctx: Context, z: ZfsLayout, pool: Pool) -> None:
    top = pool.root.children
    kinds = sorted({_kind(v) for v in top})
    ctx.equal("zfs.vdevs", AREA, f"{z.pool} top-level vdevs", z.vdevs, len(top))
    ctx.record("zfs.layout", AREA, f"{z.pool} layout", z.layout, kinds, kinds == [z.layout])
    leaves = pool.root.leaves()
    bad = [f"{v.name} {v.state}" for v in leaves if v.state != "ONLINE" or _errors(v)]
    ctx.record("zfs.devices", AREA, f"{z.pool} devices ONLINE without errors", f"{len(leaves)} ONLINE",
               "; ".join(bad) or f"{len(leaves)} ONLINE", not bad)


def _kind(vdev: Vdev) -> str:
    if not vdev.children:
        return "stripe"
    match = _GROUP.match(vdev.name)
    kind = match[1] if match else vdev.name
    return "raidz1" if kind == "raidz" else kind


def _errors(vdev: Vdev) -> int:
    return sum(n or 0 for n in (vdev.read_errors, vdev.write_errors, vdev.checksum_errors))


def _properties(ctx: Context, z: ZfsLayout) -> None:
    wanted: list[tuple[str, str, object]] = [
        (POOL_PROPS, "ashift", z.ashift),
        (DATASET_PROPS, "recordsize", _bytes(z.recordsize)),
        (DATASET_PROPS, "compression", z.compression),
        (DATASET_PROPS, "atime", z.atime),
        (DATASET_PROPS, "mountpoint", z.mountpoint),
        (DATASET_PROPS, "mounted", "yes"),
    ]
    for section, prop, expected in wanted:
        desc = f"{z.pool} {prop}"
        try:
            values = {p.property: p.value for p in ctx.parsed(section, parse_zfs_get) if p.dataset == z.pool}
        except Unreadable as why:
            ctx.unreadable(f"zfs.{prop}", AREA, desc, expected, why.reason)
            continue
        found = values.get(prop)
        ctx.record(f"zfs.{prop}", AREA, desc, expected, found, str(found) == str(expected))


def _bytes(size: str) -> int:
    return int(size[:-1]) * _SIZE[size[-1]]
