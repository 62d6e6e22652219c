#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `smartctl` (smartmontools 7.3) for lab twins: -a/-x/-H/-i with -j on NVMe drives,
and --scan. JSON layout of the ironlib Dell R6515 capture (smartctl -a -j /dev/nvme0)."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate
import nvme


def status(h: dict[str, int]) -> int:
    """smartctl's exit status: bit 3 (8) when the health check says FAILING (an NVMe critical warning)."""
    return 8 if h["critical_warning"] else 0


def report(drive: dict[str, Any], dev: str, argv: list[str]) -> dict[str, Any]:
    h = nvme.health(drive)
    temp = h["temperature_k"] - 273
    now = int(time.time())
    return {
        "json_format_version": [1, 0],
        "smartctl": {"version": [7, 3], "svn_revision": "5338", "platform_info": "x86_64-linux-lab-stand-in",
                     "build_info": "(local build)", "argv": ["smartctl", *argv], "exit_status": status(h)},
        "local_time": {"time_t": now, "asctime": time.strftime("%a %b %d %H:%M:%S %Y UTC", time.gmtime(now))},
        "device": {"name": dev, "info_name": dev, "type": "nvme", "protocol": "NVMe"},
        "model_name": drive["model"], "serial_number": drive["serial"], "firmware_version": drive["firmware"],
        "nvme_pci_vendor": {"id": 5197, "subsystem_id": 5197}, "nvme_ieee_oui_identifier": 9528,
        "nvme_total_capacity": drive["size_bytes"], "nvme_unallocated_capacity": 0, "nvme_controller_id": 6,
        "nvme_version": {"string": "2.0", "value": 131584}, "nvme_number_of_namespaces": 1,
        "smart_support": {"available": True, "enabled": True},
        "smart_status": {"passed": not h["critical_warning"], "nvme": {"value": h["critical_warning"]}},
        "nvme_smart_health_information_log": {
            "critical_warning": h["critical_warning"], "temperature": temp, "available_spare": h["avail_spare"],
            "available_spare_threshold": h["spare_thresh"],
            "percentage_used": h["percent_used"], "data_units_read": h["data_units_read"],
            "data_units_written": h["data_units_written"], "host_reads": h["data_units_read"] * 11,
            "host_writes": h["data_units_written"] * 15, "controller_busy_time": 1943,
            "power_cycles": h["power_cycles"], "power_on_hours": h["power_on_hours"],
            "unsafe_shutdowns": h["unsafe_shutdowns"], "media_errors": h["media_errors"],
            "num_err_log_entries": h["media_errors"], "warning_temp_time": 0, "critical_comp_time": 0,
            "temperature_sensors": [temp, temp + 8],
        },
        "temperature": {"current": temp}, "power_cycle_count": h["power_cycles"],
        "power_on_time": {"hours": h["power_on_hours"]},
    }


def main(args: list[str]) -> int:
    hw = labstate.hardware()
    if "--scan" in args or "--scan-open" in args:
        sys.stdout.write("".join(f"/dev/{d['controller']} -d nvme # /dev/{d['controller']}, NVMe device\n"
                                 for d in labstate.present_drives(hw)))
        return 0
    devs = [a for a in args if a.startswith("/dev/")]
    if not devs:
        labstate.die("smartctl 7.3 (LAB STAND-IN): ERROR: smartctl takes ONE device name as the final"
                     " command-line argument.", 1)
    drive = labstate.find_drive(hw, devs[0])
    if drive is None or drive not in labstate.present_drives(hw):
        labstate.die(f"Smartctl open device: {devs[0]} failed: No such device", 2)
    data = report(drive, devs[0], args)
    if "-j" in args or "--json" in args or any(a.startswith("--json=") for a in args):
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return int(data["smartctl"]["exit_status"])
    log = data["nvme_smart_health_information_log"]
    sys.stdout.write(
        "smartctl 7.3 2022-02-28 r5338 [x86_64-linux] (LAB STAND-IN)\n\n=== START OF INFORMATION SECTION ===\n"
        f"Model Number:                       {drive['model']}\nSerial Number:                      {drive['serial']}\n"
        f"Firmware Version:                   {drive['firmware']}\n\n=== START OF SMART DATA SECTION ===\n"
        "SMART overall-health self-assessment test result: "
        f"{'FAILED!' if data['smartctl']['exit_status'] else 'PASSED'}\n\n"
        f"Percentage Used:                    {log['percentage_used']}%\n"
        f"Media and Data Integrity Errors:    {log['media_errors']}\n"
    )
    return int(data["smartctl"]["exit_status"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
