"""nvme-cli JSON: `nvme list -o json`, `nvme smart-log -o json`, `nvme id-ctrl -o json`.

Tested on real nvme-cli 2.3 output against qemu-emulated controllers and on an id-ctrl
capture from a Samsung 980 PRO. nvme-cli 2.x prints the 128-bit SMART counters (media_errors,
power_on_hours, ...) as decimal strings; 1.x printed integers: both are accepted.
"""

from __future__ import annotations

from provision.conformance.parsers._base import Model, fail, tool_parser
from provision.conformance.parsers._json import (
    JsonObject,
    load_object,
    opt_count,
    opt_int,
    opt_str,
    req_count,
    req_int,
    req_list,
    req_str,
)

TOOL_LIST = "nvme list -o json"
TOOL_SMART = "nvme smart-log -o json"
TOOL_ID_CTRL = "nvme id-ctrl -o json"

KELVIN = 273
# NVMe Base Specification, SMART / Health Information log (02h), byte 0 "Critical Warning": bit -> meaning.
CRITICAL_WARNING_BITS: dict[int, str] = {
    0: "available spare below its threshold",
    1: "temperature beyond a threshold",
    2: "NVM subsystem reliability degraded",
    3: "media placed in read-only mode",
    4: "volatile memory backup device failed",
    5: "persistent memory region read-only",
}
# NVMe Base Specification: Data Units Read/Written count thousands of 512-byte units (rounded up).
DATA_UNIT_BYTES = 512_000


class NvmeNamespace(Model):
    """One namespace block device of `nvme list`."""

    device_path: str
    model: str
    serial: str
    firmware: str | None
    namespace_id: int | None
    used_bytes: int | None
    physical_size: int | None
    sector_size: int | None


def _flat(device: JsonObject, n: int) -> NvmeNamespace:
    what = f"device {n}"
    return NvmeNamespace(
        device_path=req_str(TOOL_LIST, device, "DevicePath", what),
        model=req_str(TOOL_LIST, device, "ModelNumber", what),
        serial=req_str(TOOL_LIST, device, "SerialNumber", what),
        firmware=opt_str(TOOL_LIST, device, "Firmware", what),
        namespace_id=opt_int(TOOL_LIST, device, "NameSpace", what),
        used_bytes=opt_int(TOOL_LIST, device, "UsedBytes", what),
        physical_size=opt_int(TOOL_LIST, device, "PhysicalSize", what),
        sector_size=opt_int(TOOL_LIST, device, "SectorSize", what),
    )


def _verbose(device: JsonObject, n: int) -> list[NvmeNamespace]:
    """The `-v` layout: Devices > Subsystems > Controllers > Namespaces."""
    out = []
    for subsystem in req_list(TOOL_LIST, device, "Subsystems", f"device {n}"):
        for ctrl in req_list(TOOL_LIST, subsystem, "Controllers", f"device {n} subsystem"):
            what = f"controller {ctrl.get('Controller', '?')}"
            for ns in req_list(TOOL_LIST, ctrl, "Namespaces", what):
                out.append(
                    NvmeNamespace(
                        device_path="/dev/" + req_str(TOOL_LIST, ns, "NameSpace", what),
                        model=req_str(TOOL_LIST, ctrl, "ModelNumber", what),
                        serial=req_str(TOOL_LIST, ctrl, "SerialNumber", what),
                        firmware=opt_str(TOOL_LIST, ctrl, "Firmware", what),
                        namespace_id=opt_int(TOOL_LIST, ns, "NSID", what),
                        used_bytes=opt_int(TOOL_LIST, ns, "UsedBytes", what),
                        physical_size=opt_int(TOOL_LIST, ns, "PhysicalSize", what),
                        sector_size=opt_int(TOOL_LIST, ns, "SectorSize", what),
                    )
                )
    return out


@tool_parser(TOOL_LIST)
def parse_nvme_list(text: str) -> tuple[NvmeNamespace, ...]:
    """Parse `nvme list -o json` (plain or `-v` layout)."""
    devices = req_list(TOOL_LIST, load_object(TOOL_LIST, text), "Devices", "top level")
    result: list[NvmeNamespace] = []
    for n, device in enumerate(devices):
        result.extend(_verbose(device, n) if "Subsystems" in device else [_flat(device, n)])
    return tuple(result)


class NvmeSmartLog(Model):
    """The SMART / health log (log page 02h) of one controller."""

    critical_warning: int
    temperature_c: int
    available_spare_pct: int
    available_spare_threshold_pct: int | None
    percentage_used: int
    media_errors: int
    data_units_written: int | None
    """In data units of 512,000 bytes (NVMe spec); `written_bytes` gives bytes."""
    num_err_log_entries: int | None
    power_on_hours: int | None
    unsafe_shutdowns: int | None
    power_cycles: int | None

    @property
    def written_bytes(self) -> int | None:
        return None if self.data_units_written is None else self.data_units_written * DATA_UNIT_BYTES


def critical_warning_names(value: int) -> list[str]:
    """The meaning of each bit set in a Critical Warning byte (unknown bits named by number)."""
    names = [CRITICAL_WARNING_BITS.get(bit, f"reserved bit {bit}") for bit in range(8) if value >> bit & 1]
    return names


def _critical_warning(log: JsonObject) -> int:
    value = log.get("critical_warning")
    if isinstance(value, dict):  # newer nvme-cli: {"value": N, <bit flags>...}
        return req_int(TOOL_SMART, value, "value", "critical_warning")
    return req_int(TOOL_SMART, log, "critical_warning", "smart-log")


@tool_parser(TOOL_SMART)
def parse_nvme_smart_log(text: str) -> NvmeSmartLog:
    """Parse `nvme smart-log -o json` (temperature is reported in kelvin; we give Celsius)."""
    log = load_object(TOOL_SMART, text)
    what = "smart-log"
    kelvin = req_int(TOOL_SMART, log, "temperature", what)
    if kelvin < KELVIN - 60:
        fail(TOOL_SMART, f"temperature {kelvin} is not in kelvin")
    used = opt_int(TOOL_SMART, log, "percent_used", what)
    if used is None:
        used = req_int(TOOL_SMART, log, "percentage_used", what)
    return NvmeSmartLog(
        critical_warning=_critical_warning(log),
        temperature_c=kelvin - KELVIN,
        available_spare_pct=req_int(TOOL_SMART, log, "avail_spare", what),
        available_spare_threshold_pct=opt_int(TOOL_SMART, log, "spare_thresh", what),
        percentage_used=used,
        media_errors=req_count(TOOL_SMART, log, "media_errors", what),
        data_units_written=opt_count(TOOL_SMART, log, "data_units_written", what),
        num_err_log_entries=opt_count(TOOL_SMART, log, "num_err_log_entries", what),
        power_on_hours=opt_count(TOOL_SMART, log, "power_on_hours", what),
        unsafe_shutdowns=opt_count(TOOL_SMART, log, "unsafe_shutdowns", what),
        power_cycles=opt_count(TOOL_SMART, log, "power_cycles", what),
    )


class NvmeIdCtrl(Model):
    """The identify-controller fields we check."""

    model: str
    serial: str
    firmware: str
    total_capacity_bytes: int | None
    pci_vendor_id: int
    namespaces: int | None
    oacs: int | None = None
    """Optional Admin Command Support: bit 1 Format NVM."""
    fna: int | None = None
    """Format NVM Attributes: bit 2 crypto erase supported as part of a format's secure erase."""
    sanicap: int | None = None
    """Sanitize Capabilities: bit 0 crypto erase, bit 1 block erase, bit 2 overwrite."""


@tool_parser(TOOL_ID_CTRL)
def parse_nvme_id_ctrl(text: str) -> NvmeIdCtrl:
    """Parse `nvme id-ctrl -o json`."""
    ctrl = load_object(TOOL_ID_CTRL, text)
    what = "id-ctrl"
    return NvmeIdCtrl(
        model=req_str(TOOL_ID_CTRL, ctrl, "mn", what),
        serial=req_str(TOOL_ID_CTRL, ctrl, "sn", what),
        firmware=req_str(TOOL_ID_CTRL, ctrl, "fr", what),
        total_capacity_bytes=opt_count(TOOL_ID_CTRL, ctrl, "tnvmcap", what),
        pci_vendor_id=req_int(TOOL_ID_CTRL, ctrl, "vid", what),
        namespaces=opt_int(TOOL_ID_CTRL, ctrl, "nn", what),
        oacs=opt_int(TOOL_ID_CTRL, ctrl, "oacs", what),
        fna=opt_int(TOOL_ID_CTRL, ctrl, "fna", what),
        sanicap=opt_int(TOOL_ID_CTRL, ctrl, "sanicap", what),
    )
