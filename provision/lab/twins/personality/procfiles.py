"""/proc files of the simulated server (meminfo, cpuinfo, mdstat), rendered from hardware.json; and the one
sysfs file of its on-board NIC (the link speed, render_sysfs).

SIMULATED: the twin bind-mounts these host files over its own /proc entries (as LXCFS does),
so `free`, `nproc`-style readers and `cat /proc/mdstat` see the spec'd server. Files are
rewritten IN PLACE (same inode) so a live bind mount sees every change.
"""

from __future__ import annotations

from pathlib import Path

from provision.lab.twins.personality.faults import Faults
from provision.lab.twins.personality.hardware import Hardware

PROC_FILES = ("meminfo", "cpuinfo", "mdstat", "sys/kernel/osrelease")


def write_in_place(path: Path, text: str) -> None:
    """Replace a file's content without replacing the file (bind mounts keep seeing it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = "r+" if path.exists() else "w"
    with path.open(mode, encoding="utf-8") as fh:
        fh.seek(0)
        fh.write(text)
        fh.truncate()


def render_meminfo(hw: Hardware) -> str:
    total = hw.memory_total_kb
    free = total * 97 // 100
    cached = total // 200
    fields: list[tuple[str, int, bool]] = [
        ("MemTotal", total, True), ("MemFree", free, True), ("MemAvailable", free + cached, True),
        ("Buffers", 212_436, True), ("Cached", cached, True), ("SwapCached", 0, True),
        ("Active", cached // 3, True), ("Inactive", cached // 2, True),
        ("Active(anon)", 30_112, True), ("Inactive(anon)", 301_944, True),
        # never negative: a small server's page cache is below the anon figures
        ("Active(file)", max(0, cached // 3 - 30_112), True), ("Inactive(file)", max(0, cached // 2 - 301_944), True),
        ("Unevictable", 30_336, True), ("Mlocked", 27_520, True), ("SwapTotal", 0, True),
        ("SwapFree", 0, True), ("Dirty", 96, True), ("Writeback", 0, True), ("AnonPages", 330_000, True),
        ("Mapped", 301_588, True), ("Shmem", 12_540, True), ("KReclaimable", 1_410_648, True),
        ("Slab", 3_011_212, True), ("SReclaimable", 1_410_648, True), ("SUnreclaim", 1_600_564, True),
        ("KernelStack", 64_416, True), ("PageTables", 12_908, True), ("SecPageTables", 0, True),
        ("NFS_Unstable", 0, True), ("Bounce", 0, True), ("WritebackTmp", 0, True),
        ("CommitLimit", total // 2, True), ("Committed_AS", 2_870_312, True),
        ("VmallocTotal", 34_359_738_367, True), ("VmallocUsed", 1_320_880, True), ("VmallocChunk", 0, True),
        ("Percpu", 471_040, True), ("HardwareCorrupted", 0, True), ("AnonHugePages", 0, True),
        ("ShmemHugePages", 0, True), ("ShmemPmdMapped", 0, True), ("FileHugePages", 0, True),
        ("FilePmdMapped", 0, True), ("HugePages_Total", 0, False), ("HugePages_Free", 0, False),
        ("HugePages_Rsvd", 0, False), ("HugePages_Surp", 0, False), ("Hugepagesize", 2048, True),
        ("Hugetlb", 0, True), ("DirectMap4k", 1_603_228, True), ("DirectMap2M", 61_214_720, True),
        ("DirectMap1G", (total // 1_048_576 + 2) * 1_048_576, True),
    ]
    # The kernel prints "%-15s %8lu kB" style columns (show_val_kb): key+colon padded to 16.
    return "".join(f"{k + ':':<16}{v:>8}{' kB' if kb else ''}\n" for k, v, kb in fields)


def _cpu_block(hw: Hardware, n: int) -> str:
    c = hw.cpu
    per_socket = c.cores_per_socket * c.threads_per_core
    logical_cores = c.sockets * c.cores_per_socket
    core_index = n % logical_cores
    socket = core_index // c.cores_per_socket
    core_id = core_index % c.cores_per_socket
    thread = n // logical_cores
    apic = (socket * 128 + core_id * 2 + thread) if c.threads_per_core > 1 else socket * 128 + core_id
    lines = [
        ("processor", str(n)), ("vendor_id", c.vendor_id), ("cpu family", str(c.family)),
        ("model", str(c.model)), ("model name", c.model_name), ("stepping", str(c.stepping)),
        ("microcode", "0x21000200"), ("cpu MHz", f"{c.base_mhz:.3f}"),
        ("cache size", f"{c.l3_kb_per_socket} KB"), ("physical id", str(socket)),
        ("siblings", str(per_socket)), ("core id", str(core_id)), ("cpu cores", str(c.cores_per_socket)),
        ("apicid", str(apic)), ("initial apicid", str(apic)), ("fpu", "yes"), ("fpu_exception", "yes"),
        ("cpuid level", "32"), ("wp", "yes"), ("flags", " ".join(c.flags)),
        ("bugs", "spectre_v1 spectre_v2 spec_store_bypass swapgs eibrs_pbrsb"),
        ("bogomips", f"{c.base_mhz * 2:.2f}"), ("clflush size", "64"), ("cache_alignment", "64"),
        ("address sizes", "46 bits physical, 57 bits virtual"), ("power management", ""),
    ]
    # Kernel layout (arch/x86/kernel/cpu/proc.c): key, tabs to column 16, ": value".
    out = []
    for key, value in lines:
        tabs = "\t" if len(key) >= 8 else "\t\t"
        out.append(f"{key}:" if key == "power management" else f"{key}{tabs}: {value}")
    return "\n".join(out) + "\n\n"


def render_cpuinfo(hw: Hardware) -> str:
    total = hw.cpu.logical_cpus or hw.cpu.sockets * hw.cpu.cores_per_socket * hw.cpu.threads_per_core
    return "".join(_cpu_block(hw, n) for n in range(total))


def render_mdstat(hw: Hardware, faults: Faults) -> str:
    raid = hw.boot_raid
    if raid is None:  # no md array: what the kernel's md driver prints with none assembled
        return "Personalities : \nunused devices: <none>\n"
    failed = faults.degraded_member()
    members = " ".join(
        f"{m}[{i}]" + ("(F)" if m == failed else "") for i, m in reversed(list(enumerate(raid.members)))
    )
    n = len(raid.members)
    up = n - (1 if failed in raid.members else 0)
    flags = "".join("_" if m == failed else "U" for m in raid.members)
    name = raid.device.removeprefix("/dev/")
    return (
        "Personalities : [raid1] [linear] [multipath] [raid0] [raid6] [raid5] [raid4] [raid10] \n"
        f"{name} : active {raid.level} {members}\n"
        f"      {raid.blocks} blocks super 1.2 [{n}/{up}] [{flags}]\n"
        "      bitmap: 2/14 pages [8KB], 65536KB chunk\n"
        "\n"
        "unused devices: <none>\n"
    )


def render_sysfs(hw: Hardware) -> dict[str, str]:
    """sysfs files of the simulated NICs, by path under /sys: the negotiated link speed in Mb/s."""
    return {f"class/net/{nic.name}/speed": f"{nic.speed_mbps}\n" for nic in hw.nics}


def render_all(hw: Hardware, faults: Faults, kernel: str) -> dict[str, str]:
    """Every /proc file; `kernel` is the release the twin runs until a boot picks an installed one."""
    return {
        "meminfo": render_meminfo(hw),
        "cpuinfo": render_cpuinfo(hw),
        "mdstat": render_mdstat(hw, faults),
        "sys/kernel/osrelease": kernel + "\n",
    }
