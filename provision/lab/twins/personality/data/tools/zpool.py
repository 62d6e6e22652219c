#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `zpool` (OpenZFS 2.1 layout) for lab twins: status, list, get, create, destroy,
import, export, scrub, version. Pools live in zfs.json; no kernel module or real disk is touched."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate
import zfsstate

GROUPS = ("mirror", "raidz", "raidz1", "raidz2", "raidz3")
LIST_DEFAULT = ["name", "size", "alloc", "free", "ckpoint", "expandsz", "frag", "cap", "dedup", "health", "altroot"]


def _flags(args: list[str]) -> tuple[set[str], dict[str, str], list[str]]:
    """Split argv into single-letter flags, -o/-O/-m options and positionals."""
    flags: set[str] = set()
    opts: dict[str, str] = {}
    rest: list[str] = []
    it = iter(range(len(args)))
    skip = -1
    for i in it:
        if i == skip:
            continue
        a = args[i]
        if a in ("-o", "-O", "-m", "-R", "-t", "-T", "-d") and i + 1 < len(args):
            opts.setdefault(a, "")
            opts[a] = (opts[a] + "," if opts[a] else "") + args[i + 1]
            skip = i + 1
        elif a.startswith("-") and len(a) > 1 and not rest:
            flags.update(a[1:])
        else:
            rest.append(a)
    return flags, opts, rest


def _pool_or_die(data: dict[str, Any], name: str) -> dict[str, Any]:
    pool = data["pools"].get(name)
    if pool is None or pool.get("exported"):
        labstate.die(f"cannot open '{name}': no such pool", 1)
    return pool


def _active(data: dict[str, Any]) -> list[str]:
    return sorted(n for n, p in data["pools"].items() if not p.get("exported"))


def _status_lines(hw: dict[str, Any], name: str, pool: dict[str, Any], full_path: bool) -> list[str]:
    health = zfsstate.pool_health(hw, pool)
    rows: list[tuple[int, str, str, str]] = []  # depth, name, state, note
    rows.append((0, name, health, "insufficient replicas" if health == "UNAVAIL" else ""))
    for i, vdev in enumerate(pool["vdevs"]):
        depth = 2
        if vdev["type"] != "stripe":
            vstate = zfsstate.vdev_state(hw, vdev)
            rows.append((2, f"{vdev['type']}-{i}", vstate, "insufficient replicas" if vstate == "UNAVAIL" else ""))
            depth = 4
        for dev in vdev["devices"]:
            # zpool partitions a whole disk it is given: -P shows the data partition (-part1 / p1)
            part = ("-part1" if "/by-id/" in dev else "p1") if full_path and labstate.find_drive(hw, dev) else ""
            shown = dev + part if full_path else os.path.basename(dev)
            ok = zfsstate.device_present(hw, dev)
            rows.append((depth, shown, "ONLINE" if ok else "UNAVAIL", "" if ok else "cannot open"))
    width = max(10, *(d + len(n) for d, n, _, _ in rows))
    out = [f"  pool: {name}", f" state: {health}"]
    scan = [f"  scan: {zfsstate.scan_line(pool)}"]
    if health != "ONLINE":
        verdict = ("There are insufficient\n\treplicas for the pool to continue functioning." if health == "UNAVAIL"
                   else "Sufficient replicas exist for\n\tthe pool to continue functioning in a degraded state.")
        out += [f"status: One or more devices could not be opened.  {verdict}",
                "action: Attach the missing device and online it using 'zpool online'.",
                "   see: https://openzfs.github.io/openzfs-docs/msg/ZFS-8000-"
                + ("3C" if health == "UNAVAIL" else "2Q")]
    out += [*scan, "config:", "", f"\t{'NAME':<{width}}  {'STATE':<8} {'READ':>5} {'WRITE':>5} {'CKSUM':>5}"]
    for depth, n, state, note in rows:
        line = f"\t{'':{depth}}{n:<{width - depth}}  {state:<8} {0:>5} {0:>5} {0:>5}"
        out.append(line + (f"  {note}" if note else ""))
    out += ["", zfsstate.data_errors_line(pool) if health != "UNAVAIL" else
            "errors: List of errors unavailable: pool I/O is currently suspended"]
    return out


def cmd_status(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    flags, _opts, names = _flags(args)
    names = names or _active(data)
    if not names:
        if "H" not in flags:  # OpenZFS (zpool_main.c) says so only when not scripted
            print("no pools available")
        return 0
    blocks = [_status_lines(hw, n, _pool_or_die(data, n), "P" in flags) for n in names]
    print("\n\n".join("\n".join(b) for b in blocks))
    return 0


def _pool_prop(hw: dict[str, Any], name: str, pool: dict[str, Any], prop: str, parsable: bool) -> str:
    size = zfsstate.pool_size(hw, pool)
    alloc = 1_236_992 + 1_179_648 * sum(1 for d in zfsstate.load()["datasets"] if d.startswith(name + "/"))
    values: dict[str, str] = {
        "name": name, "size": str(size), "alloc": str(alloc), "allocated": str(alloc),
        "free": str(size - alloc), "ckpoint": "-", "expandsz": "-", "frag": "0", "fragmentation": "0",
        "cap": "0", "capacity": "0", "dedup": "1.00", "dedupratio": "1.00",
        "health": zfsstate.pool_health(hw, pool), "guid": str(pool["guid"]),
        "version": "-", "bootfs": "-", "comment": "-",
    }
    values.update({k: v for k, v in zfsstate.POOL_DEFAULTS.items() if k not in values})
    values.update(pool.get("props", {}))
    raw = values.get(prop, "-")
    if parsable:
        return raw
    if prop in ("size", "alloc", "allocated", "free"):
        return zfsstate.human(int(raw))
    if prop in ("frag", "fragmentation", "cap", "capacity"):
        return raw + "%"
    if prop in ("dedup", "dedupratio"):
        return raw + "x"
    return raw


def cmd_list(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    flags, opts, names = _flags(args)
    cols = opts.get("-o", "").split(",") if "-o" in opts else LIST_DEFAULT
    names = names or _active(data)
    if not names:
        print("no pools available")
        return 0
    rows = [[_pool_prop(hw, n, _pool_or_die(data, n), c, "p" in flags) for c in cols] for n in names]
    _table(cols, rows, "H" in flags)
    return 0


def _table(cols: list[str], rows: list[list[str]], scripted: bool) -> None:
    if scripted:
        for r in rows:
            print("\t".join(r))
        return
    head = [c.upper() for c in cols]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    for r in [head, *rows]:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


def cmd_get(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    flags, opts, rest = _flags(args)
    if not rest:
        labstate.die("missing property argument\nusage:\n\tget [-Hp] [-o field[,...]] <all | property[,...]>"
                     " [<pool>]", 2)
    props = rest[0].split(",")
    names = rest[1:] or _active(data)
    cols = opts["-o"].split(",") if "-o" in opts else ["name", "property", "value", "source"]
    rows = []
    for n in names:
        pool = _pool_or_die(data, n)
        for prop in (["size", "capacity", "health", "guid", "ashift", "autotrim", "altroot"] if props == ["all"]
                     else props):
            value = _pool_prop(hw, n, pool, prop, "p" in flags)
            default = "default" if prop in zfsstate.POOL_DEFAULTS else "-"
            source = "local" if prop in pool.get("props", {}) else default
            cell = {"name": n, "property": prop, "value": value, "source": source}
            rows.append([cell[c] for c in cols])
    _table(cols, rows, "H" in flags)
    return 0


def _parse_vdevs(hw: dict[str, Any], data: dict[str, Any], spec: list[str], force: bool) -> list[dict[str, Any]]:
    vdevs: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for tok in spec:
        if tok in GROUPS:
            current = {"type": "raidz1" if tok == "raidz" else tok, "devices": []}
            vdevs.append(current)
            continue
        dev = tok if tok.startswith("/") else f"/dev/{tok}"
        drive = labstate.find_drive(hw, dev)
        if drive is None or drive not in labstate.present_drives(hw):
            labstate.die(f"cannot open '{dev}': no such device in /dev\n"
                         "must be a full path or shorthand device name", 1)
        if drive["role"] == "boot" and hw.get("boot_raid") and not force:
            labstate.die(f"invalid vdev specification\nuse '-f' to override the following errors:\n"
                         f"{dev} is part of active md RAID array {hw['boot_raid']['device']}", 1)
        for pname, pool in data["pools"].items():
            if any(labstate.find_drive(hw, d) == drive for d in zfsstate.pool_devices(pool)):
                labstate.die(f"invalid vdev specification\nuse '-f' to override the following errors:\n"
                             f"{dev} is part of {'exported' if pool.get('exported') else 'active'} pool '{pname}'", 1)
        if current is None:
            vdevs.append({"type": "stripe", "devices": [dev]})
        else:
            current["devices"].append(dev)
    if not vdevs or any(not v["devices"] for v in vdevs):
        labstate.die("invalid vdev specification: at least one toplevel vdev must be specified", 2)
    return vdevs


def cmd_create(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    flags, opts, rest = _flags(args)
    if len(rest) < 2:
        labstate.die("missing vdev specification\nusage:\n\tcreate [-fnd] [-o property=value] ... <pool> <vdev> ...", 2)
    name, spec = rest[0], rest[1:]
    if name in data["pools"]:
        labstate.die(f"cannot create '{name}': pool already exists", 1)
    vdevs = _parse_vdevs(hw, data, spec, "f" in flags)
    if "n" in flags:
        print(f"would create '{name}' with the following layout:\n\n\t{name}")
        return 0
    pool_props = dict(kv.split("=", 1) for kv in opts.get("-o", "").split(",") if "=" in kv)
    fs_props = dict(kv.split("=", 1) for kv in opts.get("-O", "").split(",") if "=" in kv)
    if "-m" in opts:
        fs_props["mountpoint"] = opts["-m"]
    for k in list(fs_props):
        if k in zfsstate.SIZE_PROPS:
            fs_props[k] = str(zfsstate.parse_size(fs_props[k]))
    guid = int(labstate.hardware()["system"]["uuid"].replace("-", "")[:15], 16) + len(data["pools"])
    data["pools"][name] = {"vdevs": vdevs, "props": pool_props, "guid": guid, "created": zfsstate.now()}
    data["datasets"][name] = {"props": fs_props}
    zfsstate.save(data)
    _mkdir(fs_props.get("mountpoint", "/" + name))
    return 0


def _mkdir(mountpoint: str) -> None:
    if mountpoint in ("none", "legacy", "-"):
        return
    root = os.environ.get("PROVISION_LAB_ROOT", "/")
    os.makedirs(os.path.join(root, mountpoint.lstrip("/")), exist_ok=True)


def cmd_destroy(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    _f, _o, rest = _flags(args)
    if not rest:
        labstate.die("missing pool argument", 2)
    _pool_or_die(data, rest[0])
    del data["pools"][rest[0]]
    for ds in [d for d in data["datasets"] if zfsstate.dataset_pool(d) == rest[0]]:
        del data["datasets"][ds]
    for snap in [k for k in data["snapshots"] if zfsstate.dataset_pool(k.split("@", 1)[0]) == rest[0]]:
        del data["snapshots"][snap]
    zfsstate.save(data)
    return 0


def cmd_export(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    _f, _o, rest = _flags(args)
    for n in rest:
        _pool_or_die(data, n)["exported"] = True
    zfsstate.save(data)
    return 0


def cmd_import(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    flags, _o, rest = _flags(args)
    exported = sorted(n for n, p in data["pools"].items() if p.get("exported"))
    if not rest and "a" not in flags:
        if not exported:
            print("no pools available to import")
            return 0
        for n in exported:
            block = _status_lines(hw, n, data["pools"][n], False)
            print("\n".join([f"   pool: {n}", f"     id: {data['pools'][n]['guid']}", *block[1:-2]]) + "\n")
        return 0
    targets = exported if "a" in flags else rest[:1]
    for n in targets:
        if n not in exported:
            labstate.die(f"cannot import '{n}': no such pool available", 1)
        data["pools"][n].pop("exported", None)
    zfsstate.save(data)
    return 0


def cmd_scrub(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    """A scrub that has just finished (the simulation has no time to pass): it took the pool's size at
    10 GB/s, and ends now. An UNAVAIL pool cannot be scrubbed."""
    flags, _o, rest = _flags(args)
    if not rest:
        labstate.die("missing pool name argument\nusage:\n\tscrub [-s | -p] [-w] <pool> ...", 2)
    for name in rest:
        pool = _pool_or_die(data, name)
        if zfsstate.pool_health(hw, pool) == "UNAVAIL":
            labstate.die(f"cannot scrub '{name}': pool I/O is currently suspended", 1)
        if "s" in flags or "p" in flags:
            continue
        end = zfsstate.now()
        took = max(1, zfsstate.pool_size(hw, pool) // 10**10)
        pool["scrub"] = {"start": end - took, "end": end, "errors": 0}
    zfsstate.save(data)
    return 0


def cmd_version(hw: dict[str, Any], data: dict[str, Any], args: list[str]) -> int:
    v = labstate.installed_version("zfsutils-linux") or "2.1.11-1+deb12u1"
    print(f"zfs-{v}\nzfs-kmod-{labstate.upstream(v)}-1")
    return 0


COMMANDS = {"status": cmd_status, "scrub": cmd_scrub, "list": cmd_list, "get": cmd_get, "create": cmd_create,
            "destroy": cmd_destroy, "import": cmd_import, "export": cmd_export, "version": cmd_version}


def main(args: list[str]) -> int:
    if not args or args[0] not in COMMANDS:
        labstate.die("usage: zpool command args ...  (LAB STAND-IN: status, list, get, create, destroy, import,"
                     " export, scrub, version)", 2)
    return COMMANDS[args[0]](labstate.hardware(), zfsstate.load(), args[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
