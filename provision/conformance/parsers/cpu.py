"""`lscpu` and `/proc/cpuinfo`: CPU model, topology and flags."""

from __future__ import annotations

import re

from provision.conformance.parsers._base import Model, fail, lines_of, present, to_int, tool_parser

TOOL_LSCPU = "lscpu"
TOOL_CPUINFO = "/proc/cpuinfo"

_LSCPU_KV = re.compile(r"^(?P<key>[^:]+?):\s*(?P<value>.*)$")
_NUMA_NODE = re.compile(r"^NUMA node(?P<node>\d+) CPU\(s\)$")
_REQUIRED = ("CPU(s)", "Model name", "Thread(s) per core", "Core(s) per socket", "Socket(s)", "Flags")


class LscpuInfo(Model):
    """What `lscpu` says about the CPUs."""

    architecture: str | None
    cpus: int
    online_cpus: str | None
    vendor_id: str | None
    model_name: str
    cpu_family: int | None
    model: int | None
    stepping: int | None
    threads_per_core: int
    cores_per_socket: int
    sockets: int
    numa_nodes: int | None
    numa_node_cpus: dict[int, str]
    flags: tuple[str, ...]


def _lscpu_fields(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped:
            continue
        match = _LSCPU_KV.match(stripped)
        if match is None:
            fail(TOOL_LSCPU, f"unexpected line {stripped[:120]!r}")
        fields.setdefault(match["key"].strip(), match["value"].strip())
    return fields


def _int(tool: str, fields: dict[str, str], key: str) -> int:
    value = to_int(tool, key, fields.get(key))
    if value is None:
        fail(tool, f"'{key}' is not available")
    return value


@tool_parser(TOOL_LSCPU)
def parse_lscpu(text: str) -> LscpuInfo:
    """Parse `lscpu` (flat or the indented layout of util-linux >= 2.38)."""
    fields = _lscpu_fields(text)
    for key in _REQUIRED:
        if key not in fields:
            fail(TOOL_LSCPU, f"no '{key}' line (truncated output?)")
    numa = {int(m["node"]): v for k, v in fields.items() if (m := _NUMA_NODE.match(k))}
    return LscpuInfo(
        architecture=present(fields.get("Architecture")),
        cpus=_int(TOOL_LSCPU, fields, "CPU(s)"),
        online_cpus=present(fields.get("On-line CPU(s) list")),
        vendor_id=present(fields.get("Vendor ID")),
        model_name=fields["Model name"],
        cpu_family=to_int(TOOL_LSCPU, "CPU family", fields.get("CPU family")),
        model=to_int(TOOL_LSCPU, "Model", fields.get("Model")),
        stepping=to_int(TOOL_LSCPU, "Stepping", fields.get("Stepping")),
        threads_per_core=_int(TOOL_LSCPU, fields, "Thread(s) per core"),
        cores_per_socket=_int(TOOL_LSCPU, fields, "Core(s) per socket"),
        sockets=_int(TOOL_LSCPU, fields, "Socket(s)"),
        numa_nodes=to_int(TOOL_LSCPU, "NUMA node(s)", fields.get("NUMA node(s)")),
        numa_node_cpus=numa,
        flags=tuple(fields["Flags"].split()),
    )


class CpuInfoEntry(Model):
    """One `processor : N` block."""

    processor: int
    vendor_id: str | None
    model_name: str | None
    cpu_family: int | None
    model: int | None
    stepping: int | None
    physical_id: int | None
    core_id: int | None
    cpu_cores: int | None
    siblings: int | None
    flags: tuple[str, ...]


class CpuInfo(Model):
    """All blocks of /proc/cpuinfo."""

    processors: tuple[CpuInfoEntry, ...]

    @property
    def sockets(self) -> int:
        """Distinct physical package ids (1 when the kernel prints none)."""
        return len({p.physical_id for p in self.processors if p.physical_id is not None}) or 1


def _blocks(text: str) -> list[dict[str, str]]:
    blocks: list[dict[str, str]] = [{}]
    for line in lines_of(text):
        if not line.strip():
            if blocks[-1]:
                blocks.append({})
            continue
        key, sep, value = line.partition(":")
        if not sep:
            fail(TOOL_CPUINFO, f"unexpected line {line.strip()[:120]!r}")
        blocks[-1].setdefault(key.strip(), value.strip())
    return [b for b in blocks if b]


def _entry(block: dict[str, str]) -> CpuInfoEntry:
    number = to_int(TOOL_CPUINFO, "processor", block.get("processor"))
    if number is None:
        fail(TOOL_CPUINFO, "a block has no 'processor' line")
    what = f"processor {number}"
    return CpuInfoEntry(
        processor=number,
        vendor_id=present(block.get("vendor_id")),
        model_name=present(block.get("model name")),
        cpu_family=to_int(TOOL_CPUINFO, what, block.get("cpu family")),
        model=to_int(TOOL_CPUINFO, what, block.get("model")),
        stepping=to_int(TOOL_CPUINFO, what, block.get("stepping")),
        physical_id=to_int(TOOL_CPUINFO, what, block.get("physical id")),
        core_id=to_int(TOOL_CPUINFO, what, block.get("core id")),
        cpu_cores=to_int(TOOL_CPUINFO, what, block.get("cpu cores")),
        siblings=to_int(TOOL_CPUINFO, what, block.get("siblings")),
        flags=tuple((block.get("flags") or block.get("Features") or "").split()),
    )


@tool_parser(TOOL_CPUINFO)
def parse_cpuinfo(text: str) -> CpuInfo:
    """Parse /proc/cpuinfo. Every block must carry the same keys as the first (truncation check)."""
    blocks = _blocks(text)
    keys = set(blocks[0])
    for block in blocks[1:]:
        if set(block) != keys:
            missing = sorted(keys - set(block))
            fail(TOOL_CPUINFO, f"processor {block.get('processor', '?')} lacks {missing[:3]} (truncated output?)")
    return CpuInfo(processors=tuple(_entry(b) for b in blocks))
