"""`nvidia-smi nvlink -e` (NVLink error counters) -> one NvlinkErrors per GPU.

Written from NVIDIA's documented format (`nvidia-smi nvlink -h`: "-e | --errorcounters: Display error
counters for a link"); no real capture of this output was available: each GPU line as in `nvlink -s`,
then one `Link N: <counter>: <count>` line per counter and link (Replay Errors, Recovery Errors, CRC
Errors on the drivers documented; other counter names are kept as printed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from provision.conformance.parsers._base import Model, fail, lines_of, to_int, tool_parser
from provision.conformance.parsers.nvsmi_list import _GPU, _check_indices

TOOL = "nvidia-smi nvlink -e"

_COUNTER = re.compile(r"^Link (?P<link>\d+): (?P<name>[A-Za-z][A-Za-z0-9 ()/_-]*?)\s*:\s*(?P<value>\S.*)$")


class NvlinkCounter(Model):
    """One error counter of one link; count None = N/A."""

    link: int
    name: str
    count: int | None


class NvlinkErrors(Model):
    """The error counters of one GPU's NVLinks."""

    index: int
    name: str
    uuid: str
    counters: tuple[NvlinkCounter, ...]
    note: str | None = None

    def total(self, counter: str) -> int:
        """Sum of a counter over every link (N/A counts 0)."""
        return sum(c.count or 0 for c in self.counters if c.name == counter)


@dataclass
class _Block:
    """One GPU's lines while they are read."""

    index: int
    name: str
    uuid: str
    counters: list[NvlinkCounter] = field(default_factory=list)
    note: str | None = None


@tool_parser(TOOL)
def parse_nvlink_errors(text: str) -> tuple[NvlinkErrors, ...]:
    """Parse `nvidia-smi nvlink -e`; a GPU without NVLink carries the note the tool prints instead."""
    blocks: list[_Block] = []  # built into models once at the end: a copy per counter line costs O(lines^2)
    for line in (raw.strip() for raw in lines_of(text)):
        if not line:
            continue
        header = _GPU.match(line)
        if header:
            blocks.append(_Block(int(header["index"]), header["name"], header["uuid"]))
            continue
        if not blocks:
            fail(TOOL, f"unexpected line {line[:120]!r}")
        counter = _COUNTER.match(line)
        last = blocks[-1]
        if counter is None:
            if last.counters or last.note is not None:
                fail(TOOL, f"GPU {last.index}: unexpected line {line[:120]!r}")
            last.note = line
            continue
        value = to_int(TOOL, f"GPU {last.index} link {counter['link']} {counter['name']}", counter["value"])
        last.counters.append(NvlinkCounter(link=int(counter["link"]), name=counter["name"], count=value))
    gpus = [NvlinkErrors(index=b.index, name=b.name, uuid=b.uuid, counters=tuple(b.counters), note=b.note)
            for b in blocks]
    if not gpus:
        fail(TOOL, "no GPU lines")
    _check_indices(TOOL, [g.index for g in gpus])
    for gpu in gpus:
        if not gpu.counters and gpu.note is None:
            fail(TOOL, f"GPU {gpu.index} has neither counters nor a note (truncated output?)")
    return tuple(gpus)
