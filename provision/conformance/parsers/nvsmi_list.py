"""`nvidia-smi -L` and `nvidia-smi nvlink -s`: one line per GPU, then indented detail lines."""

from __future__ import annotations

import re

from provision.conformance.parsers._base import Model, fail, lines_of, tool_parser, unit_float

TOOL_LIST = "nvidia-smi -L"
TOOL_NVLINK = "nvidia-smi nvlink -s"

_GPU = re.compile(r"^GPU (?P<index>\d+): (?P<name>.+?) \(UUID: (?P<uuid>GPU-[^)\s]+)\)$")
_MIG = re.compile(r"^MIG (?P<profile>\S+)\s+Device\s+(?P<index>\d+): \(UUID: (?P<uuid>MIG-[^)\s]+)\)$")
_LINK = re.compile(r"^Link (?P<link>\d+): (?P<speed>.+)$")
_NO_DEVICES = "No devices were found"


class MigDeviceEntry(Model):
    """A MIG device line of `nvidia-smi -L`."""

    profile: str
    index: int
    uuid: str


class GpuListEntry(Model):
    """A GPU line of `nvidia-smi -L`, with its MIG devices if any."""

    index: int
    name: str
    uuid: str
    mig_devices: tuple[MigDeviceEntry, ...] = ()


class NvlinkLink(Model):
    """One NVLink of one GPU: speed in GB/s, or inactive."""

    link: int
    active: bool
    speed_gbps: float | None


class NvlinkGpu(Model):
    """One GPU of `nvidia-smi nvlink -s` with its links, or the note printed instead."""

    index: int
    name: str
    uuid: str
    links: tuple[NvlinkLink, ...]
    note: str | None = None

    @property
    def active_links(self) -> tuple[NvlinkLink, ...]:
        """The links that are up."""
        return tuple(link for link in self.links if link.active)


def _gpu_header(tool: str, line: str) -> re.Match[str]:
    match = _GPU.match(line)
    if not match:
        fail(tool, f"unexpected line {line[:120]!r}")
    return match


@tool_parser(TOOL_LIST)
def parse_nvidia_smi_list(text: str) -> tuple[GpuListEntry, ...]:
    """Parse `nvidia-smi -L`; the explicit "No devices were found" gives an empty tuple."""
    lines = [line.strip() for line in lines_of(text) if line.strip()]
    if lines == [_NO_DEVICES]:
        return ()
    gpus: list[GpuListEntry] = []
    for line in lines:
        mig = _MIG.match(line)
        if mig:
            if not gpus:
                fail(TOOL_LIST, "MIG device line before any GPU line")
            entry = MigDeviceEntry(profile=mig["profile"], index=int(mig["index"]), uuid=mig["uuid"])
            last = gpus[-1]
            gpus[-1] = last.model_copy(update={"mig_devices": (*last.mig_devices, entry)})
            continue
        match = _gpu_header(TOOL_LIST, line)
        gpus.append(GpuListEntry(index=int(match["index"]), name=match["name"], uuid=match["uuid"]))
    _check_indices(TOOL_LIST, [g.index for g in gpus])
    return tuple(gpus)


def _check_indices(tool: str, indices: list[int]) -> None:
    if indices != list(range(len(indices))):
        fail(tool, f"GPU indices {indices} are not 0..{len(indices) - 1} in order")


def _link(line: str) -> NvlinkLink | None:
    match = _LINK.match(line)
    if not match:
        return None
    speed = match["speed"].strip()
    if speed.lower() == "<inactive>":
        return NvlinkLink(link=int(match["link"]), active=False, speed_gbps=None)
    value = unit_float(TOOL_NVLINK, f"link {match['link']}", speed, "GB/s")
    return NvlinkLink(link=int(match["link"]), active=True, speed_gbps=value)


@tool_parser(TOOL_NVLINK)
def parse_nvlink_status(text: str) -> tuple[NvlinkGpu, ...]:
    """Parse `nvidia-smi nvlink -s` (a.k.a. --status)."""
    blocks: list[tuple[NvlinkGpu, list[NvlinkLink]]] = []  # links added at the end: a copy per line is O(n^2)
    for line in (raw.strip() for raw in lines_of(text)):
        if not line:
            continue
        link = _link(line)
        if link is None and _GPU.match(line) is None and blocks and not blocks[-1][1] and blocks[-1][0].note is None:
            blocks[-1] = (blocks[-1][0].model_copy(update={"note": line}), blocks[-1][1])
            continue
        if link is not None:
            if not blocks or blocks[-1][0].note is not None:
                fail(TOOL_NVLINK, f"link line outside a GPU block: {line!r}")
            blocks[-1][1].append(link)
            continue
        match = _gpu_header(TOOL_NVLINK, line)
        blocks.append((NvlinkGpu(index=int(match["index"]), name=match["name"], uuid=match["uuid"], links=()), []))
    gpus = [gpu.model_copy(update={"links": tuple(links)}) if links else gpu for gpu, links in blocks]
    if not gpus:
        fail(TOOL_NVLINK, "no GPU lines")
    _check_indices(TOOL_NVLINK, [g.index for g in gpus])
    for gpu in gpus:
        _check_links(gpu)
    return tuple(gpus)


def _check_links(gpu: NvlinkGpu) -> None:
    if not gpu.links and gpu.note is None:
        fail(TOOL_NVLINK, f"GPU {gpu.index} has neither links nor a note (truncated output?)")
    numbers = [link.link for link in gpu.links]
    if numbers != list(range(len(numbers))):
        fail(TOOL_NVLINK, f"GPU {gpu.index}: link numbers {numbers} are not 0..{len(numbers) - 1}")
