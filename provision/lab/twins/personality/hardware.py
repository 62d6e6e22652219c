"""The simulated server a twin presents: derived from the node spec, written as hardware.json.

Everything here is SIMULATED (lab only). Serials, UUIDs and GUIDs are deterministic per
(profile, node index) so a twin looks the same after every `lab up`. The fake tools inside the
twin read only this file (plus faults.json and the twin's dpkg state); its field names are the
contract between this module and data/tools/labstate.py.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provision.spec.model import NodeSpec

SCHEMA = 1

# (device id, subsystem id, FB MiB as nvidia-smi reports it) by product name; others are derived.
_GPU_PRODUCTS: dict[str, tuple[str, str, int]] = {
    "NVIDIA H100 80GB HBM3": ("0x233010DE", "0x16C110DE", 81559),
    "NVIDIA H100 PCIe": ("0x233110DE", "0x162610DE", 81559),
    "NVIDIA A100 80GB PCIe": ("0x20B510DE", "0x153310DE", 81920),
}
# Bus ids of the 8 GPUs of an HGX H100 board, as on the real capture (nvidia-smi 550.90.07, gpud).
_GPU_BUSES = ("19", "3B", "4C", "5D", "9B", "BB", "CB", "DB")
# HGX module ids of those slots, as nvidia-smi -q prints them (535.183.01 capture order).
_GPU_MODULES = (2, 4, 3, 1, 7, 5, 8, 6)
# NVMe models by size (TB, PCIe generation >= 5 picks the gen5 part).
_NVME_MODELS: dict[tuple[float, bool], tuple[str, str]] = {
    (1.92, False): ("SAMSUNG MZQL21T9HCJR-00A07", "GDC5602Q"),
    (7.68, True): ("SAMSUNG MZWLO7T6HBLA-00A07", "OPPA4B5Q"),
    (7.68, False): ("SAMSUNG MZQL27T6HBLA-00A07", "GDC5A02Q"),
    (3.84, False): ("SAMSUNG MZQL23T8HCLS-00A07", "GDC5602Q"),
}


class _Hw(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SystemHw(_Hw):
    manufacturer: str
    product: str
    serial: str
    uuid: str
    bios_vendor: str
    bios_version: str
    bios_date: str
    board_product: str


class CpuHw(_Hw):
    model_name: str
    vendor_id: str
    family: int
    model: int
    stepping: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    logical_cpus: int = 0
    """CPU(s) as lscpu counts them; 0: sockets x cores x threads per core (a hybrid part sets it)."""
    base_mhz: int
    max_mhz: int
    l3_kb_per_socket: int
    flags: tuple[str, ...]


class DimmHw(_Hw):
    locator: str
    bank: str
    size_gb: int
    type: str
    speed_mts: int
    manufacturer: str
    part: str
    serial: str
    ecc: bool
    registered: bool = True
    """SMBIOS Type Detail Registered (Buffered), else Unbuffered (Unregistered): the spec's memory.module."""


class GpuHw(_Hw):
    index: int
    name: str
    architecture: str
    bus_id: str
    serial: str
    uuid: str
    module_id: int
    vbios: str
    device_id: str
    subsystem_id: str
    fb_mib: int
    power_limit_w: int
    pcie_gen: int
    pcie_width: int
    nvlinks: int
    nvlink_gbs: float
    numa_node: int


class HcaHw(_Hw):
    name: str
    ca_type: str
    part_id: int
    firmware: str
    node_guid: str
    link_layer: str
    rate: int
    lid: int
    sm_lid: int
    netdev: str
    numa_node: int


class NicHw(_Hw):
    """A plain PCI Ethernet NIC (not a ConnectX): the twin presents its own link `name` as this device."""

    name: str
    pci_address: str
    driver: str
    speed_mbps: int


class NvmeHw(_Hw):
    name: str
    controller: str
    role: str
    model: str
    serial: str
    firmware: str
    size_bytes: int
    by_id: str


class BootRaidHw(_Hw):
    device: str
    level: str
    members: tuple[str, ...]
    blocks: int
    uuid: str


class ZpoolSpecHw(_Hw):
    """What the scratch pool should be (the fake zpool does not use it; conformance does)."""

    name: str
    layout: str
    mountpoint: str


class Hardware(_Hw):
    """The whole simulated server; serialised to hardware.json."""

    schema_version: int = SCHEMA
    profile: str
    node_index: int
    system: SystemHw
    cpu: CpuHw
    memory_total_kb: int
    dimms: tuple[DimmHw, ...]
    gpus: tuple[GpuHw, ...]
    gpu_fabric: bool
    hcas: tuple[HcaHw, ...]
    nics: tuple[NicHw, ...] = ()
    """Plain Ethernet NICs (ports slower than CONNECTX_MIN_GBPS); faster ports are Ethernet-mode ConnectX HCAs."""
    nvme: tuple[NvmeHw, ...]
    boot_raid: BootRaidHw | None
    """None: the profile has no boot mirror (no md array, /proc/mdstat lists none)."""
    scratch: ZpoolSpecHw | None
    """None: the profile has no scratch set (no scratch drives, no pool)."""
    kernel_release: str
    driver_apt_version: str | None
    """None: the profile has no GPUs and pins no NVIDIA driver."""

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(self.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")


def _digest(*parts: object) -> str:
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()


def _uuid(*parts: object) -> str:
    h = _digest(*parts)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _decimal(digits: int, *parts: object) -> str:
    return str(int(_digest(*parts), 16))[:digits]


def _alnum(digits: int, *parts: object) -> str:
    return _digest(*parts)[:digits].upper()


def _firmware(spec: NodeSpec, component: str, default: str) -> str:
    return next((f.version for f in spec.firmware if f.component == component), default)


def _system(spec: NodeSpec, seed: str) -> SystemHw:
    if spec.gpu is None or spec.cpu.sockets == 1:  # a catalogue server: one socket, a tower/1U board
        return _single_socket_system(spec, seed)
    return SystemHw(
        manufacturer="Supermicro",
        product="SYS-821GE-TNHR" if spec.gpu.form_factor == "SXM" else "SYS-421GE-TNRT",
        serial="S" + _decimal(9, seed, "system"),
        uuid=_uuid(seed, "system-uuid"),
        bios_vendor="American Megatrends International, LLC.",
        bios_version=_firmware(spec, "bios", "2.1"),
        bios_date="05/20/2024",
        board_product="X13DEG-OAD" if spec.gpu.form_factor == "SXM" else "X13DEG-QT",
    )


# Boards of the catalogue's single-socket servers (a plausible board per CPU family; the seed names none).
_BOARDS = {"intel": ("Supermicro", "SYS-510T-MR", "X13SAE"), "amd": ("Supermicro", "AS-1015A-MT", "H13SAE-MF"),
           "epyc": ("Supermicro", "AS-1014S-WTRT", "H12SSL-i")}


def _single_socket_system(spec: NodeSpec, seed: str) -> SystemHw:
    kind = "epyc" if "EPYC" in spec.cpu.model.upper() else spec.cpu.vendor
    maker, product, board = _BOARDS[kind]
    return SystemHw(manufacturer=maker, product=product, serial="S" + _decimal(9, seed, "system"),
                    uuid=_uuid(seed, "system-uuid"), bios_vendor="American Megatrends International, LLC.",
                    bios_version=_firmware(spec, "bios", "2.1"), bios_date="05/20/2024", board_product=board)


def _cpu(spec: NodeSpec, flags: tuple[str, ...]) -> CpuHw:
    c = spec.cpu
    merged = flags + tuple(f for f in c.isa_flags if f not in flags)
    intel = c.vendor == "intel"
    return CpuHw(
        model_name=c.model,
        vendor_id="GenuineIntel" if intel else "AuthenticAMD",
        family=6 if intel else 25,
        model=207 if intel else 17,
        stepping=2 if intel else 1,
        sockets=c.sockets,
        cores_per_socket=c.cores_per_socket,
        threads_per_core=c.threads_per_core,
        logical_cpus=c.total_threads,
        base_mhz=round(c.base_clock_ghz * 1000),
        max_mhz=3900 if intel else 3700,
        l3_kb_per_socket=c.l3_cache_mb_per_socket * 1024,
        flags=merged,
    )


def _dimms(spec: NodeSpec, seed: str) -> tuple[DimmHw, ...]:
    """The spec's population (sockets x channels x DIMMs per channel), named as a Supermicro X13 names it:
    `P1-DIMMA1`, bank `P0_Node0_Channel0_Dimm0` (Node: the socket's memory controller, 4 channels each;
    tests/fixtures/dmidecode/linuxhw/dmidecode.supermicro-x13dei.*)."""
    m = spec.memory
    out = []
    slots = [(s, c, d) for s in range(spec.cpu.sockets) for c in range(m.channels_per_socket)
             for d in range(m.dimms_per_channel)]
    for i, (socket, channel, dimm) in enumerate(slots[:m.dimm_count]):
        out.append(
            DimmHw(
                locator=f"P{socket + 1}-DIMM{'ABCDEFGHIJKLMNOP'[channel % 16]}{dimm + 1}",
                bank=f"P{socket}_Node{channel // 4}_Channel{channel % 4}_Dimm{dimm}",
                size_gb=m.dimm_size_gb,
                type=m.type,
                speed_mts=m.min_speed_mts,
                manufacturer="Samsung",
                part="M321R8GA0BB0-CQKZJ" if m.type == "DDR5" else "M393A8G40AB2-CWE",
                serial=_alnum(8, seed, "dimm", i),
                ecc=m.ecc,
                registered=m.module != "UDIMM",
            )
        )
    return tuple(out)


def _gpus(spec: NodeSpec, seed: str) -> tuple[GpuHw, ...]:
    g = spec.gpu
    if g is None:  # no gpu section: the twin presents no GPU
        return ()
    dev, sub, fb = _GPU_PRODUCTS.get(g.model, ("0x233010DE", "0x16C110DE", g.memory_gb * 1024))
    out = []
    for i in range(g.count):
        bus = _GPU_BUSES[i] if i < len(_GPU_BUSES) else f"{0x19 + 0x10 * i:02X}"
        out.append(
            GpuHw(
                index=i,
                name=g.model,
                architecture=g.architecture,
                bus_id=f"00000000:{bus}:00.0",
                serial="165" + _decimal(10, seed, "gpu-serial", i),
                uuid="GPU-" + _uuid(seed, "gpu", i),
                module_id=_GPU_MODULES[i] if i < len(_GPU_MODULES) else i + 1,
                vbios=_firmware(spec, "gpu", "96.00.9F.00.04"),
                device_id=dev,
                subsystem_id=sub,
                fb_mib=fb,
                power_limit_w=g.power_limit_w,
                pcie_gen=g.pcie.generation,
                pcie_width=g.pcie.width,
                nvlinks=g.nvlink.links_per_gpu if g.nvlink else 0,
                nvlink_gbs=g.nvlink.link_speed_gbs if g.nvlink else 0.0,
                numa_node=0 if i < max(1, g.count // 2) else 1,
            )
        )
    return tuple(out)


def _guid(seed: str, *parts: object) -> str:
    return "0x" + "a088c203" + _digest(seed, "guid", *parts)[:8]


def _hcas(spec: NodeSpec, seed: str) -> tuple[HcaHw, ...]:
    out = []
    ib = spec.network.infiniband
    ib_count = ib.count if ib else 0
    for i in range(ib_count):
        assert ib is not None
        out.append(
            HcaHw(
                name=f"mlx5_{i}",
                ca_type="MT4129",
                part_id=4129,
                firmware=_firmware(spec, "ib_nic", "28.39.1002"),
                node_guid=_guid(seed, "ib", i),
                link_layer=ib.link_layer,
                rate=ib.rate_gbps,
                lid=100 + 16 * i + 1,
                sm_lid=1,
                netdev=f"ibp{0x19 + i * 0x80:x}s0",
                numa_node=0 if i < max(1, ib_count // 2) else 1,
            )
        )
    eth = spec.network.ethernet
    for j in range(eth.count if eth.speed_gbps >= CONNECTX_MIN_GBPS else 0):
        out.append(
            HcaHw(
                name=f"mlx5_{ib_count + j}",
                ca_type="MT4125",
                part_id=4125,
                firmware="22.39.1002",
                node_guid=_guid(seed, "eth", j),
                link_layer="Ethernet",
                rate=eth.speed_gbps,
                lid=0,
                sm_lid=0,
                netdev=f"enp{0x2a + j}s0f0np0",
                numa_node=0,
            )
        )
    return tuple(out)


# The slowest ConnectX Ethernet port (ConnectX-6 Lx/Dx: 10/25 GbE and up). A slower spec'd port is an on-board
# NIC: an Intel I210 (igb), as on the catalogue's Supermicro boards.
CONNECTX_MIN_GBPS = 10
TWIN_LINK = "eth0"  # the twin's one real network interface (provision/lab/twins/netns.py)


def _nics(spec: NodeSpec) -> tuple[NicHw, ...]:
    """The on-board NIC the twin's own link stands for. A twin has ONE link: a spec with more slow ports than
    one shows only the first (ethernet.ports then fails, as it would on a server with a dead port)."""
    eth = spec.network.ethernet
    if eth.speed_gbps >= CONNECTX_MIN_GBPS:
        return ()
    return (NicHw(name=TWIN_LINK, pci_address="0000:05:00.0", driver="igb", speed_mbps=eth.speed_gbps * 1000),)


def _nvme_model(size_tb: float, gen5: bool) -> tuple[str, str]:
    return _NVME_MODELS.get((size_tb, gen5)) or _NVME_MODELS.get((size_tb, False)) or (
        f"LAB NVMe {size_tb}TB",
        "LAB00001",
    )


def _nvme(spec: NodeSpec, seed: str) -> tuple[NvmeHw, ...]:
    boot, scratch = spec.storage.boot, spec.storage.scratch
    sets = [("boot", boot.count, boot.size_tb, False)]
    if scratch is not None:
        sets.append(("scratch", scratch.count, scratch.size_tb, scratch.pcie_generation >= 5))
    out, n = [], 0
    for role, count, size_tb, gen5 in sets:
        model, fw = _nvme_model(size_tb, gen5)
        for _ in range(count):
            serial = "S" + _alnum(13, seed, "nvme", n)
            out.append(
                NvmeHw(
                    name=f"nvme{n}n1",
                    controller=f"nvme{n}",
                    role=role,
                    model=model,
                    serial=serial,
                    firmware=fw,
                    size_bytes=int(size_tb * 1e12) // 4096 * 4096,
                    by_id=f"nvme-{model.replace(' ', '_')}_{serial}",
                )
            )
            n += 1
    return tuple(out)


def _boot_raid(spec: NodeSpec, nvme: tuple[NvmeHw, ...], seed: str) -> BootRaidHw | None:
    raid = spec.storage.boot.raid
    if raid is None:
        return None
    members = tuple(f"{d.name}p2" for d in nvme if d.role == "boot")
    size_kb = int(spec.storage.boot.size_tb * 1e12 / 1024) - 1_100_000
    return BootRaidHw(
        device=raid.device,
        level=raid.level,
        members=members,
        blocks=size_kb // 64 * 64,
        uuid=_digest(seed, "md")[:32],
    )


def hardware_from_spec(spec: NodeSpec, index: int, cpu_flags: tuple[str, ...]) -> Hardware:
    """The simulated server for node `index` of a spec (pure)."""
    seed = f"{spec.profile}/{index}"
    nvme = _nvme(spec, seed)
    z = spec.storage.scratch.zfs if spec.storage.scratch is not None else None
    return Hardware(
        profile=spec.profile,
        node_index=index,
        system=_system(spec, seed),
        cpu=_cpu(spec, cpu_flags),
        # Firmware and the kernel keep ~1.6 % of RAM: MemTotal a little under the DIMM total.
        memory_total_kb=int(spec.memory.total_gb * 1024 * 1024 * 0.984),
        dimms=_dimms(spec, seed),
        gpus=_gpus(spec, seed),
        gpu_fabric=spec.gpu is not None and spec.gpu.fabric_manager,
        hcas=_hcas(spec, seed),
        nics=_nics(spec),
        nvme=nvme,
        boot_raid=_boot_raid(spec, nvme, seed),
        scratch=ZpoolSpecHw(name=z.pool, layout=z.layout, mountpoint=z.mountpoint) if z is not None else None,
        kernel_release=spec.software.kernel.release,
        driver_apt_version=spec.software.nvidia_driver.apt_version if spec.software.nvidia_driver else None,
    )
