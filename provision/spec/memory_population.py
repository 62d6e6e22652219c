"""Memory population: can a spec's DIMM count, channels and speed be true together for its CPU?

The CPU parts' memory figures come from the parts table (provision/spec/parts.yml, one row per part with its
source): memory channels per socket, the memory type, and the speed the vendor rates at one and two DIMMs per
channel (DPC). `check_profile` is pure: a spec in, findings out
(errors: the spec cannot be true; warnings: the table cannot judge). `provision spec validate`
prints them, one line each, naming the file, the profile variable and the key.

Sources of those figures (vendor data, not measured here; parts.yml names each row's):
- Intel Xeon Platinum 8592+ (5th Gen Xeon Scalable, Emerald Rapids): Intel ARK "Max # of Memory
  Channels 8", "Memory Types DDR5-5600"; Intel's 5th Gen Xeon product brief and server vendors'
  population guides rate 2DPC at DDR5-4400.
- Intel Xeon Platinum 8480+ / 8462Y+ (4th Gen, Sapphire Rapids): Intel ARK 8 channels, DDR5-4800;
  4400 MT/s once the second DIMM of a channel is populated (Intel's 4th Gen memory population
  guidance, e.g. WWT "Memory Population Guidelines for Intel 4th Gen Xeon Scalable Processors").
  The whole Supermicro capture (tests/fixtures/redfish/full/supermicro, 2x 8462Y+, 32 DIMMs) runs
  every DIMM at OperatingSpeedMhz 4400 with AllowedSpeedsMHz 4800, which agrees.
- AMD EPYC 9454P (4th Gen EPYC, Genoa): AMD product page 12 channels DDR5-4800 (1DPC); AMD's
  EPYC 9004 memory population guidance rates 2DPC at DDR5-3600.
- AMD EPYC 7502P (2nd Gen EPYC, Rome): AMD product page 8 channels DDR4-3200; 2DPC 2933 MT/s on
  RDIMM platforms (server vendors' EPYC 7002 guides, e.g. Dell PowerEdge "3200, 2933 or 2666 MT/s").
- The seed's catalogue of single-socket servers (vendor data, not measured here; desktop parts take
  unbuffered DIMMs, two channels):
  - Intel Core i5-13500 (13th Gen, Raptor Lake): Intel ARK "Max # of Memory Channels 2", "Up to DDR5
    4800 MT/s, Up to DDR4 3200 MT/s". 2 DPC: 4000 MT/s, Intel's 13th Gen Core desktop datasheet vol. 1
    figure for two DIMMs a channel, as board vendors' QVLs repeat it (not re-read here: the shipped profile
    runs 1 DPC, where only ARK's figure counts). The table holds the DDR5 figures (the seed's workstation
    has DDR5).
  - Intel Core i9-9900K (9th Gen, Coffee Lake Refresh): Intel ARK 2 channels, "DDR4-2666", 128 GB max.
    ARK states one speed and no separate 2 DPC figure: it is taken for both (an assumption, said here).
  - AMD Ryzen 9 7950X (Zen 4, AM5): AMD product page 2 channels, "DDR5 up to 5200 MT/s" (2x1R/2x2R:
    one DIMM a channel); AMD's AM5 memory support table rates four DIMMs (2 DPC) at DDR5-3600.
"""

from __future__ import annotations

from dataclasses import dataclass

from provision.spec.findings import Finding, Severity
from provision.spec.model import NodeSpec
from provision.spec.parts import CpuPart, cpu_part, parts

__all__ = ["CPU_MEMORY", "CpuMemory", "Finding", "Severity", "check_profile", "lookup"]


@dataclass(frozen=True)
class CpuMemory:
    """What one CPU part's memory controllers take."""

    family: str
    channels: int
    type: str
    mts_by_dpc: tuple[int, ...]  # index 0: 1 DPC, 1: 2 DPC; a part that takes no more has no entry
    source: str


def _memory(part: CpuPart) -> CpuMemory:
    m = part.memory
    return CpuMemory(part.family, m.channels, m.type, m.mts_by_dpc, part.source)


CPU_MEMORY: dict[str, CpuMemory] = {p.key: _memory(p) for p in parts().cpus}
"""By part number (the key of provision/spec/parts.yml): the memory figures of the parts table."""


def lookup(model: str) -> CpuMemory | None:
    """The table entry for a model name as lscpu or Redfish prints it, or None."""
    part = cpu_part(model)
    return None if part is None else _memory(part)


def check_profile(spec: NodeSpec) -> list[Finding]:
    """Every reason the spec's memory population cannot be true for its CPU (pure)."""
    cpu, mem = spec.cpu, spec.memory
    found: list[Finding] = []
    populated = cpu.sockets * mem.channels_per_socket * mem.dimms_per_channel
    if populated != mem.dimm_count:
        found.append(Finding(Severity.ERROR, "memory.dimm_count",
                             f"{mem.dimm_count} DIMMs, but {cpu.sockets} socket(s) x {mem.channels_per_socket} "
                             f"channel(s) x {mem.dimms_per_channel} DIMM(s) per channel are {populated}"))
    entry = lookup(cpu.model)
    if entry is None:
        known = ", ".join(sorted(CPU_MEMORY))
        found.append(Finding(Severity.WARNING, "cpu.model",
                             f"{cpu.model!r} is not in the CPU memory table ({known}): cannot judge channels and "
                             "speed"))
        return found
    part = f"{cpu.model} ({entry.family})"
    if mem.channels_per_socket > entry.channels:
        found.append(Finding(Severity.ERROR, "memory.channels_per_socket",
                             f"{mem.channels_per_socket} channels per socket, but {part} has {entry.channels} "
                             f"[{entry.source}]"))
    if mem.dimms_per_channel > len(entry.mts_by_dpc):
        found.append(Finding(Severity.ERROR, "memory.dimms_per_channel",
                             f"{mem.dimms_per_channel} DIMMs per channel, but {part} is rated for at most "
                             f"{len(entry.mts_by_dpc)} [{entry.source}]"))
    else:
        rated = entry.mts_by_dpc[mem.dimms_per_channel - 1]
        if mem.min_speed_mts > rated:
            found.append(Finding(Severity.ERROR, "memory.min_speed_mts",
                                 f"{mem.min_speed_mts} MT/s minimum, but {part} runs {entry.type} at {rated} MT/s "
                                 f"with {mem.dimms_per_channel} DIMM(s) per channel [{entry.source}]"))
    if mem.type != entry.type:
        found.append(Finding(Severity.WARNING, "memory.type",
                             f"{mem.type}, but the table has {part} with {entry.type} only [{entry.source}]"))
    return found
