#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `mdadm` (4.2 layout) for lab twins: --detail, --examine, --query, --detail/--examine
--scan; --assemble is a no-op (the boot mirror is always assembled). The array is the spec's boot
RAID1; the boot_mirror_degraded fault fails one member."""

from __future__ import annotations

import os
import socket
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate


def _uuid(raid: dict[str, Any]) -> str:
    u = raid["uuid"]
    return ":".join(u[i:i + 8] for i in range(0, 32, 8))


def _size(kib: int) -> str:
    return f"{kib} ({kib / 1048576:.2f} GiB {kib * 1024 / 1e9:.2f} GB)"


def _created() -> str:
    return time.ctime(os.path.getmtime(labstate.state_path("hardware.json")))


def _failed(raid: dict[str, Any]) -> str | None:
    f = labstate.fault("boot_mirror_degraded")
    return str(f["member"]) if f else None


def _array_or_die(hw: dict[str, Any], dev: str) -> dict[str, Any]:
    raid = hw["boot_raid"]
    if raid is None:  # a server without a boot mirror has no md array at all
        labstate.die(f"mdadm: cannot open {dev}: No such file or directory", 1)
    if os.path.basename(dev) != os.path.basename(raid["device"]) and dev not in ("/dev/md/0",):
        labstate.die(f"mdadm: cannot open {dev}: No such file or directory", 1)
    return raid


def detail(hw: dict[str, Any], dev: str) -> str:
    raid = _array_or_die(hw, dev)
    members, failed = raid["members"], _failed(raid)
    ok = [m for m in members if m != failed]
    host = socket.gethostname()
    state = "clean" if len(ok) == len(members) else "clean, degraded"
    lines = [
        f"{raid['device']}:", "           Version : 1.2", f"     Creation Time : {_created()}",
        f"        Raid Level : {raid['level']}", f"        Array Size : {_size(raid['blocks'])}",
        f"     Used Dev Size : {_size(raid['blocks'])}", f"      Raid Devices : {len(members)}",
        f"     Total Devices : {len(members)}", "       Persistence : Superblock is persistent", "",
        "     Intent Bitmap : Internal", "",
        f"       Update Time : {time.ctime()}", f"             State : {state} ",
        f"    Active Devices : {len(ok)}", f"   Working Devices : {len(ok)}",
        f"    Failed Devices : {len(members) - len(ok)}", "     Spare Devices : 0", "",
        "Consistency Policy : bitmap", "", f"              Name : {host}:0  (local to host {host})",
        f"              UUID : {_uuid(raid)}", f"            Events : {19 if state == 'clean' else 25}", "",
        "    Number   Major   Minor   RaidDevice State",
    ]
    for i, m in enumerate(members):
        minor = 2 + 4 * i
        if m == failed:
            lines.append(f"       -       0        0        {i}      removed")
        else:
            lines.append(f"       {i}     259        {minor}        {i}      active sync   /dev/{m}")
    for i, m in enumerate(members):
        if m == failed:
            lines += ["", f"       {i}     259        {2 + 4 * i}        -      faulty   /dev/{m}"]
    return "\n".join(lines) + "\n"


def examine(hw: dict[str, Any], dev: str) -> str:
    raid = hw["boot_raid"]
    member = os.path.basename(dev)
    if member not in raid["members"]:
        labstate.die(f"mdadm: No md superblock detected on {dev}.", 1)
    role = raid["members"].index(member)
    host = socket.gethostname()
    failed = _failed(raid)
    array_state = "".join("." if m == failed else "A" for m in raid["members"])
    return "\n".join([
        f"{dev}:", "          Magic : a92b4efc", "        Version : 1.2", "    Feature Map : 0x1",
        f"     Array UUID : {_uuid(raid)}", f"           Name : {host}:0  (local to host {host})",
        f"  Creation Time : {_created()}", f"     Raid Level : {raid['level']}",
        f"   Raid Devices : {len(raid['members'])}", "",
        f" Avail Dev Size : {raid['blocks'] * 2} sectors", f"     Array Size : {_size(raid['blocks'])}",
        "    Data Offset : 264192 sectors", "   Super Offset : 8 sectors", "          State : clean",
        f"    Device UUID : {raid['uuid'][::-1][:8]}:{raid['uuid'][8:16]}:{raid['uuid'][16:24]}:{role:08x}", "",
        "Internal Bitmap : 8 sectors from superblock", f"    Update Time : {time.ctime()}",
        "  Bad Block Log : 512 entries available at offset 16 sectors", "       Checksum : 5d2a6c1b - correct",
        "         Events : 19", "", f"   Device Role : Active device {role}",
        f"   Array State : {array_state} ('A' == active, '.' == missing, 'R' == replacing)",
    ]) + "\n"


def scan_line(hw: dict[str, Any]) -> str:
    raid = hw["boot_raid"]
    if raid is None:
        return ""
    return f"ARRAY {raid['device']} metadata=1.2 name={socket.gethostname()}:0 UUID={_uuid(raid)}\n"


def main(args: list[str]) -> int:
    hw = labstate.hardware()
    flags = {a for a in args if a.startswith("-")}
    devs = [a for a in args if not a.startswith("-")]
    if flags & {"--version", "-V"}:
        sys.stderr.write("mdadm - v4.2 - 2021-12-30 - Debian 4.2-5 (LAB STAND-IN)\n")
        return 0
    if flags & {"--detail", "-D"}:
        if flags & {"--scan", "-s"}:
            sys.stdout.write(scan_line(hw))
            return 0
        default = [hw["boot_raid"]["device"]] if hw["boot_raid"] else []
        sys.stdout.write("".join(detail(hw, d) for d in devs or default))
        return 0
    if flags & {"--examine", "-E"}:
        if flags & {"--scan", "-s"}:
            sys.stdout.write(scan_line(hw))
            return 0
        sys.stdout.write("".join(examine(hw, d) for d in devs))
        return 0
    if flags & {"--query", "-Q"}:
        raid = _array_or_die(hw, devs[0] if devs else "")
        sys.stdout.write(f"{raid['device']}: {raid['blocks'] / 1048576:.2f}GiB {raid['level']} "
                         f"{len(raid['members'])} devices, 0 spares. Use mdadm --detail for more detail.\n")
        return 0
    if flags & {"--monitor", "-F"} and not flags & {"-1", "--oneshot", "-t", "--test"}:
        while True:  # mdmonitor.service: watch the (simulated) arrays until stopped
            time.sleep(3600)
    if flags & {"--assemble", "-A", "--monitor", "-F"}:
        return 0  # LAB STAND-IN: the boot mirror is always assembled; nothing to do
    return labstate.die("mdadm: LAB STAND-IN supports --detail, --examine, --query, --scan and a no-op --assemble", 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
