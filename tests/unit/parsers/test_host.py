"""dmidecode, lscpu, /proc/cpuinfo and /proc/meminfo on real captures."""

from __future__ import annotations

import pytest

from provision.conformance.parsers import parse_cpuinfo, parse_dmidecode, parse_lscpu, parse_meminfo
from provision.errors import ParseError

from ._fixtures import text

QUANTA = "dmidecode/linuxhw/dmidecode.quanta-d54q-2u.2x-xeon-platinum-8470n.ddr5-4800.txt"


def test_dmidecode_quanta_sapphire_rapids() -> None:
    dmi = parse_dmidecode(text(QUANTA))
    assert dmi.smbios_version == "3.5.0"
    assert dmi.system is not None
    assert (dmi.system.manufacturer, dmi.system.product_name) == ("Quanta Cloud Technology Inc.", "QuantaGrid D54Q-2U")
    assert dmi.system.serial_number is None  # "--" (masked by hw-probe)
    assert dmi.bios is not None and (dmi.bios.vendor, dmi.bios.version) == (
        "American Megatrends International, LLC.",
        "2A20",
    )
    assert dmi.baseboard is not None and dmi.baseboard.product_name == "S6Q-MB-MPS"
    assert [p.socket for p in dmi.processors] == ["CPU_0", "CPU_1"]
    assert all(
        p.version == "Intel(R) Xeon(R) Platinum 8470N" and p.core_count == 52 and p.thread_count == 104
        for p in dmi.processors
    )
    assert all(p.populated and p.max_speed_mhz == 4000 for p in dmi.processors)
    (array,) = dmi.memory_arrays
    assert (array.error_correction, array.number_of_devices) == ("Single-bit ECC", 32)
    assert len(dmi.memory_devices) == 32
    dimms = [d for d in dmi.memory_devices if d.populated]
    assert len(dimms) == 16
    assert {(d.size_mib, d.type, d.speed_mts, d.configured_speed_mts) for d in dimms} == {(16384, "DDR5", 4800, 4800)}
    assert {d.error_correction for d in dimms} == {"Single-bit ECC"}
    assert dimms[0].locator == "CPU0_A0" and dimms[0].part_number == "M321R2GA3BB6-CQKMG"
    assert dmi.installed_memory_mib == 256 * 1024


@pytest.mark.parametrize(("capture", "current_mhz", "l3_kib"), [
    (QUANTA, 1700, 99840),  # 2x Xeon Platinum 8470N: 1.7 GHz base, 97.5 MB L3 (Intel ARK)
    ("dmidecode/linuxhw/dmidecode.supermicro-x13dei.2x-xeon-gold-5416s.ddr5.txt", 2000, 30 * 1024),
    ("dmidecode/linuxhw/dmidecode.hpe-dl380-gen11.ddr5.txt", 2800, 38400),
])
def test_dmidecode_each_socket_links_its_l3_and_reports_its_base_clock(capture: str, current_mhz: int,
                                                                      l3_kib: int) -> None:
    dmi = parse_dmidecode(text(capture))
    caches = {c.handle: c for c in dmi.caches}
    assert len(dmi.processors) == 2 and len(caches) == 6  # L1, L2, L3 of each socket
    for cpu in dmi.processors:
        assert cpu.current_speed_mhz == current_mhz and cpu.l3_cache_handle is not None
        l3 = caches[cpu.l3_cache_handle]
        assert (l3.level, l3.installed_kib) == (3, l3_kib)
    assert sorted(c.level for c in caches.values()) == [1, 1, 2, 2, 3, 3]


def test_dmidecode_hpe_two_arrays_multibit_ecc() -> None:
    dmi = parse_dmidecode(text("dmidecode/linuxhw/dmidecode.hpe-dl380-gen11.ddr5.txt"))
    assert dmi.system is not None and dmi.system.product_name == "ProLiant DL380 Gen11"
    assert [p.version for p in dmi.processors] == ["INTEL(R) XEON(R) GOLD 6526Y"] * 2
    assert [a.error_correction for a in dmi.memory_arrays] == ["Multi-bit ECC", "Multi-bit ECC"]
    dimms = [d for d in dmi.memory_devices if d.populated]
    assert len(dimms) == 8 and {d.size_mib for d in dimms} == {32768}
    assert {(d.speed_mts, d.configured_speed_mts) for d in dimms} == {(5600, 5200)}
    assert {d.error_correction for d in dimms} == {"Multi-bit ECC"}


def test_dmidecode_supermicro() -> None:
    dmi = parse_dmidecode(text("dmidecode/linuxhw/dmidecode.supermicro-x13dei.2x-xeon-gold-5416s.ddr5.txt"))
    assert dmi.smbios_version == "3.6.0"
    assert [p.core_count for p in dmi.processors] == [16, 16]
    assert sum(d.populated for d in dmi.memory_devices) == 8
    assert dmi.installed_memory_mib == 8 * 32768


@pytest.mark.parametrize(("capture", "first"), [
    # Supermicro X13: P<socket>_Node<memory controller>_Channel<c>_Dimm<d>; E1 is controller 1's channel 0
    ("dmidecode/linuxhw/dmidecode.supermicro-x13dei.2x-xeon-gold-5416s.ddr5.txt",
     {"P1-DIMMA1": (0, "Node0/Channel0"), "P1-DIMME1": (0, "Node1/Channel0"), "P2-DIMMG1": (1, "Node1/Channel2")}),
    # Quanta: _Node<socket>_Channel<c>_Dimm<d>, the socket also in the locator CPU<n>_
    (QUANTA, {"CPU0_A0": (0, "Node0/Channel0"), "CPU1_H0": (1, "Node1/Channel7"), "CPU1_H1": (1, "Node1/Channel7")}),
])
def test_dmidecode_slot_socket_and_channel(capture: str, first: dict[str, tuple[int, str]]) -> None:
    slots = {d.locator: d.slot for d in parse_dmidecode(text(capture)).memory_devices}
    assert {loc: (s.socket, s.channel) for loc, s in slots.items() if loc in first and s} == first


def test_dmidecode_hpe_locators_carry_no_channel() -> None:
    dmi = parse_dmidecode(text("dmidecode/linuxhw/dmidecode.hpe-dl380-gen11.ddr5.txt"))
    assert dmi.memory_devices and all(d.slot is None for d in dmi.memory_devices)


def test_dmidecode_system_only_dell_xe9680() -> None:
    dmi = parse_dmidecode(text("dmidecode/gpud/dmidecode-system.dell-xe9680.txt"))
    assert dmi.system is not None
    assert (dmi.system.manufacturer, dmi.system.product_name, dmi.system.serial_number) == (
        "Dell Inc.",
        "PowerEdge XE9680",
        "HSR8X04",
    )
    assert dmi.system.uuid == "4c4c4544-0053-5210-8038-c8c04f583034"
    assert dmi.processors == () and dmi.memory_devices == ()


def test_dmidecode_missing_dimm_records() -> None:
    capture = text(QUANTA)
    cut = capture[: capture.index("Locator: CPU1_H1")]
    cut = cut[: cut.rindex("Handle ")]
    with pytest.raises(ParseError, match="declares 32 devices, 31 listed"):
        parse_dmidecode(cut)


def test_lscpu_cascade_lake() -> None:
    cpu = parse_lscpu(text("lscpu/linuxhw/lscpu.2x-xeon-platinum-8280.cascadelake.txt"))
    assert (cpu.cpus, cpu.sockets, cpu.cores_per_socket, cpu.threads_per_core) == (112, 2, 28, 2)
    assert cpu.model_name == "Intel(R) Xeon(R) Platinum 8280 CPU @ 2.70GHz"
    assert (cpu.cpu_family, cpu.model, cpu.stepping, cpu.numa_nodes) == (6, 85, 7, 2)
    assert cpu.numa_node_cpus == {0: "0-27,56-83", 1: "28-55,84-111"}
    assert "avx512f" in cpu.flags and cpu.flags[0] == "fpu"


def test_lscpu_util_linux_238_build_machine() -> None:
    cpu = parse_lscpu(text("lscpu/build-machine/lscpu.util-linux-2.38.1.txt"))
    assert (cpu.cpus, cpu.sockets, cpu.vendor_id) == (2, 1, "AuthenticAMD")
    assert "sha_ni" in cpu.flags


def test_lscpu_without_flags_is_truncated() -> None:
    capture = text("lscpu/linuxhw/lscpu.2x-xeon-platinum-8280.cascadelake.txt")
    with pytest.raises(ParseError, match="Flags"):
        parse_lscpu(capture[: capture.index("Flags:")])


def test_cpuinfo_sapphire_rapids_8480plus() -> None:
    info = parse_cpuinfo(text("lscpu/telegraf/proc-cpuinfo.xeon-platinum-8480plus.txt"))
    assert [p.processor for p in info.processors] == [0, 1, 2, 3]
    first = info.processors[0]
    assert (first.model_name, first.cpu_family, first.model, first.stepping) == (
        "Intel(R) Xeon(R) Platinum 8480+",
        6,
        143,
        8,
    )
    assert (first.cpu_cores, first.siblings, first.physical_id) == (56, 112, 0)
    assert "amx_tile" in first.flags
    assert info.sockets == 1


def test_cpuinfo_truncated_last_block() -> None:
    capture = text("lscpu/telegraf/proc-cpuinfo.xeon-platinum-8480plus.txt")
    with pytest.raises(ParseError, match="processor 3 lacks"):
        parse_cpuinfo(capture[: capture.rindex("\nbugs")])


def test_meminfo_build_machine() -> None:
    capture = text("meminfo/build-machine/proc-meminfo.txt")
    mem = parse_meminfo(capture)
    total = int(capture.split("MemTotal:")[1].split()[0])
    assert mem.mem_total_kib == total
    assert mem.values["MemTotal"] == total
    assert mem.hugepage_size_kib == 2048
    with pytest.raises(ParseError, match="MemAvailable"):
        parse_meminfo("MemTotal: 100 kB\nMemFree: 50 kB\n")
