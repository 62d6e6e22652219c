"""CPU, memory, kernel, InfiniBand, Ethernet, md RAID, ZFS, NVMe, packages, services and burn-in checks.

Real captures where one exists (tests/fixtures/, PROVENANCE.md); the project's own formats
(dpkg-query -f, systemctl show, the sysfs netdev lines) are built from the spec in the test.
"""

from __future__ import annotations

import json
import re

import pytest

from provision.conformance.checks.names import pinned_packages, required_units
from provision.conformance.model import Level, Outcome
from tests.unit.conformance.helpers import area, fixture, run, spec

LSCPU_8280 = fixture("lscpu/linuxhw/lscpu.2x-xeon-platinum-8280.cascadelake.txt")
DMI_QUANTA = fixture("dmidecode/linuxhw/dmidecode.quanta-d54q-2u.2x-xeon-platinum-8470n.ddr5-4800.txt")
MEMINFO_24G = fixture("meminfo/build-machine/proc-meminfo.txt")
IB_ACTIVE = fixture("infiniband/gpud/ibstat.47.0.h100.all.active.2.txt")
IB_SOME_DOWN = fixture("infiniband/gpud/ibstat.47.0.h100.some.down.0.txt")
MDSTAT = fixture("mdraid/node_exporter/proc-mdstat.txt")
MDADM_CLEAN = fixture("mdraid/qemu-vm/mdadm-detail.clean.txt")
MDADM_DEGRADED = fixture("mdraid/qemu-vm/mdadm-detail.failed.txt")
MDSTAT_FAILED = fixture("mdraid/qemu-vm/proc-mdstat.failed.txt")
ZPOOL_DEGRADED = fixture("zfs/handwritten/zpool-status.degraded.txt")
ZFS_GET = fixture("zfs/handwritten/zfs-get-Hp.txt")
NVME_LIST = fixture("nvme/qemu-vm/nvme-list.json")
SMART = fixture("nvme/qemu-vm/nvme-smart-log.nvme0.json")
DCGM_PASS = fixture("dcgm/handwritten/dcgmi-diag-r2.pass.txt")
DCGM_FAIL = fixture("dcgm/handwritten/dcgmi-diag-r2.fail.txt")


def failed(ctx, name: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Checks that fail the node: FAIL, or ERROR (could not be made); waived and warned ones do not."""
    return [r.id for r in area(ctx, name).values() if not r.accepted]


# ---- CPU ------------------------------------------------------------------------------------------
CPU_8280 = {"cpu.model": "Intel(R) Xeon(R) Platinum 8280 CPU @ 2.70GHz", "cpu.cores_per_socket": 28,
            "cpu.isa_flags": ["avx512f", "avx512bw", "avx512vl", "avx512_vnni"]}


def test_cpu_capture_matches_its_spec() -> None:
    ctx = run(spec(**CPU_8280), {"lscpu": LSCPU_8280}, Level.QUICK)  # lscpu only: SMBIOS is read past quick
    cpu = area(ctx, "cpu")
    assert len(cpu) == 8 and failed(ctx, "cpu") == []
    assert cpu["cpu.threads"].found == "112" and cpu["cpu.sockets"].found == "2"


def test_cpu_against_ml_prod_v4_reports_each_difference() -> None:
    ctx = run(spec(), {"lscpu": LSCPU_8280}, Level.QUICK)
    bad = failed(ctx, "cpu")
    assert {"cpu.model", "cpu.cores_per_socket", "cpu.threads", "cpu.flag.amx_tile", "cpu.flag.amx_bf16",
            "cpu.flag.amx_int8", "cpu.flag.avx512_bf16"} == set(bad)
    assert area(ctx, "cpu")["cpu.flag.avx512f"].passed


# ---- CPU from SMBIOS: base clock and L3 per socket ----------------------------------------------------
# X13DEi: 2x Xeon Gold 5416S (Intel ARK: 2.0 GHz base, 30 MB L3): Current Speed 2000 MHz, L3 "30 MB" linked from
# each processor's L3 Cache Handle. Quanta D54Q: 2x Xeon Platinum 8470N (1.7 GHz, 97.5 MB): 1700 MHz, 99840 kB.
CPU_5416S = {"cpu.base_clock_ghz": 2.0, "cpu.l3_cache_mb_per_socket": 30}


def _smbios_cpu(node_spec, dmi: str) -> dict:  # type: ignore[no-untyped-def,type-arg]
    results = area(run(node_spec, {"dmidecode_cpu": dmi}), "cpu")
    return {cid: r for cid, r in results.items() if cid in ("cpu.base_clock", "cpu.l3_cache")}


def test_base_clock_and_l3_of_each_socket_from_the_x13dei_capture() -> None:
    rows = _smbios_cpu(spec(**CPU_5416S), DMI_X13DEI)
    assert rows["cpu.base_clock"].passed and rows["cpu.base_clock"].found == "2000 MHz"
    assert rows["cpu.l3_cache"].passed and rows["cpu.l3_cache"].found == "30 MB"


def test_the_seeds_8592_figures_fail_on_a_real_node() -> None:
    """ML-PROD-V4 as the seed writes it (2.5 GHz, 112 MB) against real SMBIOS: both fail, each socket named."""
    rows = _smbios_cpu(spec(), DMI_QUANTA)
    clock, l3 = rows["cpu.base_clock"], rows["cpu.l3_cache"]
    assert clock.outcome is Outcome.FAIL and clock.expected == "2500 MHz" and clock.found == "1700 MHz"
    assert clock.detail == "not the base clock: CPU_0 1700 MHz, CPU_1 1700 MHz"
    assert l3.outcome is Outcome.FAIL and l3.expected == "112 MB" and l3.found == "97.5 MB"
    assert "CPU_1 97.5 MB" in l3.detail


def test_one_socket_with_another_l3_or_clock_fails_naming_it() -> None:
    second = DMI_X13DEI.rindex("Socket Designation: L3 Cache")
    size = DMI_X13DEI.index("Installed Size: 30 MB", second)
    one_off = DMI_X13DEI[:size] + "Installed Size: 15 MB" + DMI_X13DEI[size + len("Installed Size: 30 MB"):]
    rows = _smbios_cpu(spec(**CPU_5416S), one_off)
    assert rows["cpu.l3_cache"].outcome is Outcome.FAIL and rows["cpu.l3_cache"].detail == "not the spec's L3: CPU2 15 MB"
    slow = DMI_X13DEI.replace("Current Speed: 2000 MHz", "Current Speed: 1900 MHz", 1)
    rows = _smbios_cpu(spec(**CPU_5416S), slow)
    assert rows["cpu.base_clock"].outcome is Outcome.FAIL and rows["cpu.base_clock"].detail == \
        "not the base clock: CPU1 1900 MHz"


def test_l3_records_without_handles_pair_with_the_sockets_in_order() -> None:
    unlinked = re.sub(r"\tL[123] Cache Handle: 0x[0-9A-F]+\n", "", DMI_X13DEI)
    assert "L3 Cache Handle" not in unlinked
    assert _smbios_cpu(spec(**CPU_5416S), unlinked)["cpu.l3_cache"].passed


def test_no_cache_records_or_no_speed_is_an_error_never_a_pass() -> None:
    records = DMI_X13DEI.split("\n\n")
    no_cache = "\n\n".join(r for r in records if "DMI type 7," not in r)
    rows = _smbios_cpu(spec(**CPU_5416S), no_cache)
    assert rows["cpu.l3_cache"].outcome is Outcome.ERROR and rows["cpu.base_clock"].passed
    no_speed = DMI_X13DEI.replace("Current Speed: 2000 MHz", "Current Speed: Unknown")
    assert _smbios_cpu(spec(**CPU_5416S), no_speed)["cpu.base_clock"].outcome is Outcome.ERROR
    assert {r.outcome for r in _smbios_cpu(spec(**CPU_5416S), "").values()} == {Outcome.ERROR}


def test_smbios_cpu_is_read_past_quick_only() -> None:
    assert {"cpu.base_clock", "cpu.l3_cache"}.isdisjoint(area(run(spec(), {"lscpu": LSCPU_8280}, Level.QUICK), "cpu"))


# ---- memory ---------------------------------------------------------------------------------------
MEM_QUANTA = {"memory.total_gb": 256, "memory.dimm_count": 16, "memory.dimm_size_gb": 16,
              "memory.dimms_per_channel": 1}
DMI_X13DEI = fixture("dmidecode/linuxhw/dmidecode.supermicro-x13dei.2x-xeon-gold-5416s.ddr5.txt")
DMI_HPE = fixture("dmidecode/linuxhw/dmidecode.hpe-dl380-gen11.ddr5.txt")
# X13DEi: 8x 32 GB on 2 sockets, channels A, C, E, G of each (P0_Node0_Channel0/2, P0_Node1_Channel0/2), rated
# Speed 4800 but Configured Memory Speed 4400.
MEM_X13DEI = {"memory.total_gb": 256, "memory.dimm_count": 8, "memory.dimm_size_gb": 32,
              "memory.channels_per_socket": 4, "memory.dimms_per_channel": 1, "memory.min_speed_mts": 4400}


def test_memory_dimms_from_dmidecode_capture() -> None:
    ctx = run(spec(**MEM_QUANTA), {"dmidecode_memory": DMI_QUANTA, "meminfo": MEMINFO_24G})
    mem = area(ctx, "memory")
    assert failed(ctx, "memory") == ["memory.visible"]  # the meminfo is of a 24 GiB build machine
    assert mem["memory.ecc"].found == "Single-bit ECC" and mem["memory.type"].found == "DDR5"
    assert mem["memory.speed"].found == "4800" and mem["memory.dimm_count"].found == "16"


def test_memory_population_from_the_quanta_capture() -> None:
    ctx = run(spec(**MEM_QUANTA), {"dmidecode_memory": DMI_QUANTA, "meminfo": MEMINFO_24G})
    pop = area(ctx, "memory")["memory.population"]
    assert pop.passed and pop.found == "2 socket(s) x 8 channel(s) x 1 DIMM(s)"
    ctx = run(spec(**{**MEM_QUANTA, "memory.dimms_per_channel": 2}), {"dmidecode_memory": DMI_QUANTA})
    pop = area(ctx, "memory")["memory.population"]
    assert pop.outcome is Outcome.FAIL and "socket 0 Node0/Channel0: 1 DIMM(s) (CPU0_A0), spec 2" in pop.detail


def test_a_missing_dimm_fails_naming_its_socket_and_channel() -> None:
    one_out = DMI_QUANTA.replace("\tSize: 16 GB\n\tForm Factor: DIMM\n\tSet: None\n\tLocator: CPU1_C0",
                                 "\tSize: No Module Installed\n\tForm Factor: DIMM\n\tSet: None\n\tLocator: CPU1_C0")
    assert one_out != DMI_QUANTA, "fixture drift: CPU1_C0's record moved"
    ctx = run(spec(**MEM_QUANTA), {"dmidecode_memory": one_out})
    pop = area(ctx, "memory")["memory.population"]
    assert pop.outcome is Outcome.FAIL
    assert pop.detail == "socket 1: 7 populated channel(s), spec 8 (empty: Node1/Channel2)"


def test_supermicro_banks_count_each_controller_channel_and_the_configured_speed() -> None:
    ctx = run(spec(**MEM_X13DEI), {"dmidecode_memory": DMI_X13DEI})
    mem = area(ctx, "memory")
    assert mem["memory.population"].passed and mem["memory.population"].found == "2 socket(s) x 4 channel(s) x 1 DIMM(s)"
    assert mem["memory.speed"].passed and mem["memory.speed"].found == "4400"
    ctx = run(spec(**{**MEM_X13DEI, "memory.min_speed_mts": 4800}), {"dmidecode_memory": DMI_X13DEI})
    speed = area(ctx, "memory")["memory.speed"]
    assert speed.outcome is Outcome.FAIL and "P1-DIMMA1" in speed.detail  # rated 4800 is not how it runs


def test_locators_without_channels_cannot_pass_population() -> None:
    hpe = {**MEM_X13DEI, "memory.min_speed_mts": 5200}
    ctx = run(spec(**hpe), {"dmidecode_memory": DMI_HPE})
    pop = area(ctx, "memory")["memory.population"]
    assert pop.outcome is Outcome.ERROR and "PROC 1 DIMM 1" in pop.found


def test_registered_dimms_from_the_capture_and_one_unbuffered_fails() -> None:
    ctx = run(spec(**MEM_X13DEI), {"dmidecode_memory": DMI_X13DEI})
    module = area(ctx, "memory")["memory.module"]
    assert module.passed and module.expected == "Registered (Buffered)" and module.found == "RDIMM"
    udimm = DMI_X13DEI.replace("Type Detail: Synchronous Registered (Buffered)",
                               "Type Detail: Synchronous Unbuffered (Unregistered)", 1)
    module = area(run(spec(**MEM_X13DEI), {"dmidecode_memory": udimm}), "memory")["memory.module"]
    assert module.outcome is Outcome.FAIL and module.detail == "not RDIMM: P1-DIMMA1"
    assert module.found == "RDIMM, UDIMM"


def test_a_udimm_spec_fails_on_registered_dimms_and_no_flag_is_an_error() -> None:
    module = area(run(spec(**{**MEM_X13DEI, "memory.module": "UDIMM"}), {"dmidecode_memory": DMI_X13DEI}),
                  "memory")["memory.module"]
    assert module.outcome is Outcome.FAIL and module.expected == "Unbuffered (Unregistered)"
    bare = DMI_X13DEI.replace("Type Detail: Synchronous Registered (Buffered)", "Type Detail: Synchronous")
    module = area(run(spec(**MEM_X13DEI), {"dmidecode_memory": bare}), "memory")["memory.module"]
    assert module.outcome is Outcome.ERROR and "P1-DIMMA1" in module.detail


def test_no_module_in_the_spec_makes_no_module_check() -> None:
    ctx = run(spec(**{**MEM_X13DEI, "memory.module": None}), {"dmidecode_memory": DMI_X13DEI})
    assert "memory.module" not in area(ctx, "memory")


def test_memory_visible_and_ecc_off() -> None:
    ctx = run(spec(**{"memory.total_gb": 24, "memory.dimm_count": 3, "memory.dimm_size_gb": 8}),
              {"meminfo": MEMINFO_24G}, Level.QUICK)
    assert area(ctx, "memory")["memory.visible"].passed
    no_ecc = DMI_QUANTA.replace("Error Correction Type: Single-bit ECC", "Error Correction Type: None")
    ctx = run(spec(**MEM_QUANTA), {"dmidecode_memory": no_ecc, "meminfo": MEMINFO_24G})
    assert "memory.ecc" in failed(ctx, "memory")


# ---- kernel ---------------------------------------------------------------------------------------
def test_kernel_release_and_modules() -> None:
    s = spec()
    mods = "\n".join(["nvidia", "nvidia_uvm", "nvidia_modeset", "mlx5_core", "mlx5_ib", "ib_uverbs",
                      "nvidia_peermem", "ib_ipoib", "zfs", "kernel"])
    ctx = run(s, {"kernel_release": "6.1.0-28-amd64\n6.1.0-28-amd64\n", "kernel_modules": mods})
    assert failed(ctx, "kernel") == [] and len(area(ctx, "kernel")) == 11
    ctx = run(s, {"kernel_release": "6.1.0-13-amd64\n6.1.0-13-amd64\n", "kernel_modules": mods.replace("zfs\n", "")})
    assert set(failed(ctx, "kernel")) == {"kernel.release", "kernel.uname", "kernel.module.zfs"}


def test_monolithic_kernel_fails_every_module_whatever_the_node_holds() -> None:
    listing = "@monolithic\nkernel\nprintk\n"
    ctx = run(spec(), {"kernel_modules": listing, "lab_standins": "/usr/bin/nvidia-smi\n"})
    mods = [r for r in area(ctx, "kernel").values() if r.id.startswith("kernel.module.")]
    assert mods and all(r.outcome is Outcome.FAIL and "without module support" in r.found for r in mods)


# ---- InfiniBand and Ethernet ----------------------------------------------------------------------
def netdev_text(devs: list[tuple[str, str, int, str | None, str, str]]) -> str:
    """`ip -j -d addr` JSON + sysfs lines for (name, link_type, mtu, parentbus, speed, mode)."""
    links, sysfs = [], []
    for index, (name, link_type, mtu, bus, speed, mode) in enumerate(devs, start=1):
        link: dict[str, object] = {"ifindex": index, "ifname": name, "mtu": mtu, "operstate": "UP",
                                   "link_type": link_type, "addr_info": []}
        if bus:
            link["parentbus"], link["parentdev"] = bus, f"0000:{index:02x}:00.0"
        if link_type != "loopback":
            link["addr_info"] = [{"family": "inet", "local": f"10.50.{index}.7", "prefixlen": 16}]
        links.append(link)
        sysfs.append(f"{name} {index} {speed} {mode}")
    return json.dumps(links) + "\n@@sysfs\n" + "\n".join(sysfs) + "\n"


LO = ("lo", "loopback", 65536, None, "-", "-")


def ib_netdevs(n: int, mtu: int = 4092, mode: str = "datagram") -> str:
    return netdev_text([LO] + [(f"ibp{i}s0", "infiniband", mtu, "pci", "400000", mode) for i in range(n)])


def test_ib_capture_all_active_at_400() -> None:
    s = spec(**{"network.infiniband.count": 8})
    ctx = run(s, {"ibstat": IB_ACTIVE, "netdevs": ib_netdevs(8)})
    ib = area(ctx, "infiniband")
    assert failed(ctx, "infiniband") == []
    assert ib["infiniband.ports"].found == "8" and ib["infiniband.mlx5_9/1.rate"].found == "400"
    assert len(ib) == 1 + 8 * 3 + 8 + 1 + 8 * 3  # ports, per-port state/phys/rate, firmware, IPoIB


def test_ib_port_down_and_slow_fail_their_own_checks() -> None:
    s = spec(**{"network.infiniband.count": 8})
    blocks = IB_ACTIVE.split("CA '")
    i = next(n for n, b in enumerate(blocks) if b.startswith("mlx5_4'"))
    blocks[i] = blocks[i].replace("State: Active", "State: Down").replace("Physical state: LinkUp",
                                                                          "Physical state: Disabled")
    j = next(n for n, b in enumerate(blocks) if b.startswith("mlx5_5'"))
    blocks[j] = blocks[j].replace("Rate: 400", "Rate: 200")
    ctx = run(s, {"ibstat": "CA '".join(blocks), "netdevs": ib_netdevs(8)})
    assert set(failed(ctx, "infiniband")) == {"infiniband.mlx5_4/1.state", "infiniband.mlx5_4/1.physical_state",
                                              "infiniband.mlx5_5/1.rate", "infiniband.mlx5_4/1.rate"}
    down = area(ctx, "infiniband")["infiniband.mlx5_4/1.rate"]
    assert down.outcome is Outcome.ERROR and "Down" in down.detail  # a Down port has no negotiated rate to read
    assert area(ctx, "infiniband")["infiniband.mlx5_5/1.rate"].outcome is Outcome.FAIL


@pytest.mark.parametrize(("firmware", "outcome"), [
    ("28.41.1000", Outcome.PASS), ("28.38.1000", Outcome.FAIL),  # the baseline (ib_nic) is 28.39.1002
    ("28.39.1002.beta", Outcome.ERROR), ("rel-28_41_1000", Outcome.ERROR),  # never ordered: an error, not a pass
])
def test_ib_firmware_against_the_baseline(firmware: str, outcome: Outcome) -> None:
    s = spec(**{"network.infiniband.count": 8})
    ctx = run(s, {"ibstat": IB_ACTIVE.replace("Firmware version: 28.41.1000", f"Firmware version: {firmware}"),
                  "netdevs": ib_netdevs(8)})
    want = next(c.version for c in s.firmware if c.component == "ib_nic")
    rows = [r for r in area(ctx, "infiniband").values() if r.id.endswith(".firmware")]
    assert len(rows) == 8 and {r.outcome for r in rows} == {outcome}
    if outcome is Outcome.ERROR:
        assert all(f"cannot compare {firmware!r} with baseline {want!r}" in r.detail for r in rows)


def test_ipoib_mtu_mode_and_address() -> None:
    s = spec()
    ib = IB_ACTIVE  # 8 IB ports; ML-PROD-V4 wants 2 -> the port count fails, the netdev checks do not
    ctx = run(s, {"ibstat": ib, "netdevs": ib_netdevs(2, mtu=2044, mode="connected")})
    assert set(failed(ctx, "infiniband")) == {"infiniband.ports", "infiniband.ibp0s0.mtu", "infiniband.ibp1s0.mtu",
                                              "infiniband.ibp0s0.mode", "infiniband.ibp1s0.mode"}


def test_ethernet_from_sysfs_and_from_ibstat_fallback() -> None:
    s = spec()
    nics = netdev_text([LO, ("eno1", "ether", 1500, "pci", "1000", "-"), ("ens1f0np0", "ether", 9000, "pci", "100000", "-"),
                        ("ens1f1np1", "ether", 1500, "pci", "100000", "-"), ("eth9", "ether", 9000, None, "100000", "-")])
    ctx = run(s, {"netdevs": nics})
    eth = area(ctx, "ethernet")
    assert eth["ethernet.ports"].passed and set(failed(ctx, "ethernet")) == {"ethernet.ens1f1np1.mtu"}
    # No physical NIC: the ConnectX Ethernet ports of the some.down capture (one Active at 100, three Down).
    veth = netdev_text([LO, ("eth0", "ether", 1500, None, "10000", "-")])
    ctx = run(s, {"netdevs": veth, "ibstat": IB_SOME_DOWN})
    ports = area(ctx, "ethernet")["ethernet.ports"]
    assert not ports.passed and ports.found.startswith("1 (") and "mlx5_2/1 Down 40" in ports.found


# A catalogue server: one on-board 1 GbE port, no InfiniBand (no rdma stack, so no ibstat either).
CATALOGUE_ETH = {"network.ethernet": {"count": 1, "speed_gbps": 1}, "network.infiniband": None}
VETH = {"ifindex": 7, "link_index": 8, "ifname": "eth0", "mtu": 1500, "operstate": "UP", "link_type": "ether",
        "link_netnsid": 0, "linkinfo": {"info_kind": "veth"}, "addr_info": []}
NO_IBSTAT = (127, "", "bash: line 1: ibstat: command not found\n")


@pytest.mark.parametrize(("nics", "passed", "found"), [
    ([("eno1", "ether", 1500, "pci", "1000", "-")], True, "1 (eno1 1 Gb/s)"),
    ([("eno1", "ether", 1500, "pci", "100", "-")], False, "0 (eno1 0.1 Gb/s)"),  # a bad cable: 100 Mb/s
    ([("eno1", "ether", 1500, "pci", "10000", "-")], False, "0 (eno1 10 Gb/s)"),  # not the spec's speed either
    ([("eno1", "ether", 1500, "pci", "-1", "-")], False, "0 (eno1 no link)"),  # carrier down: speed -1
    ([("eno1", "ether", 1500, "pci", "-", "-")], False, "0 (eno1 no link)"),  # sysfs refuses to read it
    ([("eno1", "ether", 1500, None, "1000", "-")], False, "no physical NIC; ibstat: "),  # no parent bus
    ([], False, "no physical NIC; ibstat: "),  # the NIC is gone: lo only
])
def test_catalogue_ethernet_port_missing_or_slow_fails(nics: list, passed: bool, found: str) -> None:  # type: ignore[type-arg]
    ctx = run(spec(**CATALOGUE_ETH), {"netdevs": netdev_text([LO, *nics]), "ibstat": NO_IBSTAT})
    ports = area(ctx, "ethernet")["ethernet.ports"]
    assert ports.passed is passed and ports.found.startswith(found), ports.found


def test_a_veth_is_not_a_physical_port_even_at_the_right_speed() -> None:
    text = json.dumps([VETH]) + "\n@@sysfs\neth0 7 1000 -\n"
    ctx = run(spec(**CATALOGUE_ETH), {"netdevs": text, "ibstat": NO_IBSTAT})
    ports = area(ctx, "ethernet")["ethernet.ports"]
    assert not ports.passed and ports.found.startswith("no physical NIC")
    # the same link with a PCI parent and no link kind, as a real host shows its NIC, is one
    real = {k: v for k, v in VETH.items() if k not in ("linkinfo", "link_index", "link_netnsid")}
    text = json.dumps([real | {"parentbus": "pci", "parentdev": "0000:05:00.0"}]) + "\n@@sysfs\neth0 7 1000 -\n"
    ctx = run(spec(**CATALOGUE_ETH), {"netdevs": text, "ibstat": NO_IBSTAT})
    assert area(ctx, "ethernet")["ethernet.ports"].passed and failed(ctx, "ethernet") == []


# ---- md RAID ---------------------------------------------------------------------------------------
def test_raid1_md0_clean_with_root_on_it() -> None:
    ctx = run(spec(), {"mdstat": MDSTAT, "mdadm_detail": MDADM_CLEAN, "root_source": "/dev/md0\n"})
    assert failed(ctx, "raid") == [] and len(area(ctx, "raid")) == 5


def test_raid1_degraded_array_from_capture() -> None:
    ctx = run(spec(), {"mdstat": MDSTAT_FAILED, "mdadm_detail": MDADM_DEGRADED, "root_source": "/dev/md0\n"})
    assert set(failed(ctx, "raid")) == {"raid.sync", "raid.members", "raid.state"}
    raid = area(ctx, "raid")
    assert raid["raid.sync"].found == "U_" and "failed: vdb" in raid["raid.members"].found
    # node_exporter's md6 is degraded too ([U_], a member missing, none flagged failed)
    ctx = run(spec(**{"storage.boot.raid.device": "/dev/md6"}), {"mdstat": MDSTAT}, Level.QUICK)
    assert set(failed(ctx, "raid")) == {"raid.sync", "raid.members"}


@pytest.mark.parametrize(("state", "passed"), [
    ("clean", True),
    ("active", True),  # a mounted root with writes in flight: the superblock not yet marked clean
    ("active, checking", True),  # a scrub: the mirror stays whole
    ("clean, resyncing", False),
    ("active, degraded", False),
    ("active, degraded, recovering", False),
    ("clean, FAILED", False),
    ("active, Not Started", False),
    ("inactive", False),
])
def test_raid_state_clean_or_active_and_nothing_worse(state: str, passed: bool) -> None:
    """The clean capture with its State line as mdadm's Detail.c would print it for that array state."""
    detail = re.sub(r"(State :) clean", rf"\1 {state}", MDADM_CLEAN, count=1)
    assert detail != MDADM_CLEAN or state == "clean"
    ctx = run(spec(), {"mdstat": MDSTAT, "mdadm_detail": detail, "root_source": "/dev/md0\n"})
    result = area(ctx, "raid")["raid.state"]
    assert result.passed is passed and result.found == state


def test_raid_missing_array_and_overlay_root() -> None:
    s = spec(**{"storage.boot.raid.device": "/dev/md42"})
    ctx = run(s, {"mdstat": MDSTAT})
    raid = area(ctx, "raid")
    assert raid["raid.array"].found == "absent" and "raid.sync" not in raid and "raid.members" not in raid
    real = run(spec(), {"mdstat": MDSTAT, "mdadm_detail": MDADM_CLEAN, "root_source": "overlay\n"})
    assert area(real, "raid")["raid.root"].outcome is Outcome.FAIL


def test_unreadable_mdstat_still_judges_mdadm_detail() -> None:
    ctx = run(spec(), {"mdstat": (1, "", "cat: /proc/mdstat: No such file or directory"),
                       "mdadm_detail": MDADM_CLEAN, "root_source": "/dev/md0\n"})
    raid = area(ctx, "raid")
    assert {i for i, r in raid.items() if r.outcome is Outcome.ERROR} == {"raid.array", "raid.sync", "raid.members"}
    assert raid["raid.state"].passed and raid["raid.root"].passed


# ---- ZFS --------------------------------------------------------------------------------------------
ZFS_RAIDZ2 = {"storage.scratch.zfs.layout": "raidz2", "storage.scratch.zfs.vdevs": 1}


def test_zfs_degraded_pool_from_capture() -> None:
    ctx = run(spec(**ZFS_RAIDZ2), {"zpool_status": ZPOOL_DEGRADED, "zpool_get": "scratch\tashift\t12\tlocal\n",
                                   "zfs_get": ZFS_GET + "scratch\tmounted\tyes\t-\n"})
    z = area(ctx, "zfs")
    assert set(failed(ctx, "zfs")) == {"zfs.pool", "zfs.devices"}
    assert z["zfs.pool"].found == "DEGRADED" and "UNAVAIL" in z["zfs.devices"].found
    assert z["zfs.layout"].found == "raidz2" and z["zfs.recordsize"].found == "1048576"


def test_zfs_layout_and_properties_differ_from_ml_prod_v4() -> None:
    ctx = run(spec(), {"zpool_status": ZPOOL_DEGRADED, "zpool_get": "scratch\tashift\t9\tlocal\n",
                       "zfs_get": ZFS_GET.replace("lz4", "off")})
    assert {"zfs.vdevs", "zfs.layout", "zfs.ashift", "zfs.compression", "zfs.mounted"} <= set(failed(ctx, "zfs"))


def test_zfs_no_pool() -> None:
    ctx = run(spec(), {"zpool_status": (1, "", "cannot open 'scratch': no such pool\n")})
    pool = area(ctx, "zfs")["zfs.pool"]
    assert not pool.passed and "no such pool" in pool.found


# ---- NVMe -------------------------------------------------------------------------------------------
def test_nvme_count_and_smart() -> None:
    s = spec(**{"storage.boot.count": 2, "storage.scratch.count": 8})
    worn = json.loads(SMART) | {"percent_used": 95, "media_errors": 3}
    sections = {"nvme_list": NVME_LIST, "nvme_smart:/dev/nvme0n1": SMART,
                "nvme_smart:/dev/nvme1n1": json.dumps(worn)}
    ctx = run(s, sections)
    nv = area(ctx, "nvme")
    assert set(failed(ctx, "nvme")) == {"nvme.count", "nvme.nvme1n1.wear", "nvme.nvme1n1.media_errors"}
    assert nv["nvme.count"].found == "2" and nv["nvme.nvme0n1.wear"].found == "0%"
    assert nv["nvme.nvme0n1.spare"].outcome is Outcome.PASS  # QEMU: spare 0% with a 0% threshold


@pytest.mark.parametrize(
    ("used", "spare", "thresh", "wear", "spare_outcome"),
    [
        (10, 100, 10, Outcome.PASS, Outcome.PASS),
        (70, 100, 10, Outcome.PASS, Outcome.PASS),   # the warning tier itself passes
        (71, 100, 10, Outcome.WARN, Outcome.PASS),   # above warn_percentage_used 70
        (80, 25, 10, Outcome.WARN, Outcome.WARN),    # max_percentage_used 80 allows 80; spare below 30 warns
        (81, 9, 10, Outcome.FAIL, Outcome.FAIL),     # spare below the drive's own threshold fails
    ],
)
def test_nvme_wear_and_spare_tiers(used: int, spare: int, thresh: int, wear: Outcome, spare_outcome: Outcome) -> None:
    s = spec(**{"storage.nvme_health.warn_percentage_used": 70, "storage.nvme_health.warn_available_spare_pct": 30})
    log = json.loads(SMART) | {"percent_used": used, "avail_spare": spare, "spare_thresh": thresh}
    nv = area(run(s, {"nvme_list": NVME_LIST, "nvme_smart:/dev/nvme0n1": json.dumps(log)}), "nvme")
    assert (nv["nvme.nvme0n1.wear"].outcome, nv["nvme.nvme0n1.spare"].outcome) == (wear, spare_outcome)
    assert nv["nvme.nvme0n1.wear"].expected == "<= 80% (warn above 70%)"
    assert nv["nvme.nvme0n1.spare"].expected == f">= {thresh}% (warn below 30%)"


def test_nvme_warn_tier_above_the_failure_tier_is_refused() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="warn_percentage_used 90 is above max_percentage_used 80"):
        spec(**{"storage.nvme_health.warn_percentage_used": 90})


# ---- packages and services ---------------------------------------------------------------------------
def dpkg_lines(overrides: dict[str, str] | None = None, drop: str | None = None) -> str:
    rows = []
    for pin in pinned_packages(spec()):
        if pin.package == drop:
            continue
        line = f"{pin.package}\t{pin.apt_version}\thold ok installed"
        rows.append((overrides or {}).get(pin.package, line))
    return "\n".join(rows) + "\n"


def test_pinned_packages_installed_and_held() -> None:
    ctx = run(spec(), {"dpkg_query": dpkg_lines()})
    assert failed(ctx, "packages") == [] and len(area(ctx, "packages")) == 2 * len(pinned_packages(spec()))


@pytest.mark.parametrize(
    ("line", "drop", "expect"),
    [
        ("nvidia-driver\t550.90.07-1\thold ok installed", None, {"packages.nvidia-driver.version"}),
        ("nvidia-driver\t550.127.08-1\tinstall ok installed", None, {"packages.nvidia-driver.held"}),
        (None, "nvidia-driver", {"packages.nvidia-driver.version", "packages.nvidia-driver.held"}),
    ],
)
def test_package_wrong_version_unheld_or_missing(line: str | None, drop: str | None, expect: set[str]) -> None:
    text = dpkg_lines({"nvidia-driver": line} if line else None, drop)
    ctx = run(spec(), {"dpkg_query": (1 if drop else 0, text, "")})
    assert set(failed(ctx, "packages")) == expect


def test_services_one_systemctl_show() -> None:
    units = required_units(spec())
    blocks = [f"Id={u.unit}\nLoadState=loaded\nActiveState=active\nSubState=running" for u in units]
    ctx = run(spec(), {"systemctl_show": "\n\n".join(blocks) + "\n"})
    assert failed(ctx, "services") == [] and len(area(ctx, "services")) == len(units)
    blocks[0] = f"Id={units[0].unit}\nLoadState=not-found\nActiveState=inactive\nSubState=dead"
    ctx = run(spec(), {"systemctl_show": "\n\n".join(blocks) + "\n"})
    only = area(ctx, "services")[f"services.{units[0].unit.removesuffix('.service')}"]
    assert failed(ctx, "services") == [only.id] and only.found == "not-found"


# ---- nothing passes silently -------------------------------------------------------------------------------
@pytest.mark.parametrize("level", list(Level))
def test_no_facts_at_all_never_passes(level: Level) -> None:
    ctx = run(spec(), {}, level)
    assert ctx.results and not any(r.accepted for r in ctx.results)
    assert {r.outcome for r in ctx.results} <= {Outcome.ERROR, Outcome.FAIL}
    assert len({r.id for r in ctx.results}) == len(ctx.results)


def test_sysfs_of_another_namespace_is_not_trusted() -> None:
    from provision.conformance.checks.netdev import parse_netdevs

    # A container whose /sys shows the host: eth0 there has ifindex 4, the node's own eth0 is ifindex 57 (veth).
    text = json.dumps([{"ifindex": 57, "ifname": "eth0", "mtu": 1500, "link_type": "ether",
                        "linkinfo": {"info_kind": "veth"}, "addr_info": []}]) + "\n@@sysfs\neth0 4 100000 -\n"
    (dev,) = parse_netdevs(text)
    assert dev.speed_mbps is None and not dev.physical and dev.kind == "veth"


def test_kernel_release_and_uname_are_judged_each() -> None:
    twin = run(spec(), {"kernel_release": "6.1.0-28-amd64\n6.18.44-fc-v657\n"}, Level.QUICK)
    assert failed(twin, "kernel") == ["kernel.uname"] and area(twin, "kernel")["kernel.release"].passed
    host = run(spec(), {"kernel_release": "6.18.44-fc-v657\n6.18.44-fc-v657\n"}, Level.QUICK)
    assert set(failed(host, "kernel")) == {"kernel.release", "kernel.uname"}
