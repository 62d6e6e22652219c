#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `dmidecode` (3.4 layout, as the linuxhw DDR5 server captures) for lab twins:
-t system|baseboard|bios|processor|cache|memory|1|2|0|4|7|16|17, -s <keyword>, and the full dump."""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate

HEAD = "# dmidecode 3.4\nGetting SMBIOS data from sysfs.\nSMBIOS 3.5.0 present.\n"
TYPES = {"bios": [0], "system": [1], "baseboard": [2], "processor": [4], "cache": [7], "memory": [16, 17]}


def bios(hw: dict[str, Any]) -> str:
    s = hw["system"]
    return ("Handle 0x0000, DMI type 0, 26 bytes\nBIOS Information\n"
            f"\tVendor: {s['bios_vendor']}\n\tVersion: {s['bios_version']}\n\tRelease Date: {s['bios_date']}\n"
            "\tAddress: 0xF0000\n\tRuntime Size: 64 kB\n\tROM Size: 64 MB\n\tCharacteristics:\n"
            "\t\tPCI is supported\n\t\tBIOS is upgradeable\n\t\tBIOS shadowing is allowed\n"
            "\t\tBoot from CD is supported\n\t\tSelectable boot is supported\n\t\tACPI is supported\n"
            "\t\tUSB legacy is supported\n\t\tBIOS boot specification is supported\n"
            "\t\tTargeted content distribution is supported\n\t\tUEFI is supported\n"
            "\tBIOS Revision: 5.32\n\n")


def system(hw: dict[str, Any]) -> str:
    s = hw["system"]
    return ("Handle 0x0001, DMI type 1, 27 bytes\nSystem Information\n"
            f"\tManufacturer: {s['manufacturer']}\n\tProduct Name: {s['product']}\n\tVersion: 0123456789\n"
            f"\tSerial Number: {s['serial']}\n\tUUID: {s['uuid']}\n\tWake-up Type: Power Switch\n"
            "\tSKU Number: To be filled by O.E.M.\n\tFamily: SMC X13\n\n")


def baseboard(hw: dict[str, Any]) -> str:
    s = hw["system"]
    return ("Handle 0x0002, DMI type 2, 15 bytes\nBase Board Information\n"
            f"\tManufacturer: {s['manufacturer']}\n\tProduct Name: {s['board_product']}\n\tVersion: 1.01\n"
            f"\tSerial Number: OM{s['serial'][1:]}\n\tAsset Tag: Base Board Asset Tag\n\tFeatures:\n"
            "\t\tBoard is a hosting board\n\t\tBoard is replaceable\n\tLocation In Chassis: Part Component\n"
            "\tChassis Handle: 0x0003\n\tType: Motherboard\n\tContained Object Handles: 0\n\n")


def processor(hw: dict[str, Any]) -> str:
    c = hw["cpu"]
    out = []
    for i in range(c["sockets"]):
        out.append(
            f"Handle 0x{0x50 + i:04X}, DMI type 4, 48 bytes\nProcessor Information\n"
            f"\tSocket Designation: CPU{i + 1}\n\tType: Central Processor\n\tFamily: Xeon\n"
            "\tManufacturer: Intel(R) Corporation\n\tID: F2 06 0C 00 FF FB EB BF\n"
            f"\tSignature: Type 0, Family {c['family']}, Model {c['model']}, Stepping {c['stepping']}\n"
            f"\tVersion: {c['model_name']}\n\tVoltage: 1.6 V\n\tExternal Clock: 100 MHz\n"
            f"\tMax Speed: {c['max_mhz']} MHz\n\tCurrent Speed: {c['base_mhz']} MHz\n\tStatus: Populated, Enabled\n"
            "\tUpgrade: Socket LGA4677\n"
            + "".join(f"\tL{level} Cache Handle: 0x{_cache_handle(i, level):04X}\n" for level in (1, 2, 3))
            + "\tSerial Number: Not Specified\n\tAsset Tag: Not Specified\n"
            "\tPart Number: Not Specified\n"
            f"\tCore Count: {c['cores_per_socket']}\n\tCore Enabled: {c['cores_per_socket']}\n"
            f"\tThread Count: {c['cores_per_socket'] * c['threads_per_core']}\n\tCharacteristics:\n"
            "\t\t64-bit capable\n\t\tMulti-Core\n\t\tHardware Thread\n\t\tExecute Protection\n"
            "\t\tEnhanced Virtualization\n\t\tPower/Performance Control\n\n")
    return "".join(out)


def _cache_handle(socket: int, level: int) -> int:
    return 0x0100 + 3 * socket + level - 1


def _size(kb: int) -> str:
    """As dmidecode 3.4 prints a cache size: MB when whole, else kB."""
    return f"{kb // 1024} MB" if kb % 1024 == 0 else f"{kb} kB"


def cache(hw: dict[str, Any]) -> str:
    """Type 7: each socket's L1, L2 and L3, the socket's whole cache of each level (as the linuxhw captures)."""
    c = hw["cpu"]
    sizes = {1: c["cores_per_socket"] * 80, 2: c["cores_per_socket"] * 2048, 3: c["l3_kb_per_socket"]}
    out = []
    for i in range(c["sockets"]):
        for level, kb in sizes.items():
            out.append(
                f"Handle 0x{_cache_handle(i, level):04X}, DMI type 7, 27 bytes\nCache Information\n"
                f"\tSocket Designation: L{level} Cache\n\tConfiguration: Enabled, Not Socketed, Level {level}\n"
                "\tOperational Mode: Write Back\n\tLocation: Internal\n"
                f"\tInstalled Size: {_size(kb)}\n\tMaximum Size: {_size(kb)}\n\tSupported SRAM Types:\n"
                "\t\tSynchronous\n\tInstalled SRAM Type: Synchronous\n\tSpeed: Unknown\n"
                "\tError Correction Type: Single-bit ECC\n\tSystem Type: Unified\n"
                "\tAssociativity: 16-way Set-associative\n\n")
    return "".join(out)


def memory(hw: dict[str, Any]) -> str:
    dimms = hw["dimms"]
    ecc = "Multi-bit ECC" if dimms and dimms[0]["ecc"] else "None"
    out = [("Handle 0x0036, DMI type 16, 23 bytes\nPhysical Memory Array\n\tLocation: System Board Or Motherboard\n"
            f"\tUse: System Memory\n\tError Correction Type: {ecc}\n\tMaximum Capacity: 8 TB\n"
            f"\tError Information Handle: Not Provided\n\tNumber Of Devices: {len(dimms)}\n\n")]
    missing = (labstate.fault("dimm_missing") or {}).get("locator")
    for i, d in enumerate(dimms):
        if d["locator"] == missing:  # an empty slot, as the linuxhw captures print one
            out.append(
                f"Handle 0x{0x37 + i:04X}, DMI type 17, 92 bytes\nMemory Device\n\tArray Handle: 0x0036\n"
                "\tError Information Handle: Not Provided\n\tTotal Width: Unknown\n\tData Width: Unknown\n"
                f"\tSize: No Module Installed\n\tForm Factor: DIMM\n\tSet: None\n\tLocator: {d['locator']}\n"
                f"\tBank Locator: {d['bank']}\n\tType: Unknown\n\tType Detail: Unknown\n\tSpeed: Unknown\n"
                "\tManufacturer: Not Specified\n\tSerial Number: Not Specified\n\tAsset Tag: Not Specified\n"
                "\tPart Number: Not Specified\n\tRank: Unknown\n\tConfigured Memory Speed: Unknown\n\n")
            continue
        width = "80 bits" if d["ecc"] else "64 bits"
        detail = ("Synchronous Registered (Buffered)" if d.get("registered", True)
                  else "Synchronous Unbuffered (Unregistered)")
        out.append(
            f"Handle 0x{0x37 + i:04X}, DMI type 17, 92 bytes\nMemory Device\n\tArray Handle: 0x0036\n"
            f"\tError Information Handle: Not Provided\n\tTotal Width: {width}\n\tData Width: 64 bits\n"
            f"\tSize: {d['size_gb']} GB\n\tForm Factor: DIMM\n\tSet: None\n\tLocator: {d['locator']}\n"
            f"\tBank Locator: {d['bank']}\n\tType: {d['type']}\n\tType Detail: {detail}\n"
            f"\tSpeed: {d['speed_mts']} MT/s\n\tManufacturer: {d['manufacturer']}\n\tSerial Number: {d['serial']}\n"
            f"\tAsset Tag: {d['locator']}_AssetTag\n\tPart Number: {d['part']}\n\tRank: 2\n"
            f"\tConfigured Memory Speed: {d['speed_mts']} MT/s\n\tMinimum Voltage: 1.1 V\n\tMaximum Voltage: 1.1 V\n"
            "\tConfigured Voltage: 1.1 V\n\tMemory Technology: DRAM\n"
            "\tMemory Operating Mode Capability: Volatile memory\n\tFirmware Version: Not Specified\n"
            "\tModule Manufacturer ID: Bank 1, Hex 0xCE\n\tModule Product ID: Unknown\n"
            "\tMemory Subsystem Controller Manufacturer ID: Unknown\n"
            "\tMemory Subsystem Controller Product ID: Unknown\n\tNon-Volatile Size: None\n"
            f"\tVolatile Size: {d['size_gb']} GB\n\tCache Size: None\n\tLogical Size: None\n\n")
    return "".join(out)


RENDER = {0: bios, 1: system, 2: baseboard, 4: processor, 7: cache, 16: memory, 17: memory}
KEYWORDS = {
    "system-manufacturer": lambda hw: hw["system"]["manufacturer"],
    "system-product-name": lambda hw: hw["system"]["product"],
    "system-serial-number": lambda hw: hw["system"]["serial"],
    "system-uuid": lambda hw: hw["system"]["uuid"],
    "bios-vendor": lambda hw: hw["system"]["bios_vendor"],
    "bios-version": lambda hw: hw["system"]["bios_version"],
    "bios-release-date": lambda hw: hw["system"]["bios_date"],
    "baseboard-product-name": lambda hw: hw["system"]["board_product"],
    "processor-version": lambda hw: "\n".join([hw["cpu"]["model_name"]] * hw["cpu"]["sockets"]),
}


def main(args: list[str]) -> int:
    hw = labstate.hardware()
    if "-s" in args or "--string" in args:
        keyword = args[args.index("-s" if "-s" in args else "--string") + 1]
        if keyword not in KEYWORDS:
            labstate.die(f"Invalid string keyword: {keyword}", 2)
        sys.stdout.write(KEYWORDS[keyword](hw) + "\n")
        return 0
    wanted: list[int] = []
    for i, a in enumerate(args):
        if a in ("-t", "--type") and i + 1 < len(args):
            for t in args[i + 1].split(","):
                wanted += TYPES.get(t, [int(t)] if t.isdigit() else [])
    wanted = wanted or [0, 1, 2, 4, 7, 16]
    done: set[Any] = set()
    parts = [HEAD, ""]
    for kind in wanted:
        fn = RENDER.get(kind)
        if fn and fn not in done:
            done.add(fn)
            parts.append(fn(hw))
    sys.stdout.write("\n".join(parts[:1]) + "\n" + "".join(parts[2:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
