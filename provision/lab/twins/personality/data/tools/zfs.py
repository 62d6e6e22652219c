#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `zfs` (OpenZFS 2.1 layout) for lab twins: list (-t snapshot too), get, set, create, destroy,
snapshot. Snapshots live in zfs.json with their creation time; faults snapshot_missing/snapshot_stale
change what the listing shows (zfsstate.snapshot_rows)."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate
import zfsstate
from zpool import _flags, _mkdir, _table, cmd_version  # `zfs version` prints what `zpool version` does

LIST_DEFAULT = ["name", "used", "avail", "refer", "mountpoint"]
ALIASES = {"avail": "available", "refer": "referenced", "compress": "compression", "recsize": "recordsize"}
GET_ALL = ["type", "creation", "used", "available", "referenced", "compressratio", "mounted", "quota",
           "reservation", "recordsize", "mountpoint", "checksum", "compression", "atime", "relatime", "xattr",
           "canmount", "sync", "dedup", "readonly", "acltype", "dnodesize", "primarycache", "logbias", "snapdir",
           "encryption"]


def _names(data: dict[str, Any], wanted: list[str], recursive: bool) -> list[str]:
    live = sorted(d for d in data["datasets"] if not data["pools"].get(zfsstate.dataset_pool(d), {}).get("exported"))
    if not wanted:
        return live
    out = []
    for w in wanted:
        if w not in live:
            labstate.die(f"cannot open '{w}': dataset does not exist", 1)
        out += [d for d in live if d == w or (recursive and d.startswith(w + "/"))]
    return out


def _value(hw: dict[str, Any], data: dict[str, Any], name: str, prop: str, parsable: bool) -> tuple[str, str]:
    prop = ALIASES.get(prop, prop)
    raw, source = zfsstate.dataset_prop(hw, data, name, prop)
    return zfsstate.show(prop, raw, parsable), source


def _snapshot_list(data: dict[str, Any], flags: set[str], opts: dict[str, str], rest: list[str]) -> int:
    cols = opts["-o"].split(",") if "-o" in opts else ["name", "used", "avail", "refer", "mountpoint"]
    names = _names(data, rest, "r" in flags) if rest else None
    rows = []
    for full, created in zfsstate.snapshot_rows(data):
        dataset = full.split("@", 1)[0]
        if names is not None and dataset not in names:
            continue
        cell = {"name": full, "creation": str(created) if "p" in flags else
                zfsstate.show("creation", str(created), False), "used": "0" if "p" in flags else "0B",
                "avail": "-", "available": "-", "refer": "98304" if "p" in flags else "96K",
                "referenced": "98304" if "p" in flags else "96K", "mountpoint": "-", "type": "snapshot"}
        rows.append([cell.get(c, "-") for c in cols])
    if not rows:
        print("no datasets available")
        return 0
    _table(cols, rows, "H" in flags)
    return 0


def cmd_list(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    flags, opts, rest = _flags(args)
    types = opts.get("-t", "filesystem").split(",")
    if "snapshot" in types or "snap" in types:
        return _snapshot_list(data, flags, opts, rest)
    cols = opts["-o"].split(",") if "-o" in opts else LIST_DEFAULT
    names = _names(data, rest, "r" in flags or not rest)
    if not names:
        print("no datasets available")
        return 0
    rows = [[_value(hw, data, n, c, "p" in flags)[0] for c in cols] for n in names]
    _table(cols, rows, "H" in flags)
    return 0


def cmd_get(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    flags, opts, rest = _flags(args)
    if not rest:
        labstate.die("missing property argument", 2)
    props = GET_ALL if rest[0] == "all" else rest[0].split(",")
    cols = opts["-o"].split(",") if "-o" in opts else ["name", "property", "value", "source"]
    rows = []
    for n in _names(data, rest[1:], "r" in flags):
        for p in props:
            value, source = _value(hw, data, n, p, "p" in flags)
            cell = {"name": n, "property": p, "value": value, "source": source}
            rows.append([cell[c] for c in cols])
    _table(cols, rows, "H" in flags)
    return 0


def _assign(props: dict[str, str], kv: str) -> None:
    if "=" not in kv:
        labstate.die(f"invalid property '{kv}': must be property=value", 2)
    key, value = kv.split("=", 1)
    key = ALIASES.get(key, key)
    if key in ("used", "available", "referenced", "type", "creation", "compressratio", "mounted"):
        labstate.die(f"cannot set property for '{key}': read-only property", 1)
    props[key] = str(zfsstate.parse_size(value)) if key in zfsstate.SIZE_PROPS and value != "none" else (
        "0" if value == "none" and key in zfsstate.SIZE_PROPS else value)


def cmd_set(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    if len(args) < 2:
        labstate.die("missing property=value argument(s)", 2)
    names = _names(data, args[-1:], False)
    for kv in args[:-1]:
        _assign(data["datasets"][names[0]]["props"], kv)
    zfsstate.save(data)
    return 0


def cmd_create(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    flags, opts, rest = _flags(args)
    if not rest:
        labstate.die("missing dataset argument", 2)
    name = rest[0]
    parent = name.rsplit("/", 1)[0]
    if "/" not in name or zfsstate.dataset_pool(name) not in data["pools"]:
        labstate.die(f"cannot create '{name}': no such pool '{zfsstate.dataset_pool(name)}'", 1)
    if name in data["datasets"]:
        labstate.die(f"cannot create '{name}': dataset already exists", 1)
    if parent not in data["datasets"] and "p" not in flags:
        labstate.die(f"cannot create '{name}': parent does not exist", 1)
    props: dict[str, str] = {}
    for kv in [x for x in opts.get("-o", "").split(",") if x]:
        _assign(props, kv)
    data["datasets"][name] = {"props": props}
    zfsstate.save(data)
    _mkdir(zfsstate.dataset_prop(hw, data, name, "mountpoint")[0])
    return 0


def cmd_snapshot(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    flags, _o, rest = _flags(args)
    if not rest:
        labstate.die("missing snapshot argument\nusage:\n\tsnapshot [-r] [-o property=value] ... "
                     "<filesystem|volume>@<snap> ...", 2)
    created = zfsstate.now()
    for full in rest:
        if "@" not in full:
            labstate.die(f"cannot create snapshot '{full}': missing '@' delimiter in snapshot name", 2)
        dataset, snap = full.split("@", 1)
        targets = _names(data, [dataset], "r" in flags)
        for name in targets:
            if f"{name}@{snap}" in data["snapshots"]:
                labstate.die(f"cannot create snapshot '{name}@{snap}': dataset already exists", 1)
        for name in targets:
            data["snapshots"][f"{name}@{snap}"] = {"created": created}
    zfsstate.save(data)
    return 0


def _destroy_snapshot(data: dict[str, Any], full: str, recursive: bool) -> int:
    dataset, snap = full.split("@", 1)
    names = [f"{n}@{snap}" for n in _names(data, [dataset], recursive)]
    gone = [n for n in names if n in data["snapshots"]]
    if not gone:
        labstate.die("could not find any snapshots to destroy; check snapshot names.", 1)
    for n in gone:
        del data["snapshots"][n]
    zfsstate.save(data)
    return 0


def cmd_destroy(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    flags, _o, rest = _flags(args)
    if rest and "@" in rest[0]:
        return _destroy_snapshot(data, rest[0], "r" in flags)
    for n in _names(data, rest[:1], "r" in flags):
        if "/" not in n:
            labstate.die(f"cannot destroy '{n}': operation does not apply to pools\nuse 'zpool destroy {n}'", 1)
        del data["datasets"][n]
        for snap in [k for k in data["snapshots"] if k.split("@", 1)[0] == n]:
            del data["snapshots"][snap]
    zfsstate.save(data)
    return 0


COMMANDS = {"list": cmd_list, "get": cmd_get, "set": cmd_set, "create": cmd_create, "destroy": cmd_destroy,
            "snapshot": cmd_snapshot, "version": cmd_version}


def main(args: list[str]) -> int:
    if not args or args[0] not in COMMANDS:
        labstate.die("usage: zfs command args ...  (LAB STAND-IN: list, get, set, create, destroy, snapshot,"
                     " version)", 2)
    return COMMANDS[args[0]](labstate.hardware(), zfsstate.load(), args[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
