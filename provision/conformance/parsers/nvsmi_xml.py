"""`nvidia-smi -q -x` (XML, nvsmi_device_v11/v12 DTD) -> GpuQueryReport.

XML truncation shows up as malformed XML; the GPU count is still checked against
<attached_gpus>. Entity declarations are refused (no entity expansion from tool output).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from provision.conformance.parsers._base import (
    fail,
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

TOOL = "nvidia-smi -q -x"

_BUS_ID = re.compile(r"^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")


def _text(elem: ET.Element, path: str) -> str | None:
    found = elem.find(path)
    if found is None:
        return None
    return (found.text or "").strip()


def _required(gpu: ET.Element, bus_id: str, path: str) -> str:
    value = _text(gpu, path)
    if value is None:
        fail(TOOL, f"GPU {bus_id}: missing <{path}>")
    return value


def _pcie(gpu: ET.Element, bus_id: str) -> PcieLink:
    base = "pci/pci_gpu_link_info"
    what = f"GPU {bus_id} PCIe"
    return PcieLink(
        gen_current=to_int(TOOL, what, _required(gpu, bus_id, f"{base}/pcie_gen/current_link_gen")),
        gen_max=to_int(TOOL, what, _required(gpu, bus_id, f"{base}/pcie_gen/max_link_gen")),
        width_current=unit_int(TOOL, what, _required(gpu, bus_id, f"{base}/link_widths/current_link_width"), "x"),
        width_max=unit_int(TOOL, what, _required(gpu, bus_id, f"{base}/link_widths/max_link_width"), "x"),
    )


def _power(gpu: ET.Element, bus_id: str) -> tuple[float | None, float | None]:
    section = gpu.find("gpu_power_readings")
    if section is None:
        section = gpu.find("power_readings")
    if section is None:
        fail(TOOL, f"GPU {bus_id}: missing <gpu_power_readings>")
    limit = next(
        (
            _text(section, k)
            for k in ("current_power_limit", "enforced_power_limit", "power_limit")
            if section.find(k) is not None
        ),
        None,
    )
    draw = next(
        (
            _text(section, k)
            for k in ("instant_power_draw", "power_draw", "average_power_draw")
            if section.find(k) is not None
        ),
        None,
    )
    what = f"GPU {bus_id} power"
    return unit_float(TOOL, what, limit, "W"), unit_float(TOOL, what, draw, "W")


def _fabric(gpu: ET.Element) -> FabricInfo | None:
    node = gpu.find("fabric")
    if node is None:
        return None
    health = node.find("health")
    return FabricInfo(
        state=present(_text(node, "state")),
        status=present(_text(node, "status")),
        clique_id=present(_text(node, "cliqueId")),
        cluster_uuid=present(_text(node, "clusterUuid")),
        health=None
        if health is None
        else FabricHealth(
            summary=present(_text(health, "summary")),
            bandwidth=present(_text(health, "bandwidth")),
            route_recovery_in_progress=present(_text(health, "route_recovery_in_progress")),
            route_unhealthy=present(_text(health, "route_unhealthy")),
            access_timeout_recovery=present(_text(health, "access_timeout_recovery")),
            incorrect_configuration=present(_text(health, "incorrect_configuration")),
        ),
    )


def _retired(gpu: ET.Element, bus_id: str) -> RetiredPages | None:
    node = gpu.find("retired_pages")
    if node is None or len(node) == 0:
        return None
    what = f"GPU {bus_id} retired pages"
    pending = _text(node, "pending_retirement") or _text(node, "pending_blacklist")
    return RetiredPages(
        single_bit_ecc=to_int(TOOL, what, _text(node, "multiple_single_bit_retirement/retired_count")),
        double_bit_ecc=to_int(TOOL, what, _text(node, "double_bit_retirement/retired_count")),
        pending=to_flag(TOOL, what, pending),
    )


def _remapped(gpu: ET.Element, bus_id: str) -> RemappedRows | None:
    node = gpu.find("remapped_rows")
    if node is None or len(node) == 0:
        return None
    what = f"GPU {bus_id} remapped rows"
    return RemappedRows(
        correctable=to_int(TOOL, what, _text(node, "remapped_row_corr")),
        uncorrectable=to_int(TOOL, what, _text(node, "remapped_row_unc")),
        pending=to_flag(TOOL, what, _text(node, "remapped_row_pending")),
        failure_occurred=to_flag(TOOL, what, _text(node, "remapped_row_failure")),
    )


# <clocks_event_reason_X> (drivers >= 535; <clocks_throttle_reason_X> before) -> ClockEvents field.
_XML_REASONS = {
    "gpu_idle": "idle", "applications_clocks_setting": "applications_clocks_setting",
    "sw_power_cap": "sw_power_cap", "hw_slowdown": "hw_slowdown", "hw_thermal_slowdown": "hw_thermal_slowdown",
    "hw_power_brake_slowdown": "hw_power_brake_slowdown", "sync_boost": "sync_boost",
    "sw_thermal_slowdown": "sw_thermal_slowdown", "display_clocks_setting": "display_clock_setting",
}  # fmt: skip
_ACTIVE = {"Active": True, "Not Active": False}


def _clock_events(gpu: ET.Element, bus_id: str) -> ClockEvents | None:
    for section, prefix in (("clocks_event_reasons", "clocks_event_reason_"),
                            ("clocks_throttle_reasons", "clocks_throttle_reason_")):
        node = gpu.find(section)
        if node is None:
            continue
        values: dict[str, bool | None] = {}
        for child in node:
            field = _XML_REASONS.get(child.tag.removeprefix(prefix))
            value = present((child.text or "").strip())
            if field is None:
                continue
            if value is not None and value not in _ACTIVE:
                fail(TOOL, f"GPU {bus_id}: <{child.tag}> is {value!r} (not Active/Not Active)")
            values[field] = None if value is None else _ACTIVE[value]
        return ClockEvents(**values) if values else None
    return None


def _ecc_errors(gpu: ET.Element, bus_id: str) -> EccErrors | None:
    node = gpu.find("ecc_errors")
    if node is None:
        return None
    return ecc_errors(TOOL, bus_id, _counters(node.find("volatile")), _counters(node.find("aggregate")))


def _counters(node: ET.Element | None) -> list[tuple[str, str | None]] | None:
    """Every leaf element under `node` (<sram_correctable>, ...) as (tag, text), for nvsmi_ecc."""
    if node is None:
        return None
    return [(child.tag, (child.text or "").strip()) for child in node.iter() if child is not node and not len(child)]


def _gpu(gpu: ET.Element) -> GpuInfo:
    bus_id = gpu.get("id") or _text(gpu, "pci/pci_bus_id") or ""
    if not _BUS_ID.match(bus_id):
        fail(TOOL, f"<gpu id={bus_id!r}> is not a PCI bus id")
    uuid = _required(gpu, bus_id, "uuid")
    if not uuid.startswith("GPU-"):
        fail(TOOL, f"GPU {bus_id}: UUID {uuid!r} does not start with 'GPU-'")
    what = f"GPU {bus_id}"
    fb_total = unit_int(TOOL, what, _required(gpu, bus_id, "fb_memory_usage/total"), "MiB")
    if fb_total is None:
        fail(TOOL, f"GPU {bus_id}: FB memory total is N/A")
    mig_devices = gpu.find("mig_devices")
    power_limit, power_draw = _power(gpu, bus_id)
    return GpuInfo(
        bus_id=bus_id,
        product_name=_required(gpu, bus_id, "product_name"),
        serial=present(_text(gpu, "serial")),
        uuid=uuid,
        vbios_version=_required(gpu, bus_id, "vbios_version"),
        persistence_mode=to_flag(TOOL, what, _required(gpu, bus_id, "persistence_mode")),
        mig_mode_current=to_flag(TOOL, what, _text(gpu, "mig_mode/current_mig")),
        mig_mode_pending=to_flag(TOOL, what, _text(gpu, "mig_mode/pending_mig")),
        mig_device_count=0 if mig_devices is None else len(mig_devices.findall("mig_device")),
        ecc_mode_current=to_flag(TOOL, what, _required(gpu, bus_id, "ecc_mode/current_ecc")),
        ecc_mode_pending=to_flag(TOOL, what, _required(gpu, bus_id, "ecc_mode/pending_ecc")),
        fb_memory_total_mib=fb_total,
        pcie=_pcie(gpu, bus_id),
        power_limit_w=power_limit,
        power_draw_w=power_draw,
        temperature_gpu_c=unit_int(TOOL, what, _required(gpu, bus_id, "temperature/gpu_temp"), "C"),
        temperature_memory_c=unit_int(TOOL, what, _text(gpu, "temperature/memory_temp"), "C"),
        module_id=to_int(TOOL, what, _text(gpu, "gpu_module_id") or _text(gpu, "platformInfo/moduleId")),
        fabric=_fabric(gpu),
        retired_pages=_retired(gpu, bus_id),
        remapped_rows=_remapped(gpu, bus_id),
        clock_events=_clock_events(gpu, bus_id),
        ecc_errors=_ecc_errors(gpu, bus_id),
        performance_state=present(_text(gpu, "performance_state")),
    )


@tool_parser(TOOL)
def parse_nvidia_smi_xml(text: str, *, expect_all: bool = True) -> GpuQueryReport:
    """Parse `nvidia-smi -q -x`. With expect_all (default) every attached GPU must be present."""
    if "<!ENTITY" in text:
        fail(TOOL, "refusing XML with entity declarations")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        fail(TOOL, f"malformed XML (truncated output?): {exc}")
    if root.tag != "nvidia_smi_log":
        fail(TOOL, f"root element is <{root.tag}>, expected <nvidia_smi_log>")
    driver = present(_text(root, "driver_version"))
    if driver is None:
        fail(TOOL, "no <driver_version>")
    attached = to_int(TOOL, "attached_gpus", _text(root, "attached_gpus"))
    if attached is None:
        fail(TOOL, "no <attached_gpus>")
    gpus = tuple(_gpu(g) for g in root.findall("gpu"))
    if not gpus:
        fail(TOOL, f"<attached_gpus>{attached}</attached_gpus> but no <gpu> element")
    if expect_all and len(gpus) != attached:
        fail(TOOL, f"<attached_gpus>{attached}</attached_gpus> but {len(gpus)} <gpu> element(s)")
    return GpuQueryReport(
        timestamp=present(_text(root, "timestamp")),
        driver_version=driver,
        cuda_version=present(_text(root, "cuda_version")),
        attached_gpus=attached,
        gpus=gpus,
    )
