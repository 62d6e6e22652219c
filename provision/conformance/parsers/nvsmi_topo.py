"""`nvidia-smi topo -m`: the GPU/NIC connection matrix, affinities and the NIC legend.

The header row lists devices (GPU0.., NIC0..) then attribute columns (CPU Affinity, NUMA
Affinity, GPU NUMA ID). Cells are separated by tabs; the header is underlined with terminal
escapes, which we strip. NIC rows usually carry no attribute cells.
"""

from __future__ import annotations

import re

from provision.conformance.parsers._base import Model, fail, lines_of, present, strip_ansi, tool_parser

TOOL = "nvidia-smi topo -m"

_DEVICE = re.compile(r"^(GPU|NIC)\d+$")
_CONNECTION = re.compile(r"^(X|SYS|NODE|PHB|PXB|PIX|PSB|NV\d+|NVB|N/A)$")
_NIC_LEGEND = re.compile(r"^(NIC\d+): (\S+)$")


class TopoRow(Model):
    """One device's row: its connection to every device (same order as `devices`)."""

    device: str
    connections: tuple[str, ...]
    attributes: dict[str, str | None]


class TopoMatrix(Model):
    """The whole matrix."""

    devices: tuple[str, ...]
    rows: tuple[TopoRow, ...]
    nic_names: dict[str, str]

    def connection(self, a: str, b: str) -> str:
        """How device a reaches device b, e.g. "NV18", "PIX", "SYS"."""
        if a not in self.devices or b not in self.devices:
            fail(TOOL, f"no device {a if a not in self.devices else b!r} in the matrix")
        row = next(r for r in self.rows if r.device == a)
        return row.connections[self.devices.index(b)]

    def gpus(self) -> tuple[str, ...]:
        """Names of the GPU devices (GPU0, GPU1, ...)."""
        return tuple(d for d in self.devices if d.startswith("GPU"))


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("\t") if cell.strip()]


def _split(text: str) -> tuple[list[str], list[str]]:
    lines = [strip_ansi(line) for line in lines_of(text)]
    start = next((i for i, line in enumerate(lines) if line.strip()), None)
    if start is None:
        fail(TOOL, "empty output")
    end = next((i for i in range(start, len(lines)) if lines[i].strip().startswith("Legend")), None)
    if end is None:
        fail(TOOL, "no 'Legend:' section (truncated output?)")
    return [line for line in lines[start:end] if line.strip()], lines[end:]


def _row(line: str, devices: tuple[str, ...], attributes: tuple[str, ...]) -> TopoRow:
    cells = _cells(line)
    name, rest = cells[0], cells[1:]
    if name not in devices:
        fail(TOOL, f"row for unknown device {name!r}")
    links, extra = rest[: len(devices)], rest[len(devices) :]
    if len(links) != len(devices) or len(extra) > len(attributes):
        fail(TOOL, f"row {name} has {len(rest)} cells for {len(devices)} devices (truncated output?)")
    for cell in links:
        if not _CONNECTION.match(cell):
            fail(TOOL, f"row {name}: unknown connection type {cell!r}")
    if links[devices.index(name)] != "X":
        fail(TOOL, f"row {name}: diagonal is {links[devices.index(name)]!r}, expected 'X'")
    values = {attr: present(extra[i]) if i < len(extra) else None for i, attr in enumerate(attributes)}
    return TopoRow(device=name, connections=tuple(links), attributes=values)


@tool_parser(TOOL)
def parse_topo_matrix(text: str) -> TopoMatrix:
    """Parse `nvidia-smi topo -m`."""
    table, legend = _split(text)
    header = _cells(table[0])
    devices = tuple(c for c in header if _DEVICE.match(c))
    attributes = tuple(c for c in header if not _DEVICE.match(c))
    if not devices or header[: len(devices)] != list(devices):
        fail(TOOL, f"header {header} does not start with device columns")
    rows = tuple(_row(line, devices, attributes) for line in table[1:])
    if [r.device for r in rows] != list(devices):
        fail(TOOL, f"rows {[r.device for r in rows]} do not match columns {list(devices)} (truncated output?)")
    nic_names = {m[1]: m[2] for m in (_NIC_LEGEND.match(line.strip()) for line in legend) if m}
    missing = [d for d in devices if d.startswith("NIC") and d not in nic_names]
    if missing:
        fail(TOOL, f"NIC legend lacks {missing} (truncated output?)")
    return TopoMatrix(devices=devices, rows=rows, nic_names=nic_names)
