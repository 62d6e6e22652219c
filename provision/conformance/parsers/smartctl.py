"""`smartctl -a -j /dev/nvmeX` (smartmontools JSON) for NVMe devices."""

from __future__ import annotations

from provision.conformance.parsers._base import Model, fail, tool_parser
from provision.conformance.parsers._json import (
    load_object,
    opt_bool,
    opt_int,
    opt_obj,
    opt_str,
    req_int,
    req_str,
)

TOOL = "smartctl -a -j"


class SmartctlNvme(Model):
    """Identity and NVMe health of one device as smartctl reports it."""

    device: str
    protocol: str
    model_name: str
    serial_number: str
    firmware_version: str | None
    total_capacity_bytes: int | None
    smart_passed: bool | None
    exit_status: int
    critical_warning: int
    temperature_c: int
    available_spare_pct: int | None
    available_spare_threshold_pct: int | None
    percentage_used: int
    media_errors: int
    data_units_written: int | None
    """In NVMe data units of 512,000 bytes, as the health log counts them."""
    num_err_log_entries: int | None
    power_on_hours: int | None
    unsafe_shutdowns: int | None


@tool_parser(TOOL)
def parse_smartctl_nvme(text: str) -> SmartctlNvme:
    """Parse `smartctl -a -j` output for an NVMe device."""
    data = load_object(TOOL, text)
    tool_info = opt_obj(TOOL, data, "smartctl", "top level") or {}
    device = opt_obj(TOOL, data, "device", "top level")
    if device is None:
        fail(TOOL, "no 'device' object (smartctl could not open the device?)")
    protocol = req_str(TOOL, device, "protocol", "device")
    if protocol != "NVMe":
        fail(TOOL, f"device protocol is {protocol!r}, this parser reads NVMe output")
    health = opt_obj(TOOL, data, "nvme_smart_health_information_log", "top level")
    if health is None:
        fail(TOOL, "no 'nvme_smart_health_information_log' (run with -a)")
    what = "health log"
    status = opt_obj(TOOL, data, "smart_status", "top level") or {}
    return SmartctlNvme(
        device=req_str(TOOL, device, "name", "device"),
        protocol=protocol,
        model_name=req_str(TOOL, data, "model_name", "top level"),
        serial_number=req_str(TOOL, data, "serial_number", "top level"),
        firmware_version=opt_str(TOOL, data, "firmware_version", "top level"),
        total_capacity_bytes=opt_int(TOOL, data, "nvme_total_capacity", "top level"),
        smart_passed=opt_bool(TOOL, status, "passed", "smart_status"),
        exit_status=req_int(TOOL, tool_info, "exit_status", "smartctl"),
        critical_warning=req_int(TOOL, health, "critical_warning", what),
        temperature_c=req_int(TOOL, health, "temperature", what),
        available_spare_pct=opt_int(TOOL, health, "available_spare", what),
        available_spare_threshold_pct=opt_int(TOOL, health, "available_spare_threshold", what),
        percentage_used=req_int(TOOL, health, "percentage_used", what),
        media_errors=req_int(TOOL, health, "media_errors", what),
        data_units_written=opt_int(TOOL, health, "data_units_written", what),
        num_err_log_entries=opt_int(TOOL, health, "num_err_log_entries", what),
        power_on_hours=opt_int(TOOL, health, "power_on_hours", what),
        unsafe_shutdowns=opt_int(TOOL, health, "unsafe_shutdowns", what),
    )
