"""Inventory of each whole capture (tests/fixtures/redfish/full), served by the loopback BMC, and regressions for
the places the reader used to miss. Expected figures were read from the capture files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from capture_facts import CAPTURES, facts
from full_captures import full_tree
from rf_fakebmc import FakeBmc, Served
from rf_support import connect

from provision.redfish import resources as r
from provision.redfish.ops.drift import drift
from provision.redfish.ops.inventory import NodeInventory, observe
from provision.spec import load_fleet

ROOT = Path(__file__).resolve().parents[3]


def _observe(t: dict[str, Any]) -> NodeInventory:
    with Served(FakeBmc(tree=t)) as srv:
        return observe(connect(srv))


@pytest.fixture(scope="module")
def spec():  # type: ignore[no-untyped-def]
    return load_fleet(ROOT / "inventory" / "hosts.yml").hosts["node01"].spec


@pytest.fixture(scope="module")
def full() -> dict[str, NodeInventory]:
    return {name: _observe(full_tree(name)) for name in CAPTURES}


# capture: vendor, cpu model, cores, cpus, dimms (GiB each), drives (NVMe of them), psus (W), gpus (model, GiB)
EXPECTED: dict[str, dict[str, Any]] = {
    "hpe": dict(vendor="hpe", cpu="AMD EPYC 7763 64-Core Processor", cores=64, cpus=2, dimms=16, dimm_gib=64,
                dimm_type="DDR4", drives=18, nvme=16, psus=2, psu_w=1600, gpus=0, gpu=None, gpu_gib=None),
    "lenovo": dict(vendor="lenovo", cpu="Intel(R) Xeon(R) Platinum 8362 CPU @ 2.80GHz", cores=32, cpus=2, dimms=16,
                   dimm_gib=64, dimm_type="DDR4", drives=4, nvme=4, psus=4, psu_w=2400, gpus=8, gpu="NVIDIA L40",
                   gpu_gib=None),
    "nvidia_gh200": dict(vendor="nvidia_hgx", cpu="Grace A02", cores=72, cpus=2, dimms=2, dimm_gib=480,
                         dimm_type=None, drives=0, nvme=0, psus=0, psu_w=None, gpus=2, gpu="NVIDIA GH200 96GB HBM3",
                         gpu_gib=96),
    "supermicro": dict(vendor="supermicro", cpu="Intel(R) Xeon(R) Platinum 8462Y+", cores=32, cpus=2, dimms=32,
                       dimm_gib=64, dimm_type="DDR5", drives=8, nvme=8, psus=8, psu_w=None, gpus=8,
                       gpu="H100 80GB HBM3", gpu_gib=80),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_full_capture_inventory(full: dict[str, NodeInventory], name: str) -> None:
    inv, want = full[name], EXPECTED[name]
    assert inv.vendor == want["vendor"]
    assert [c.model for c in inv.cpus] == [want["cpu"]] * want["cpus"]
    assert {c.total_cores for c in inv.cpus} == {want["cores"]}
    dimms = [m for m in inv.memory if m.populated]
    assert len(dimms) == want["dimms"] and {round((m.capacity_mib or 0) / 1024) for m in dimms} == {want["dimm_gib"]}
    assert {m.memory_device_type for m in dimms} == {want["dimm_type"]}
    assert len(inv.drives) == want["drives"] and len([d for d in inv.drives if d.is_nvme]) == want["nvme"]
    # Supermicro's backplane drives state no Protocol of their own: their Storage's controllers attach only NVMe
    # (StorageControllers[].SupportedDeviceProtocols), so they are NVMe; a drive nothing says more of is unknown
    assert len([d for d in inv.drives if not d.protocol_known]) == want["drives"] - want["nvme"] - (
        2 if name == "hpe" else 0)  # HPE's two SATA boot drives
    psus = [p for pw in inv.power for p in pw.power_supplies if p.present]
    assert len(psus) == want["psus"]
    if want["psu_w"]:
        assert {p.power_capacity_watts for p in psus} == {want["psu_w"]}
    assert len(inv.gpus) == want["gpus"]
    if want["gpus"]:
        assert {g.model for g in inv.gpus} == {want["gpu"]}
        assert {g.memory_gib for g in inv.gpus} == {want["gpu_gib"]}


# ---- every whole capture against facts read from its files by an independent reader (capture_facts) -------
# Headline figures of the reader itself, so that a reader that finds nothing cannot make the comparison pass:
# HPE lists 16 NVMe + 2 SATA drives and 2 PSUs; Lenovo 4 PSUs (in Power and again in PowerSubsystem) and 8 GPUs;
# Supermicro 8 drives under its backplane chassis and again as SimpleStorage devices; the DPU 6 Ethernet ports.
# DMTF's public mockups (Redfish-Publications): the tower 10 present drives of 18 slots (8 Absent), 2 PSUs,
# 2 GPUs, 2 firmware entries; localstorage 4 drives listed in Storage and again under the chassis, no firmware
# inventory; the liquid-cooled server 2 SimpleStorage devices of 4 bays, 3 firmware members (a fourth entry on
# disk, AC-RoT0, is not a member); catfish a system with nothing of the kind.
READER = {"hpe": dict(drives=18, psus=2, gpus=0, firmware=True), "lenovo": dict(drives=4, psus=4, gpus=8, firmware=True),
          "supermicro": dict(drives=8, psus=8, gpus=8, firmware=True),
          "nvidia_dpu": dict(drives=0, psus=0, gpus=0, firmware=True),
          "nvidia_gbswitch": dict(drives=0, psus=0, gpus=0, firmware=True),
          "nvidia_gh200": dict(drives=0, psus=0, gpus=2, firmware=True),
          "dmtf_tower": dict(drives=10, psus=2, gpus=2, firmware=True),
          "dmtf_localstorage": dict(drives=4, psus=1, gpus=0, firmware=False),
          "dmtf_liquid_cooled_server": dict(drives=2, psus=1, gpus=0, firmware=True),
          "dmtf_catfish": dict(drives=0, psus=0, gpus=0, firmware=False)}


@pytest.mark.parametrize("name", CAPTURES)
def test_the_reader_reads_the_capture(name: str) -> None:
    f, want = facts(name), READER[name]
    assert (f.drives, f.psus, f.gpus) == (want["drives"], want["psus"], want["gpus"])
    assert bool(f.firmware and any(v[0] for v in f.firmware.values())) is want["firmware"]
    assert facts("nvidia_dpu").ports["Ethernet"] == 6 and facts("hpe").ports["InfiniBand"] == 2
    assert len(facts("dmtf_liquid_cooled_server").firmware) == 3


@pytest.mark.parametrize("name", CAPTURES)
def test_inventory_counts_are_the_capture_s(full: dict[str, NodeInventory], name: str) -> None:
    """Drives, PSUs, NIC ports, CPUs, GPUs and firmware entries of each whole capture, against its files."""
    f, inv = facts(name), full[name]
    assert inv.unreadable == []
    assert len(inv.drives) == f.drives
    assert {d.serial_number.strip().upper() for d in inv.drives if d.serial_number} == f.drive_serials
    assert len([p for pw in inv.power for p in pw.power_supplies if p.present]) == f.psus
    assert inv.ports.model_dump() == {"ethernet": f.ports["Ethernet"], "infiniband": f.ports["InfiniBand"],
                                      "other": f.ports["other"], "unknown": f.ports["unknown"]}
    assert tuple(c.model for c in inv.cpus) == f.cpus
    assert len(inv.gpus) == f.gpus
    assert {e.id: (e.version, e.status.state if e.status else None) for e in inv.firmware} == f.firmware


def test_supermicro_psu_ratings(full: dict[str, NodeInventory]) -> None:
    """Six PWS-3K06G-2R at 3000 W and two PWS-DF009-2F that report no rating (as captured)."""
    psus = [p for pw in full["supermicro"].power for p in pw.power_supplies if p.present]
    assert sorted(p.power_capacity_watts or 0 for p in psus) == [0, 0] + [3000] * 6


def test_gh200_host_system_and_gpus_on_the_baseboard(full: dict[str, NodeInventory]) -> None:
    inv = full["nvidia_gh200"]
    assert inv.system.uri == "/redfish/v1/Systems/System_0"  # the host, not HGX_Baseboard_0 (listed second)
    assert all(c.uri.startswith("/redfish/v1/Systems/System_0/") for c in inv.cpus)
    assert [g.uri for g in inv.gpus] == [f"/redfish/v1/Systems/HGX_Baseboard_0/Processors/GPU_{i}" for i in range(2)]
    assert {g.source for g in inv.gpus} == {"processors"}


def test_gh200_temperatures_from_thermal_subsystem(full: dict[str, NodeInventory]) -> None:
    temps = [t for th in full["nvidia_gh200"].thermal for t in th.temperatures]
    assert temps and all(t.name for t in temps)
    assert any(t.reading_celsius is not None for t in temps)


def test_memory_location_kept(full: dict[str, NodeInventory]) -> None:
    locs = [m.memory_location for m in full["hpe"].memory if m.populated]
    assert all(loc is not None for loc in locs)
    assert {loc.socket for loc in locs if loc} == {1, 2}
    first = next(m for m in full["supermicro"].memory if m.populated)
    assert first.memory_location == r.MemoryLocation(Socket=0, MemoryController=0, Channel=0, Slot=0)


def test_lenovo_gpus_are_processors_named_by_their_pcie_board(full: dict[str, NodeInventory]) -> None:
    """Regression: XCC's GPU Processors have no Model (it was None, drift said "?"); the linked board names it."""
    inv = full["lenovo"]
    assert {g.source for g in inv.gpus} == {"processors"} and {g.model for g in inv.gpus} == {"NVIDIA L40"}


# ---- regressions: places the reader missed ---------------------------------------------------------
def _without(t: dict[str, Any], uri: str, *keys: str) -> dict[str, Any]:
    t[uri] = {k: v for k, v in t[uri].items() if k not in keys}
    return t


def test_drives_only_under_simple_storage() -> None:
    t = _without(full_tree("supermicro"), "/redfish/v1/Systems/1", "Storage")
    t = _without(t, "/redfish/v1/Chassis/NVMeSSD.0.Group.0.StorageBackplane", "Drives")
    inv = _observe(t)
    assert len(inv.drives) == 8 and all("#/Devices/" in d.uri for d in inv.drives)


def test_psus_only_under_power_subsystem() -> None:
    inv = _observe(_without(full_tree("lenovo"), "/redfish/v1/Chassis/1", "Power"))
    psus = [p for pw in inv.power for p in pw.power_supplies]
    assert len(psus) == 4 and {p.power_capacity_watts for p in psus} == {2400}
    groups = [g for pw in inv.power for g in pw.redundancy]
    assert [(g.mode, g.min_num_needed, g.max_num_supported) for g in groups] == [("NPlusM", 2, 4)]


def test_power_reading_from_environment_metrics_when_only_power_subsystem() -> None:
    """XCC without the legacy Power resource: the node's draw is the PSU chassis' EnvironmentMetrics PowerWatts
    (700 W in the capture, beside PowerControl's 708 W), never lost; the GPU chassis' readings are not taken."""
    inv = _observe(_without(full_tree("lenovo"), "/redfish/v1/Chassis/1", "Power"))
    readings = [(pc.name, pc.power_consumed_watts) for pw in inv.power for pc in pw.power_control]
    assert readings == [("EnvironmentMetrics", 700.0)]
    gh200 = _observe(full_tree("nvidia_gh200"))
    assert [pc for pw in gh200.power for pc in pw.power_control] == []  # no PSU chassis reports a node draw


def test_thermal_only_under_thermal_subsystem() -> None:
    inv = _observe(_without(full_tree("lenovo"), "/redfish/v1/Chassis/1", "Thermal"))
    fans = [f for th in inv.thermal for f in th.fans]
    temps = [t for th in inv.thermal for t in th.temperatures]
    assert len(fans) == 10 and all(f.reading_units == "RPM" and f.reading for f in fans)
    assert temps and any(t.physical_context == "CPU" for t in temps)


def test_nvme_drives_reported_as_pcie_ssd(spec) -> None:  # type: ignore[no-untyped-def]
    t = full_tree("lenovo")
    for uri, res in t.items():
        if "/Drives/Drive." in uri:
            t[uri] = {**res, "Protocol": "PCIe", "MediaType": "SSD"}
    inv = _observe(t)
    assert len(inv.drives) == 4 and all(d.is_nvme for d in inv.drives)
    item = next(i for i in drift(spec, inv).items if i.key == "storage.nvme_drives")
    assert item.observed == "4"
    assert not r.Drive(Protocol="PCIe", MediaType="HDD").is_nvme and not r.Drive(Protocol="SATA").is_nvme


def test_cpu_model_only_in_processor_id(spec) -> None:  # type: ignore[no-untyped-def]
    t = full_tree("supermicro")
    for uri in ("/redfish/v1/Systems/1/Processors/1", "/redfish/v1/Systems/1/Processors/2"):
        t = _without(t, uri, "Model")
    inv = _observe(t)
    assert [c.identity for c in inv.cpus] == ["GenuineIntel family 0x6 model 0x8F stepping 0x8"] * 2
    item = next(i for i in drift(spec, inv).items if i.key == "cpu.model")
    assert item.verdict == "unknown" and "GenuineIntel family 0x6 model 0x8F" in item.observed and "?" not in item.observed


def test_amd_identity_from_processor_id() -> None:
    raw = full_tree("hpe")["/redfish/v1/Systems/1/Processors/1"]
    cpu = r.Processor.parse({k: v for k, v in raw.items() if k != "Model"})
    assert cpu.model is None and cpu.identity == "Advanced Micro Devices, Inc. family 107 model 1 stepping 1"


def test_gpu_model_only_on_its_pcie_device() -> None:
    """A GPU Processor without Model whose linked PCIe device is not under Chassis/1 is still named when the
    device was read; with no board it stays unnamed (never another card's name)."""
    t = full_tree("lenovo")
    inv = _observe(t)
    by_uri = {g.uri: g.model for g in inv.gpus}
    assert by_uri["/redfish/v1/Systems/1/Processors/GPU1"] == "NVIDIA L40"
    gpu = r.Processor.parse(t["/redfish/v1/Systems/1/Processors/GPU1"])
    assert gpu.model is None and gpu.pcie_device_uri == "/redfish/v1/Chassis/1/PCIeDevices/slot_3"


def test_default_lab_node_reads_no_new_places() -> None:
    """The complete lab node (Supermicro tree filled to ML-PROD-V4) links Storage, SimpleStorage, Power and
    Thermal: the *Subsystem resources it does not link are never fetched; SimpleStorage is (drives are counted
    across every place that lists them), and the request count stays bounded (23 before SimpleStorage was read,
    with this loopback BMC's one-level $expand; the linked SimpleStorage is not in the tree: 404 with and without
    $expand; one more for the Manager the platform identity names)."""
    from provision.lab.bmcsim.config import TREES_DIR, Parts
    from provision.lab.bmcsim.fill import complete
    from provision.lab.bmcsim.tree import load_dir

    res = load_dir(TREES_DIR / "supermicro")
    complete(res, Parts())
    bmc = FakeBmc(tree={k.rstrip("/") or "/": v for k, v in res.items()})
    with Served(bmc) as srv:
        inv = observe(connect(srv))
    paths = [s.path for s in bmc.seen if s.method == "GET"]
    assert not [p for p in paths if any(x in p for x in ("PowerSubsystem", "ThermalSubsystem"))]
    assert paths.count("/redfish/v1/Systems/1/SimpleStorage") <= 2
    assert inv.requests <= 26 and len(inv.gpus) == 8 and len(inv.drives) == 10
