# LAB STAND-IN: simulated hardware, not the real tool.
"""Pool and dataset state of the lab's simulated ZFS (zfs.json in the twin's lab state dir).

The fake `zpool`/`zfs` keep their pools here; pool health is derived on every call from the
drives present (hardware.json minus the scratch_drive_missing fault).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import labstate

SIZE_PROPS = {"recordsize", "quota", "refquota", "reservation", "refreservation", "volsize",
              "used", "available", "referenced", "logicalused", "written", "usedbysnapshots",
              "usedbydataset", "usedbychildren"}
FS_DEFAULTS = {
    "type": "filesystem", "compression": "off", "recordsize": "131072", "atime": "on", "relatime": "off",
    "quota": "0", "refquota": "0", "reservation": "0", "refreservation": "0", "compressratio": "1.00x",
    "mounted": "yes", "canmount": "on", "xattr": "on", "sync": "standard", "checksum": "on",
    "dedup": "off", "readonly": "off", "acltype": "off", "dnodesize": "legacy", "primarycache": "all",
    "logbias": "latency", "snapdir": "hidden", "encryption": "off",
}
POOL_DEFAULTS = {"ashift": "0", "autotrim": "off", "autoexpand": "off", "autoreplace": "off",
                 "failmode": "wait", "altroot": "-", "readonly": "off", "multihost": "off"}
SLOP = 0.984  # metadata and slop space: a pool's SIZE is a little under its drives' total


def path() -> str:
    return labstate.state_path("zfs.json")


def load() -> dict[str, Any]:
    try:
        with open(path(), encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        data = {}
    data.setdefault("pools", {})
    data.setdefault("datasets", {})
    data.setdefault("snapshots", {})
    return data


def save(data: dict[str, Any]) -> None:
    mode = "r+" if os.path.exists(path()) else "w"
    with open(path(), mode, encoding="utf-8") as fh:
        fh.seek(0)
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.write("\n")
        fh.truncate()


def parse_size(text: str) -> int:
    text = text.strip().upper().rstrip("B")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(float(text)) if text not in ("", "NONE") else 0


def human(n: int) -> str:
    """zfs_nicenum(): 1.12M, 55.0T, 128K, 0B (at most 5 characters, exact multiples without decimals)."""
    if n < 1024:
        return f"{n}B" if n else "0B"
    index = 0
    while n >= 1024 ** (index + 1) and index < 5:
        index += 1
    unit = "KMGTPE"[index - 1]
    if n % (1024**index) == 0:
        return f"{n // 1024**index}{unit}"
    value = n / 1024**index
    for precision in (2, 1, 0):
        text = f"{value:.{precision}f}{unit}"
        if len(text) <= 5:
            return text
    return text


def now() -> int:
    return int(time.time())


def pool_devices(pool: dict[str, Any]) -> list[str]:
    return [d for vdev in pool["vdevs"] for d in vdev["devices"]]


def device_present(hw: dict[str, Any], dev: str) -> bool:
    drive = labstate.find_drive(hw, dev)
    return drive is not None and drive in labstate.present_drives(hw)


def vdev_state(hw: dict[str, Any], vdev: dict[str, Any]) -> str:
    missing = sum(1 for d in vdev["devices"] if not device_present(hw, d))
    if not missing:
        return "ONLINE"
    if vdev["type"] == "stripe":
        return "UNAVAIL"
    tolerance = {"mirror": len(vdev["devices"]) - 1, "raidz1": 1, "raidz2": 2, "raidz3": 3}
    return "DEGRADED" if missing <= tolerance.get(vdev["type"], 0) else "UNAVAIL"


def pool_health(hw: dict[str, Any], pool: dict[str, Any]) -> str:
    states = [vdev_state(hw, v) for v in pool["vdevs"]]
    if "UNAVAIL" in states:
        return "UNAVAIL"
    return "DEGRADED" if "DEGRADED" in states else "ONLINE"


def pool_size(hw: dict[str, Any], pool: dict[str, Any]) -> int:
    total = 0
    for vdev in pool["vdevs"]:
        sizes = [(labstate.find_drive(hw, d) or {}).get("size_bytes", 0) for d in vdev["devices"]]
        if vdev["type"] == "stripe":
            total += sum(sizes)
        else:  # raw size for raidz (zpool list counts parity), one side for mirror
            total += min(sizes) * (1 if vdev["type"] == "mirror" else len(sizes))
    return int(total * SLOP) // (1 << 20) * (1 << 20)


def usable_size(hw: dict[str, Any], pool: dict[str, Any]) -> int:
    total = 0
    for vdev in pool["vdevs"]:
        sizes = [(labstate.find_drive(hw, d) or {}).get("size_bytes", 0) for d in vdev["devices"]]
        parity = {"raidz1": 1, "raidz2": 2, "raidz3": 3}.get(vdev["type"], 0)
        if vdev["type"] == "stripe":
            total += sum(sizes)
        elif vdev["type"] == "mirror":
            total += min(sizes)
        else:
            total += min(sizes) * (len(sizes) - parity)
    return int(total * SLOP * 0.968)


def dataset_pool(name: str) -> str:
    return name.split("/", 1)[0]


def dataset_prop(hw: dict[str, Any], data: dict[str, Any], name: str, prop: str) -> tuple[str, str]:
    """(raw value, source) of a dataset property, inheriting from the parent like ZFS."""
    ds = data["datasets"][name]
    if prop in ds["props"]:
        return ds["props"][prop], "local"
    if prop == "name":
        return name, "-"
    if prop == "mountpoint":
        parent = name.rsplit("/", 1)[0] if "/" in name else None
        if parent:
            pm, src = dataset_prop(hw, data, parent, "mountpoint")
            inherited = "inherited from " + parent if src != "default" else "default"
            return pm.rstrip("/") + "/" + name.rsplit("/", 1)[1], inherited
        return "/" + name, "default"
    pool = data["pools"][dataset_pool(name)]
    used = 1_179_648 * (1 + sum(1 for d in data["datasets"] if d.startswith(name + "/")))
    dynamic = {"used": str(used), "referenced": "98304", "available": str(usable_size(hw, pool) - used),
               "creation": str(pool["created"]), "logicalused": str(used // 2)}
    if prop in dynamic:
        return dynamic[prop], "-"
    parent = name.rsplit("/", 1)[0] if "/" in name else None
    if parent and prop not in ("type", "compressratio", "mounted"):
        value, src = dataset_prop(hw, data, parent, prop)
        if src == "local":
            return value, f"inherited from {parent}"
        return value, src
    if prop in FS_DEFAULTS:
        return FS_DEFAULTS[prop], "-" if prop in ("type", "compressratio", "mounted") else "default"
    return "-", "-"


def show(prop: str, raw: str, parsable: bool) -> str:
    if prop in ("quota", "refquota", "reservation", "refreservation") and raw == "0":
        return "0" if parsable else "none"
    if prop in SIZE_PROPS and not parsable:
        try:
            return human(int(raw))
        except ValueError:
            return raw
    if prop == "creation" and not parsable:
        return time.strftime("%a %b %d %H:%M %Y", time.localtime(int(raw)))
    return raw


def snapshot_rows(data: dict[str, Any]) -> list[tuple[str, int]]:
    """(dataset@name, creation) of every snapshot as `zfs list -t snapshot` shows it, oldest first.

    Faults: snapshot_missing hides them all (as if sanoid never ran, or they were destroyed);
    snapshot_stale shows each `hours` older (as if sanoid stopped that long ago)."""
    if labstate.fault("snapshot_missing") is not None:
        return []
    shift = int((labstate.fault("snapshot_stale") or {}).get("hours", 0)) * 3600
    rows = [(name, int(s["created"]) - shift) for name, s in data["snapshots"].items()
            if not data["pools"].get(dataset_pool(name.split("@", 1)[0]), {}).get("exported")]
    return sorted(rows, key=lambda r: (r[1], r[0]))


def scan_line(pool: dict[str, Any]) -> str:
    """The `scan:` value of a pool (OpenZFS 2.1 form), from the last `zpool scrub`; with scrub_failed the last
    scrub (or one run when the fault was set, on a pool never scrubbed) finished with errors."""
    scrub = pool.get("scrub")
    failed = labstate.fault("scrub_failed")
    if not scrub and failed is not None:  # a scrub ran and failed when the fault was set (faults.json written)
        end = int(os.path.getmtime(labstate.state_path("faults.json")))
        scrub = {"start": end - 614, "end": end}
    if not scrub:
        return "none requested"
    errors = int(failed.get("errors", 4)) if failed is not None else int(scrub.get("errors", 0))
    took = int(scrub["end"]) - int(scrub["start"])
    when = time.strftime("%a %b %e %H:%M:%S %Y", time.localtime(int(scrub["end"])))
    return (f"scrub repaired 0B in {took // 3600:02d}:{took % 3600 // 60:02d}:{took % 60:02d} with {errors} errors "
            f"on {when}")


def data_errors_line(pool: dict[str, Any]) -> str:
    failed = labstate.fault("scrub_failed")
    if failed is not None:
        return f"errors: {int(failed.get('errors', 4))} data errors, use '-v' for a list"
    return "errors: No known data errors"
