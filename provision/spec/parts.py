"""The parts table (parts.yml beside this module): each CPU and GPU the profiles name, with its data sheet's figures.

`part_findings(spec)` names every figure of a profile that its part cannot have (pure: a spec in, findings out),
each with the profile's figure, the part's and the source. The table is read once, validated as typed rows; a
broken table is a SpecError naming the file and the row.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from provision.errors import SpecError
from provision.spec.findings import Finding, Severity
from provision.spec.model import NodeSpec
from provision.spec.strict_yaml import load_strict

PARTS_FILE = Path(__file__).with_name("parts.yml")

_Pos = Annotated[int, Field(gt=0)]
_PosF = Annotated[float, Field(gt=0)]


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


class PartMemory(_Row):
    """What the part's memory controllers take."""

    type: Literal["DDR4", "DDR5"]
    channels: _Pos
    mts_by_dpc: tuple[_Pos, ...] = Field(min_length=1, description="Rated MT/s at 1 DIMM per channel, 2, ...")


class CpuPart(_Row):
    """One CPU's data sheet figures (per socket)."""

    key: str = Field(min_length=1, description="The part number as the model name carries it, lower case")
    name: str
    family: str
    cores: _Pos
    threads: _Pos
    base_clock_ghz: _PosF
    l3_mb: _Pos
    pcie_lanes: _Pos
    pcie_generation: _Pos
    memory: PartMemory
    power_w: _Pos
    power_kind: str = Field(min_length=1, description="Which power figure: TDP, default TDP, Maximum Turbo Power")
    source: str = Field(min_length=1)


class GpuPart(_Row):
    """One GPU board's data sheet figures."""

    key: str
    names: tuple[str, ...] = Field(min_length=1, description="Product names as nvidia-smi prints them")
    name: str
    memory_gb: _Pos
    memory_bandwidth_tbs: _PosF
    max_power_w: _Pos
    pcie_generation: _Pos
    source: str = Field(min_length=1)


class PartsTable(_Row):
    cpus: tuple[CpuPart, ...]
    gpus: tuple[GpuPart, ...]

    @model_validator(mode="after")
    def _unique(self) -> PartsTable:
        keys = [p.key for p in self.cpus] + [g.key for g in self.gpus]
        names = [_gpu_name(n) for g in self.gpus for n in g.names]
        for what, seen in (("key", keys), ("GPU name", names)):
            twice = sorted({k for k in seen if seen.count(k) > 1})
            if twice:
                raise ValueError(f"{what}(s) listed twice: {twice}")
        return self


def load_parts(path: Path = PARTS_FILE) -> PartsTable:
    """The parts table at `path`; SpecError naming the file, the row and the key on a bad row."""
    raw = load_strict(path)
    try:
        return PartsTable.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SpecError(f"{path}: {where}: {first['msg']}") from None


@cache
def parts() -> PartsTable:
    """The shipped table, read once."""
    return load_parts()


def normalise_cpu(model: str) -> str:
    """A CPU model name as lscpu or Redfish prints it, reduced to its part number: lower case, no marks, no
    vendor, `CPU @ 3.60GHz`, `N-Core Processor` or `13th Gen` words."""
    text = re.sub(r"\((?:R|TM)\)|®|™", "", model, flags=re.I)
    text = re.sub(r"\b(?:Intel|AMD|CPU|Processor)\b|@.*$|\d+-Core|\b\d+(?:st|nd|rd|th) Gen\b", " ", text, flags=re.I)
    return " ".join(text.lower().split())


def _gpu_name(name: str) -> str:
    return " ".join(re.sub(r"^\s*NVIDIA\b", "", name, flags=re.I).lower().split())


def cpu_part(model: str, table: PartsTable | None = None) -> CpuPart | None:
    """The row whose part number the model name carries as a whole word (8592+ is not 18592+ nor 8592)."""
    name = normalise_cpu(model)
    rows = (table or parts()).cpus
    return next((p for p in rows if re.search(rf"(?<!\S){re.escape(p.key)}(?!\S)", name)), None)


def gpu_part(model: str, table: PartsTable | None = None) -> GpuPart | None:
    """The row one of whose names is the model (nvidia-smi's product name, with or without NVIDIA)."""
    wanted = _gpu_name(model)
    return next((g for g in (table or parts()).gpus if wanted in {_gpu_name(n) for n in g.names}), None)


def _differs(key: str, unit: str, profile: float, part: float, what: str, source: str) -> Finding:
    return Finding(Severity.FINDING, key, f"the profile says {profile:g}{unit}, the part ({what}) has {part:g}{unit} "
                   f"[{source}]")


def cpu_findings(spec: NodeSpec, part: CpuPart) -> list[Finding]:
    """Every CPU figure of the profile that differs from the part's data sheet (per socket)."""
    c = spec.cpu
    threads_per_socket = c.total_threads / c.sockets
    figures: list[tuple[str, str, float, float]] = [
        ("cpu.cores_per_socket", "", c.cores_per_socket, part.cores),
        ("cpu.threads", " threads per socket", threads_per_socket, part.threads),
        ("cpu.base_clock_ghz", " GHz base clock", c.base_clock_ghz, part.base_clock_ghz),
        ("cpu.l3_cache_mb_per_socket", " MB L3 per socket", c.l3_cache_mb_per_socket, part.l3_mb),
        ("cpu.pcie_lanes", " PCIe lanes per socket", c.pcie_lanes, part.pcie_lanes),
        ("cpu.pcie_generation", " (PCIe generation)", c.pcie_generation, part.pcie_generation),
    ]
    return [_differs(key, unit, mine, theirs, part.name, part.source)
            for key, unit, mine, theirs in figures if mine != theirs]


def gpu_findings(spec: NodeSpec, part: GpuPart) -> list[Finding]:
    """Every GPU figure the board cannot have: other memory, other bandwidth, a power limit above its highest."""
    g = spec.need_gpu()
    found = [_differs(key, unit, mine, theirs, part.name, part.source) for key, unit, mine, theirs in (
        ("gpu.memory_gb", " GB", g.memory_gb, part.memory_gb),
        ("gpu.memory_bandwidth_tbs", " TB/s", g.memory_bandwidth_tbs, part.memory_bandwidth_tbs),
        ("gpu.pcie.generation", " (PCIe generation)", g.pcie.generation, part.pcie_generation),
    ) if mine != theirs]
    if g.power_limit_w > part.max_power_w:
        found.append(Finding(Severity.FINDING, "gpu.power_limit_w", f"the profile says {g.power_limit_w} W, above "
                             f"the {part.max_power_w} W the part ({part.name}) takes at most [{part.source}]"))
    return found


def part_findings(spec: NodeSpec, table: PartsTable | None = None) -> list[Finding]:
    """The profile against its parts: findings where a figure differs, a warning for a part not in the table."""
    found: list[Finding] = []
    cpu = cpu_part(spec.cpu.model, table)
    if cpu is None:
        found.append(Finding(Severity.WARNING, "cpu.model", f"{spec.cpu.model!r} is not in the parts table "
                             f"({PARTS_FILE.name}): its figures are not judged"))
    else:
        found += cpu_findings(spec, cpu)
    if spec.gpu is not None:
        gpu = gpu_part(spec.gpu.model, table)
        if gpu is None:
            found.append(Finding(Severity.WARNING, "gpu.model", f"{spec.gpu.model!r} is not in the parts table "
                                 f"({PARTS_FILE.name}): its figures are not judged"))
        else:
            found += gpu_findings(spec, gpu)
    return found
