"""`nvidia-smi -q` (text) -> GpuQueryReport.

The report is an indentation tree of `Key : Value` lines and bare section headers. We build
the tree, then read the fields we check. Truncation is caught three ways: every GPU must carry
its required fields and end with its `Processes` entry, and the number of GPU blocks must
match `Attached GPUs`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from provision.conformance.parsers._base import (
    fail,
    lines_of,
    present,
    to_flag,
    to_int,
    tool_parser,
    unit_float,
    unit_int,
)
from provision.conformance.parsers.nvsmi_ecc import ecc_errors
from provision.conformance.parsers.nvsmi_models import (
    ClockEvents,
    EccErrors,
    FabricHealth,
    FabricInfo,
    GpuInfo,
    GpuQueryReport,
    PcieLink,
    RemappedRows,
    RetiredPages,
)

TOOL = "nvidia-smi -q"

_KV = re.compile(r"^(\S(?:.*?\S)?)\s*:(?:\s+(.*?))?\s*$")
_BANNER = re.compile(r"^=+.*=+$")
_BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")


@dataclass
class _Node:
    key: str
    value: str | None
    children: list[_Node] = field(default_factory=list)

    def find(self, *path: str) -> _Node | None:
        node: _Node | None = self
        for name in path:
            assert node is not None
            node = next((c for c in node.children if c.key == name), None)
            if node is None:
                return None
        return node

    def get(self, *path: str) -> str | None:
        node = self.find(*path)
        return None if node is None else node.value


def _build_tree(text: str) -> _Node:
    root = _Node("", None)
    stack: list[tuple[int, _Node]] = [(-1, root)]
    for raw in lines_of(text):
        line = raw.expandtabs(8)
        stripped = line.strip()
        if not stripped or _BANNER.match(stripped):
            continue
        indent = len(line) - len(line.lstrip(" "))
        match = _KV.match(stripped)
        node = _Node(match.group(1), match.group(2) or "") if match else _Node(stripped, None)
        while stack[-1][0] >= indent:
            stack.pop()
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return root


def _required(gpu: _Node, bus_id: str, *path: str) -> str:
    value = gpu.get(*path)
    if value is None:
        fail(TOOL, f"GPU {bus_id}: missing '{' > '.join(path)}' (truncated output?)")
    return value


def _pcie(gpu: _Node, bus_id: str) -> PcieLink:
    base = ("PCI", "GPU Link Info")
    what = f"GPU {bus_id} PCIe"
    return PcieLink(
        gen_current=to_int(TOOL, what, _required(gpu, bus_id, *base, "PCIe Generation", "Current")),
        gen_max=to_int(TOOL, what, _required(gpu, bus_id, *base, "PCIe Generation", "Max")),
        width_current=unit_int(TOOL, what, _required(gpu, bus_id, *base, "Link Width", "Current"), "x"),
        width_max=unit_int(TOOL, what, _required(gpu, bus_id, *base, "Link Width", "Max"), "x"),
    )


def _power(gpu: _Node, bus_id: str) -> tuple[float | None, float | None]:
    section = gpu.find("GPU Power Readings") or gpu.find("Power Readings")
    if section is None:
        fail(TOOL, f"GPU {bus_id}: missing 'GPU Power Readings' (truncated output?)")
    limit = next(
        (section.get(k) for k in ("Current Power Limit", "Enforced Power Limit", "Power Limit") if section.find(k)),
        None,
    )
    draw = next(
        (section.get(k) for k in ("Instantaneous Power Draw", "Power Draw", "Average Power Draw") if section.find(k)),
        None,
    )
    what = f"GPU {bus_id} power"
    return unit_float(TOOL, what, limit, "W"), unit_float(TOOL, what, draw, "W")


def _fabric(gpu: _Node) -> FabricInfo | None:
    node = gpu.find("Fabric")
    if node is None:
        return None
    health = node.find("Health")
    return FabricInfo(
        state=present(node.get("State")),
        status=present(node.get("Status")),
        clique_id=present(node.get("CliqueId")),
        cluster_uuid=present(node.get("ClusterUUID")),
        health=None
        if health is None
        else FabricHealth(
            summary=present(health.get("Summary")),
            bandwidth=present(health.get("Bandwidth")),
            route_recovery_in_progress=present(health.get("Route Recovery in progress")),
            route_unhealthy=present(health.get("Route Unhealthy")),
            access_timeout_recovery=present(health.get("Access Timeout Recovery")),
            incorrect_configuration=present(health.get("Incorrect Configuration")),
        ),
    )


def _retired(gpu: _Node, bus_id: str) -> RetiredPages | None:
    node = gpu.find("Retired Pages")
    if node is None or not node.children:
        return None
    what = f"GPU {bus_id} retired pages"
    pending = node.get("Pending Page Blacklist") or node.get("Pending Page Retirement")
    return RetiredPages(
        single_bit_ecc=to_int(TOOL, what, node.get("Single Bit ECC")),
        double_bit_ecc=to_int(TOOL, what, node.get("Double Bit ECC")),
        pending=to_flag(TOOL, what, pending),
    )


def _remapped(gpu: _Node, bus_id: str) -> RemappedRows | None:
    node = gpu.find("Remapped Rows")
    if node is None or not node.children:
        return None
    what = f"GPU {bus_id} remapped rows"
    return RemappedRows(
        correctable=to_int(TOOL, what, node.get("Correctable Error")),
        uncorrectable=to_int(TOOL, what, node.get("Uncorrectable Error")),
        pending=to_flag(TOOL, what, node.get("Pending")),
        failure_occurred=to_flag(TOOL, what, node.get("Remapping Failure Occurred")),
    )


# `Clocks Event Reasons` key -> ClockEvents field; HW Thermal / HW Power Brake sit under HW Slowdown.
_CLOCK_KEYS = {
    "Idle": "idle",
    "Applications Clocks Setting": "applications_clocks_setting",
    "SW Power Cap": "sw_power_cap",
    "HW Slowdown": "hw_slowdown",
    "HW Thermal Slowdown": "hw_thermal_slowdown",
    "HW Power Brake Slowdown": "hw_power_brake_slowdown",
    "Sync Boost": "sync_boost",
    "SW Thermal Slowdown": "sw_thermal_slowdown",
    "Display Clock Setting": "display_clock_setting",
}
_ACTIVE = {"Active": True, "Not Active": False}


def _walk(node: _Node) -> list[_Node]:
    found = []
    for child in node.children:
        found.append(child)
        found += _walk(child)
    return found


def _clock_events(gpu: _Node, bus_id: str) -> ClockEvents | None:
    node = gpu.find("Clocks Event Reasons") or gpu.find("Clocks Throttle Reasons")
    if node is None or not node.children:
        return None
    values: dict[str, bool | None] = {}
    for child in _walk(node):
        field = _CLOCK_KEYS.get(child.key)
        if field is None:
            continue
        value = present(child.value)
        if value is not None and value not in _ACTIVE:
            fail(TOOL, f"GPU {bus_id}: clocks event reason {child.key!r} is {value!r} (not Active/Not Active)")
        values[field] = None if value is None else _ACTIVE[value]
    if not values:
        fail(TOOL, f"GPU {bus_id}: '{node.key}' lists no known reason (truncated output?)")
    return ClockEvents(**values)


def _ecc_errors(gpu: _Node, bus_id: str) -> EccErrors | None:
    node = gpu.find("ECC Errors")
    if node is None or not node.children:
        return None
    return ecc_errors(TOOL, bus_id, _counters(node.find("Volatile")), _counters(node.find("Aggregate")))


def _counters(node: _Node | None) -> list[tuple[str, str | None]] | None:
    """Every `Key : value` line under `node` (SRAM, DRAM, ...), for nvsmi_ecc."""
    return None if node is None else [(child.key, child.value) for child in _walk(node)]


def _gpu(node: _Node) -> GpuInfo:
    bus_id = node.key[4:].strip()
    if not _BUS_ID.match(bus_id):
        fail(TOOL, f"GPU header {node.key!r} has no PCI bus id")
    if node.find("Processes") is None:  # every driver ends a GPU block with it
        fail(TOOL, f"GPU {bus_id}: block does not end with 'Processes' (truncated output?)")
    uuid = _required(node, bus_id, "GPU UUID")
    if not uuid.startswith("GPU-"):
        fail(TOOL, f"GPU {bus_id}: UUID {uuid!r} does not start with 'GPU-'")
    what = f"GPU {bus_id}"
    power_limit, power_draw = _power(node, bus_id)
    return GpuInfo(
        bus_id=bus_id,
        product_name=_required(node, bus_id, "Product Name"),
        serial=present(node.get("Serial Number")),
        uuid=uuid,
        vbios_version=_required(node, bus_id, "VBIOS Version"),
        persistence_mode=to_flag(TOOL, what, _required(node, bus_id, "Persistence Mode")),
        mig_mode_current=to_flag(TOOL, what, node.get("MIG Mode", "Current")),
        mig_mode_pending=to_flag(TOOL, what, node.get("MIG Mode", "Pending")),
        mig_device_count=sum(1 for c in node.children if c.key == "MIG Device"),
        ecc_mode_current=to_flag(TOOL, what, _required(node, bus_id, "ECC Mode", "Current")),
        ecc_mode_pending=to_flag(TOOL, what, _required(node, bus_id, "ECC Mode", "Pending")),
        fb_memory_total_mib=_fb_total(node, bus_id),
        pcie=_pcie(node, bus_id),
        power_limit_w=power_limit,
        power_draw_w=power_draw,
        temperature_gpu_c=unit_int(TOOL, what, _required(node, bus_id, "Temperature", "GPU Current Temp"), "C"),
        temperature_memory_c=unit_int(TOOL, what, node.get("Temperature", "Memory Current Temp"), "C"),
        module_id=to_int(TOOL, what, node.get("Module ID") or node.get("Platform Info", "Module Id")),
        fabric=_fabric(node),
        retired_pages=_retired(node, bus_id),
        remapped_rows=_remapped(node, bus_id),
        clock_events=_clock_events(node, bus_id),
        ecc_errors=_ecc_errors(node, bus_id),
        performance_state=present(node.get("Performance State")),
    )


def _fb_total(node: _Node, bus_id: str) -> int:
    total = unit_int(TOOL, f"GPU {bus_id} FB memory", _required(node, bus_id, "FB Memory Usage", "Total"), "MiB")
    if total is None:
        fail(TOOL, f"GPU {bus_id}: FB memory total is N/A")
    return total


@tool_parser(TOOL)
def parse_nvidia_smi_query(text: str, *, expect_all: bool = True) -> GpuQueryReport:
    """Parse `nvidia-smi -q`. With expect_all (default) every attached GPU must be present."""
    root = _build_tree(text)
    driver = present(root.get("Driver Version"))
    if driver is None:
        fail(TOOL, "no 'Driver Version' line: not nvidia-smi -q output")
    attached = to_int(TOOL, "Attached GPUs", root.get("Attached GPUs"))
    if attached is None:
        fail(TOOL, "no 'Attached GPUs' line")
    gpus = tuple(_gpu(n) for n in root.children if n.value is None and n.key.startswith("GPU "))
    if not gpus:
        fail(TOOL, f"'Attached GPUs : {attached}' but no GPU block")
    if expect_all and len(gpus) != attached:
        fail(TOOL, f"'Attached GPUs : {attached}' but {len(gpus)} GPU block(s) (truncated output?)")
    return GpuQueryReport(
        timestamp=present(root.get("Timestamp")),
        driver_version=driver,
        cuda_version=present(root.get("CUDA Version")),
        attached_gpus=attached,
        gpus=gpus,
    )
