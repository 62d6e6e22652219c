"""Plain `nvidia-smi` (the default table): versions and one block of 2-3 lines per GPU."""

from __future__ import annotations

import re

from provision.conformance.parsers._base import (
    Model,
    fail,
    lines_of,
    present,
    to_flag,
    tool_parser,
    unit_float,
    unit_int,
)

TOOL = "nvidia-smi"

_VERSIONS = re.compile(r"NVIDIA-SMI (?P<smi>\S+)\s+Driver Version: (?P<driver>\S+)\s+CUDA Version: (?P<cuda>\S+)")
_ROW1 = re.compile(
    r"^\|\s*(?P<index>\d+)\s+(?P<name>.+?)\s+(?P<persist>On|Off)\s*\|"
    r"\s*(?P<bus>[0-9A-Fa-f:.]+)\s+(?P<disp>On|Off)\s*\|\s*(?P<ecc>.*?)\s*\|$"
)
_ROW2 = re.compile(
    r"^\|\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<pwr>\S+)\s*/\s*(?P<cap>\S+)\s*\|"
    r"\s*(?P<used>\S+)\s*/\s*(?P<total>\S+)\s*\|\s*(?P<util>\S+)\s+(?P<compute>.*?)\s*\|$"
)
_ROW3 = re.compile(r"^\|\s*\|\s*\|\s*(?P<mig>.*?)\s*\|$")


class TableGpu(Model):
    """One GPU block of the table."""

    index: int
    name: str
    persistence_mode: bool | None
    bus_id: str
    display_active: bool | None
    volatile_uncorrected_ecc: str | None
    fan_pct: int | None
    temperature_c: int | None
    performance_state: str | None
    power_draw_w: float | None
    power_cap_w: float | None
    memory_used_mib: int | None
    memory_total_mib: int | None
    gpu_util_pct: int | None
    compute_mode: str | None
    mig_mode: str | None


class SmiTable(Model):
    """The whole table (process and MIG-device sections are not parsed)."""

    smi_version: str
    driver_version: str
    cuda_version: str | None
    gpus: tuple[TableGpu, ...]


def _gpu(lines: list[str], start: int) -> TableGpu:
    first = _ROW1.match(lines[start])
    second = _ROW2.match(lines[start + 1]) if start + 1 < len(lines) else None
    if first is None or second is None:
        fail(TOOL, f"GPU block at line {start + 1} is incomplete (truncated output?)")
    third = _ROW3.match(lines[start + 2]) if start + 2 < len(lines) else None
    what = f"GPU {first['index']}"
    return TableGpu(
        index=int(first["index"]),
        name=first["name"],
        persistence_mode=to_flag(TOOL, what, first["persist"]),
        bus_id=first["bus"],
        display_active=to_flag(TOOL, what, first["disp"]),
        volatile_uncorrected_ecc=present(first["ecc"]),
        fan_pct=unit_int(TOOL, what, second["fan"], "%"),
        temperature_c=unit_int(TOOL, what, second["temp"], "C"),
        performance_state=present(second["perf"]),
        power_draw_w=unit_float(TOOL, what, second["pwr"], "W"),
        power_cap_w=unit_float(TOOL, what, second["cap"], "W"),
        memory_used_mib=unit_int(TOOL, what, second["used"], "MiB"),
        memory_total_mib=unit_int(TOOL, what, second["total"], "MiB"),
        gpu_util_pct=unit_int(TOOL, what, second["util"], "%"),
        compute_mode=present(second["compute"]),
        mig_mode=present(third["mig"]) if third else None,
    )


def _gpu_section(lines: list[str]) -> tuple[list[str], int]:
    header = next((i for i, line in enumerate(lines) if line.startswith("|=") and "+" in line), None)
    if header is None:
        fail(TOOL, "no GPU table header (not nvidia-smi output?)")
    end = next((i for i in range(header + 1, len(lines)) if not lines[i].startswith(("|", "+"))), len(lines))
    section = lines[header + 1 : end]
    if not section or not section[-1].startswith("+"):
        fail(TOOL, "GPU table is not closed by a border line (truncated output?)")
    return section, header


@tool_parser(TOOL)
def parse_nvidia_smi_table(text: str) -> SmiTable:
    """Parse the default `nvidia-smi` table."""
    lines = [line.strip() for line in lines_of(text)]
    versions = next((m for m in map(_VERSIONS.search, lines) if m), None)
    if versions is None:
        fail(TOOL, "no 'NVIDIA-SMI ... Driver Version ... CUDA Version' banner")
    section, header = _gpu_section(lines)
    processes = next((i for i in range(header, len(lines)) if lines[i].startswith("| Processes:")), None)
    if processes is None:
        fail(TOOL, "no 'Processes:' section after the GPU table (truncated output?)")
    tail = [line for line in lines[processes:] if line]
    if not (tail[-1].startswith("+") and tail[-1].endswith("+")):
        fail(TOOL, "the Processes table is not closed by a border line (truncated output?)")
    starts = [i for i, line in enumerate(section) if re.match(r"^\|\s*\d+\s", line)]
    if not starts:
        fail(TOOL, "GPU table has no GPU rows")
    gpus = tuple(_gpu(section, i) for i in starts)
    indices = [g.index for g in gpus]
    if indices != list(range(len(indices))):
        fail(TOOL, f"GPU indices {indices} are not 0..{len(indices) - 1}")
    return SmiTable(
        smi_version=versions["smi"],
        driver_version=versions["driver"],
        cuda_version=present(versions["cuda"]),
        gpus=gpus,
    )
