#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `nvme` (nvme-cli 2.x) for lab twins: list [-o json], smart-log DEV [-o json],
id-ctrl DEV [-o json], sanitize CTRL --sanact=N, sanitize-log CTRL [-o json], format NS --ses=N.
Drives come from hardware.json; faults: scratch_drive_missing, nvme_wearing_out, nvme_worn (written past a
1 DWPD / 5 year rating of its capacity), nvme_spare_low (available spare below its threshold, critical
warning bit 0), nvme_sanitize_fails (the drive accepts a sanitize, its log then says it failed, its data
stays), nvme_no_erase (the drive lists no sanitize and no Format NVM).

SIMULATED erase: every drive lists crypto and block erase sanitize (SANICAP 0x3), Format NVM (OACS bit 1) and
crypto erase in a format (FNA bit 2). A sanitize or a format zeroes the drive's backing file (lab_devices.py)
at once and the sanitize log says completed; each erase is counted in nvme-erase.json (for the lab tests)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate


def _json(args: list[str]) -> bool:
    return any(a in ("-o", "--output-format") and i + 1 < len(args) and args[i + 1] == "json"
               for i, a in enumerate(args)) or "--output-format=json" in args or "-ojson" in args


def _hit(kind: str, drive: dict[str, Any]) -> dict[str, Any] | None:
    params = labstate.fault(kind)
    return params if params is not None and params.get("drive") == drive["name"] else None


def health(drive: dict[str, Any]) -> dict[str, int]:
    """SMART figures of a drive (deterministic; the nvme faults change the drive they name)."""
    n = int(drive["name"][4:].split("n")[0])
    wear, worn, spare = _hit("nvme_wearing_out", drive), _hit("nvme_worn", drive), _hit("nvme_spare_low", drive)
    used = int(wear["percentage_used"]) if wear else int(worn["percentage_used"]) if worn else 1 + n % 3
    # NVMe data units are 512,000 bytes; nvme_worn: `written_pct` percent of 1 DWPD x capacity x 5 years
    written = (int(drive["size_bytes"]) * 365 * 5 * int(worn["written_pct"]) // 100 // 512_000 if worn
               else 31_554_310 + 1_000 * n)
    return {
        "percent_used": used,
        "media_errors": int(wear["media_errors"]) if wear else 0,
        "temperature_k": 307 + n % 5,
        "power_on_hours": 2100 + 37 * n,
        "power_cycles": 18 + n,
        "unsafe_shutdowns": 3 + n % 4,
        "data_units_read": 40_113_218 + 1_000 * n,
        "data_units_written": written,
        "avail_spare": int(spare["avail_spare"]) if spare else 100,
        "spare_thresh": 10,
        # critical warning bit 0: available spare below its threshold (NVMe spec, SMART log byte 0)
        "critical_warning": 0x01 if spare else 0,
    }


def dumps(data: dict[str, Any]) -> str:
    """nvme-cli's JSON style: two-space indent, no space after the colon."""
    return json.dumps(data, indent=2, separators=(",", ":")) + "\n"


# nvme-cli 2.x prints the 128-bit SMART counters as strings
_WIDE = ("data_units_read", "data_units_written", "host_read_commands", "host_write_commands",
         "controller_busy_time", "power_cycles", "power_on_hours", "unsafe_shutdowns", "media_errors",
         "num_err_log_entries")


def _drive_or_die(hw: dict[str, Any], dev: str) -> dict[str, Any]:
    drive = labstate.find_drive(hw, dev)
    if drive is None or drive not in labstate.present_drives(hw):
        labstate.die(f"Failed to open {dev}: No such file or directory", 1)
    return drive


def _units(n: int) -> str:
    for unit, div in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= div:
            return f"{n / div:6.2f}  {unit}"
    return f"{n:6d}   B"


def cmd_list(hw: dict[str, Any], as_json: bool) -> str:
    drives = labstate.present_drives(hw)
    if as_json:  # nvme-cli 2.3 layout (Debian 12), as the qemu-vm capture: no generic path, trimmed strings
        devices = [{
            "NameSpace": 1, "DevicePath": f"/dev/{d['name']}", "Firmware": d["firmware"],
            "ModelNumber": d["model"], "SerialNumber": d["serial"], "UsedBytes": d["size_bytes"],
            "MaximumLBA": d["size_bytes"] // 512, "PhysicalSize": d["size_bytes"], "SectorSize": 512,
        } for d in drives]
        return dumps({"Devices": devices})
    head = (f"{'Node':<21} {'Generic':<21} {'SN':<20} {'Model':<40} {'Namespace':<9} {'Usage':<26} "
            f"{'Format':<16} {'FW Rev':<8}\n"
            f"{'-' * 21} {'-' * 21} {'-' * 20} {'-' * 40} {'-' * 9} {'-' * 26} {'-' * 16} {'-' * 8}\n")
    rows = "".join(
        f"{'/dev/' + d['name']:<21} {'/dev/ng' + d['name'][4:]:<21} {d['serial']:<20} {d['model']:<40} "
        f"{1:<9} {_units(d['size_bytes']) + ' / ' + _units(d['size_bytes']):<26} {'512   B +  0 B':<16} "
        f"{d['firmware']:<8}\n" for d in drives)
    return head + rows


def cmd_smart_log(drive: dict[str, Any], as_json: bool) -> str:
    h = health(drive)
    data = {
        "critical_warning": h["critical_warning"], "temperature": h["temperature_k"], "avail_spare": h["avail_spare"],
        "spare_thresh": h["spare_thresh"],
        "percent_used": h["percent_used"], "endurance_grp_critical_warning_summary": 0,
        "data_units_read": h["data_units_read"], "data_units_written": h["data_units_written"],
        "host_read_commands": h["data_units_read"] * 11, "host_write_commands": h["data_units_written"] * 15,
        "controller_busy_time": 1943, "power_cycles": h["power_cycles"], "power_on_hours": h["power_on_hours"],
        "unsafe_shutdowns": h["unsafe_shutdowns"], "media_errors": h["media_errors"],
        "num_err_log_entries": h["media_errors"], "warning_temp_time": 0, "critical_comp_time": 0,
        "temperature_sensor_1": h["temperature_k"], "temperature_sensor_2": h["temperature_k"] + 8,
        "thm_temp1_trans_count": 0, "thm_temp2_trans_count": 0, "thm_temp1_total_time": 0,
        "thm_temp2_total_time": 0,
    }
    if as_json:
        return dumps({k: str(v) if k in _WIDE else v for k, v in data.items()})
    lines = [f"Smart Log for NVME device:{drive['name']} namespace-id:ffffffff"]
    for k, v in data.items():
        shown = f"{v - 273} °C ({v} K)" if k.startswith("temperature") else (f"{v}%" if k in (
            "avail_spare", "spare_thresh", "percent_used") else str(v))
        lines.append(f"{k:<40}: {shown}")
    return "\n".join(lines) + "\n"


SANICAP, OACS, FNA = 0x3, 0x17, 0x4  # crypto + block erase sanitize; Format NVM (bit 1); crypto erase format
SSTAT_TEXT = {0: "NVM Subsystem has never been sanitized.", 1: "Most Recent Sanitize Command Completed Successfully.",
              3: "Most Recent Sanitize Command Failed."}


def _erases() -> dict[str, Any]:
    try:
        with open(labstate.state_path("nvme-erase.json"), encoding="utf-8") as fh:
            return dict(json.load(fh))
    except FileNotFoundError:
        return {}


def _record(drive: dict[str, Any], **changes: Any) -> None:
    data = _erases()
    entry = data.setdefault(drive["name"], {"erases": 0, "sstat": 0})
    entry.update(changes)
    path = labstate.state_path("nvme-erase.json")
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)


def _zero(drive: dict[str, Any]) -> None:
    """The erase: the drive's backing file (lab_devices.py) reads back zeroed, its size kept."""
    backing = labstate.state_path("disks", drive["name"])
    size = os.path.getsize(backing)
    with open(backing, "r+b") as fh:
        fh.truncate(0)
        fh.truncate(size)


def _caps(drive: dict[str, Any]) -> tuple[int, int, int]:
    if _hit("nvme_no_erase", drive):
        return 0, OACS & ~0x2, 0
    return SANICAP, OACS, FNA


def _value(args: list[str], *names: str) -> str | None:
    for i, a in enumerate(args):
        for n in names:
            if a.startswith(n + "="):
                return a.split("=", 1)[1]
            if a == n and i + 1 < len(args):
                return args[i + 1]
    return None


def cmd_sanitize(drive: dict[str, Any], args: list[str]) -> int:
    sanact = _value(args, "--sanact", "-a")
    sanicap = _caps(drive)[0]
    wanted = {"2": 0x2, "4": 0x1, "start-block-erase": 0x2, "start-crypto-erase": 0x1}.get(str(sanact))
    if wanted is None or not sanicap & wanted:
        return labstate.die("NVMe status: Invalid Field in Command: A reserved coded value or an unsupported "
                            "value in a defined field(0x2)", 1)
    entry = _erases().get(drive["name"], {"erases": 0})
    if _hit("nvme_sanitize_fails", drive):
        _record(drive, erases=entry["erases"] + 1, sstat=3)
    else:
        _zero(drive)
        _record(drive, erases=entry["erases"] + 1, sstat=1)
    return 0


def cmd_sanitize_log(drive: dict[str, Any], as_json: bool) -> str:
    code = int(_erases().get(drive["name"], {}).get("sstat", 0))
    if as_json:  # nvme-cli 2.x (nvme-print-json.c): nested under the device, SSTAT an object
        return dumps({drive["controller"]: {
            "sprog": 65535, "sstat": {"global_erased": 1 if code == 1 else 0, "no_cmplted_passes": 0,
                                      "status": f"({code}) {SSTAT_TEXT[code]}"},
            "cdw10_info": 0, "time_over_write": 4294967295, "time_block_erase": 4294967295,
            "time_crypto_erase": 4294967295, "time_over_write_no_dealloc": 4294967295,
            "time_block_erase_no_dealloc": 4294967295, "time_crypto_erase_no_dealloc": 4294967295}})
    return (f"Sanitize Progress                      (SPROG) :  65535\n"
            f"Sanitize Status                        (SSTAT) :  {hex(code)}\n\t[2:0]\t{SSTAT_TEXT[code]}\n")


def cmd_format(drive: dict[str, Any], args: list[str]) -> int:
    ses = _value(args, "--ses", "-s") or "0"
    _sanicap, oacs, fna = _caps(drive)
    if not oacs & 0x2 or ses not in ("0", "1", "2") or (ses == "2" and not fna & 0x4):
        return labstate.die("NVMe status: Invalid Command Opcode: A reserved coded value or an unsupported value "
                            "in the command opcode field(0x1)", 1)
    _zero(drive)
    entry = _erases().get(drive["name"], {"erases": 0})
    _record(drive, erases=entry["erases"] + 1)
    sys.stdout.write("Success formatting namespace:1\n")
    return 0


def cmd_id_ctrl(drive: dict[str, Any], as_json: bool) -> str:
    sanicap, oacs, fna = _caps(drive)
    data = {"vid": 5197, "ssvid": 5197, "sn": drive["serial"].ljust(20), "mn": drive["model"].ljust(40),
            "fr": drive["firmware"].ljust(8), "rab": 8, "ieee": 9528, "cmic": 0, "mdts": 9, "cntlid": 6,
            "ver": 131584, "tnvmcap": str(drive["size_bytes"]), "unvmcap": "0", "nn": 32,
            "subnqn": f"nqn.1994-11.com.samsung:nvme:{drive['model'].split()[-1]}:U.2:{drive['serial']}",
            "oacs": oacs, "fna": fna, "sanicap": sanicap}
    if as_json:
        return dumps(data)
    return "NVME Identify Controller:\n" + "".join(f"{k:<9} : {v}\n" for k, v in data.items())


def main(args: list[str]) -> int:
    hw = labstate.hardware()
    as_json = _json(args)
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write("usage: nvme <command> [<device>] [<args>]  (LAB STAND-IN: list, smart-log, id-ctrl, "
                         "sanitize, sanitize-log, format)\n")
        return 0
    if args[0] == "version":
        sys.stdout.write("nvme version 2.3 (LAB STAND-IN)\n")
        return 0
    if args[0] == "list":
        sys.stdout.write(cmd_list(hw, as_json))
        return 0
    devs = [a for a in args[1:] if a.startswith("/dev/")]
    if args[0] in ("smart-log", "id-ctrl") and devs:
        drive = _drive_or_die(hw, devs[0])
        sys.stdout.write(cmd_smart_log(drive, as_json) if args[0] == "smart-log" else cmd_id_ctrl(drive, as_json))
        return 0
    if args[0] in ("sanitize", "sanitize-log", "format") and devs:
        drive = _drive_or_die(hw, devs[0])
        if args[0] == "sanitize-log":
            sys.stdout.write(cmd_sanitize_log(drive, as_json))
            return 0
        return cmd_sanitize(drive, args) if args[0] == "sanitize" else cmd_format(drive, args)
    return labstate.die(f"nvme: LAB STAND-IN does not support '{' '.join(args)}'", 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
