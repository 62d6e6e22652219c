#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `fio` (3.33) for lab twins: read/randread jobs, --output-format=json or the normal summary.

The command line is read as fio reads it: global options, then one job per --name (each inheriting them);
`--stonewall` groups are reported as separate jobs. A job on a --directory follows the scratch pool the fake
zpool made: a healthy 8-drive gen5 stripe reads about 58 GB/s and 4.2 M 4K IOPS (at its slowest member's
pace); a degraded raidz reads slower; an UNAVAIL pool gives I/O errors; a directory that is not the pool's
mountpoint is the boot mirror's speed. A job on a --filename=/dev/nvmeXn1 reads that drive raw (~13 GB/s a
gen5 scratch drive; nvme_read_slow: 1.2 GB/s); `--readonly` refuses a write job, as fio does.
Nothing is read or written.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate
import zfsstate


def jobs(args: list[str]) -> list[dict[str, str]]:
    """fio's command line as it reads it: options before the first --name are global, each --name starts a job
    that inherits them (and overrides them with its own)."""
    glob: dict[str, str] = {}
    out: list[dict[str, str]] = []
    for a in args:
        if not a.startswith("--"):
            continue
        key, _, value = a[2:].partition("=")
        if key == "name":
            out.append({**glob, "name": value})
        (out[-1] if out else glob)[key] = value or "1"
    return out or [glob]


def _pool_for(directory: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    hw, data = labstate.hardware(), zfsstate.load()
    for name, pool in data["pools"].items():
        if pool.get("exported"):
            continue
        mountpoint = zfsstate.dataset_prop(hw, data, name, "mountpoint")[0]
        if directory.rstrip("/") == mountpoint.rstrip("/") or directory.startswith(mountpoint.rstrip("/") + "/"):
            return pool, hw
    return None, hw


DRIVE_SEQ = 13.0e9  # one gen5 scratch drive, 1 MiB sequential read
DRIVE_IOPS = 2.5e6
SLOW_SEQ = 1.2e9  # the drive the nvme_read_slow fault hits


def drive_rate(drive: dict[str, Any]) -> float:
    """Bytes/s of one drive's raw sequential read (nvme_read_slow makes one slow, as a worn or throttled one is)."""
    slow = labstate.fault("nvme_read_slow")
    if slow is not None and slow.get("drive") == drive["name"]:
        return SLOW_SEQ
    return DRIVE_SEQ if drive.get("role") == "scratch" else 3.2e9


def rates(directory: str, random: bool) -> tuple[float, float] | None:
    """(bytes/s, IOPS) for the job, or None when the pool cannot do I/O."""
    pool, hw = _pool_for(directory)
    if pool is None:  # the root file system: the boot mirror
        return (2.9e9, 88_000.0) if not random else (0.36e9, 88_000.0)
    health = zfsstate.pool_health(hw, pool)
    if health == "UNAVAIL":
        return None
    members = [d for d in (labstate.find_drive(hw, p) for p in zfsstate.pool_devices(pool)) if d is not None]
    drives = len(members)
    slowest = min((drive_rate(d) for d in members), default=DRIVE_SEQ)
    seq = min(drives * slowest, 58.3e9)  # a stripe reads at its slowest member's pace
    iops = min(drives * DRIVE_IOPS * slowest / DRIVE_SEQ, 4.2e6)
    scale = 0.7 if health == "DEGRADED" else 1.0
    return (seq * scale, seq * scale / (1 << 20)) if not random else (iops * scale * 4096, iops * scale)


def _job(o: dict[str, str], bw_bytes: float, iops: float) -> dict[str, Any]:
    runtime_ms = int(float(o.get("runtime", "30")) * 1000)
    io_bytes = int(bw_bytes * runtime_ms / 1000)
    lat = {"min": 9000, "max": 2_100_000, "mean": 61_234.5, "stddev": 12_001.2, "N": int(iops * runtime_ms / 1000)}
    read = {"io_bytes": io_bytes, "io_kbytes": io_bytes // 1024, "bw_bytes": int(bw_bytes),
            "bw": int(bw_bytes / 1024), "iops": round(iops, 6), "runtime": runtime_ms,
            "total_ios": int(iops * runtime_ms / 1000), "short_ios": 0, "drop_ios": 0,
            "slat_ns": {**lat, "mean": 2100.0}, "clat_ns": lat, "lat_ns": lat,
            "bw_min": int(bw_bytes / 1024 * 0.93), "bw_max": int(bw_bytes / 1024 * 1.04), "bw_agg": 100.0,
            "bw_mean": bw_bytes / 1024, "bw_dev": bw_bytes / 1024 * 0.01, "bw_samples": 240,
            "iops_min": int(iops * 0.93), "iops_max": int(iops * 1.04), "iops_mean": iops,
            "iops_stddev": iops * 0.01, "iops_samples": 240}
    idle = {k: 0 for k in ("io_bytes", "io_kbytes", "bw_bytes", "bw", "iops", "runtime", "total_ios",
                           "short_ios", "drop_ios")}
    return {"jobname": o.get("name", "job"), "groupid": 0, "error": 0, "eta": 0, "elapsed": runtime_ms // 1000 + 1,
            "job options": {k: v for k, v in o.items() if k not in ("output-format",)},
            "read": read, "write": idle, "trim": idle, "sync": {"total_ios": 0},
            "job_runtime": runtime_ms * int(o.get("numjobs", "1")), "usr_cpu": 1.8, "sys_cpu": 22.4,
            "ctx": 1_000_000, "majf": 0, "minf": 1200}


def _device_rates(o: dict[str, str], hw: dict[str, Any]) -> tuple[float, float]:
    filename = o["filename"]
    drive = labstate.find_drive(hw, filename)
    if drive is None or drive not in labstate.present_drives(hw):
        labstate.die(f"fio: {filename}: No such file or directory\nfio: pid={os.getpid()}, err=2/file:filesetup.c",
                     1)
    bw = drive_rate(drive)
    return bw, bw / _block_bytes(o.get("bs", "1M"))


def _block_bytes(text: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20}
    text = text.strip().lower()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1:] in units else int(text or 4096)


def _rates_for(o: dict[str, str]) -> tuple[float, float]:
    if "filename" in o:
        return _device_rates(o, labstate.hardware())
    directory = o.get("directory", os.getcwd())
    if not os.path.isdir(os.path.join(os.environ.get("PROVISION_LAB_ROOT", "/"), directory.lstrip("/"))):
        labstate.die(f"fio: {directory} is not a directory\nfio: failed parsing directory={directory}", 1)
    got = rates(directory, o.get("rw", "read") in ("randread", "randrw"))
    if got is None:
        sys.stdout.write(f"fio: io_u error on file {directory}/{o.get('name', 'job')}.0.0: Input/output error: "
                         f"read offset=0, buflen={1 << 20}\n")
        sys.exit(1)
    return got


def main(args: list[str]) -> int:
    if args[:1] == ["--version"]:
        sys.stdout.write("fio-3.33\n")
        return 0
    specs = jobs(args)
    if any(o.get("readonly") and o.get("rw", "read") not in ("read", "randread") for o in specs):
        labstate.die("fio: job <{}> has write bit set, but fio is in read-only mode".format(specs[0].get("name")), 1)
    results = [(o, *_rates_for(o)) for o in specs]
    if specs[0].get("output-format") == "json":
        doc = {"fio version": "fio-3.33", "timestamp": int(time.time()), "timestamp_ms": int(time.time() * 1000),
               "time": time.asctime(), "jobs": [_job(o, bw, iops) for o, bw, iops in results]}
        sys.stdout.write(json.dumps(doc, indent=2, separators=(",", " : ")) + "\n")
        return 0
    for o, bw_bytes, iops in results:
        gib, gb = bw_bytes / (1 << 30), bw_bytes / 1e9
        sys.stdout.write(f"{o.get('name', 'job')}: (groupid=0, jobs={o.get('numjobs', '1')}): err= 0: "
                         f"pid={os.getpid()}\n  read: IOPS={iops / 1000:.1f}k, BW={gib:.1f}GiB/s ({gb:.1f}GB/s)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
