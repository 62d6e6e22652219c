"""Drift (the inventory plan) is pure: tables of inventories against the ML-PROD-V4 spec."""

from __future__ import annotations

from pathlib import Path

import pytest
from rf_fakebmc import FakeBmc, Served
from rf_support import connect, tree

from provision.redfish import resources as r
from provision.redfish.ops.drift import drift
from provision.redfish.ops.inventory import Adapter, NodeInventory, observe
from provision.redfish.vendors import GpuView
from provision.spec import load_fleet

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def spec():  # type: ignore[no-untyped-def]
    return load_fleet(ROOT / "inventory" / "hosts.yml").hosts["node01"].spec


def _inv(**kw: object) -> NodeInventory:
    cpu = r.Processor(Id="1", ProcessorType="CPU", Model="Intel(R) Xeon(R) Platinum 8592+", TotalCores=64)
    gpu = GpuView(uri="/g", model="H100 80GB HBM3", serial_number=None, firmware_version=None, memory_gib=80,
                  source="pcie")
    dimm = r.Memory(Id="d", CapacityMiB=65536, MemoryDeviceType="DDR5")
    boot = r.Drive(Id="b", CapacityBytes=1_920_383_410_176, Protocol="NVMe")
    scratch = r.Drive(Id="s", CapacityBytes=7_681_501_126_656, Protocol="NVMe")
    eth = Adapter(adapter=r.NetworkAdapter(Id="e"), ports=[r.NetworkPort(LinkNetworkTechnology="Ethernet")])
    ib = Adapter(adapter=r.NetworkAdapter(Id="i"), ports=[r.NetworkPort(LinkNetworkTechnology="InfiniBand")])
    psu = r.PowerSupply(PowerCapacityWatts=3200, Status={"State": "Enabled"})
    base: dict[str, object] = dict(
        vendor="generic", system=r.ComputerSystem(), cpus=[cpu, cpu], gpus=[gpu] * 8, memory=[dimm] * 32,
        drives=[boot] * 2 + [scratch] * 8, storage=[], pcie_devices=[], adapters=[eth, eth, ib, ib],
        power=[r.Power(PowerSupplies=[psu, psu])], thermal=[], firmware=[],
    )
    base.update(kw)
    return NodeInventory.model_validate(base)


def test_matching_inventory_has_no_drift(spec) -> None:  # type: ignore[no-untyped-def]
    report = drift(spec, _inv())
    assert report.drifted == [] and all(i.verdict == "ok" for i in report.items)


@pytest.mark.parametrize(("change", "key"), [
    ({"gpus": []}, "gpu.count"),
    ({"memory": [r.Memory(Id="d", CapacityMiB=65536, MemoryDeviceType="DDR5")] * 31}, "memory.dimm_count"),
    ({"cpus": [r.Processor(ProcessorType="CPU", Model="Intel(R) Xeon(R) Gold 6354", TotalCores=18)] * 2},
     "cpu.model"),
    ({"drives": [r.Drive(CapacityBytes=7_681_501_126_656, Protocol="NVMe")] * 9}, "storage.boot.count"),
    ({"power": [r.Power(PowerSupplies=[r.PowerSupply(PowerCapacityWatts=3200)])]}, "power.psu_count"),
])
def test_each_difference_is_named(spec, change: dict, key: str) -> None:  # type: ignore[no-untyped-def]
    assert key in {i.key for i in drift(spec, _inv(**change)).drifted}


def test_unknown_when_bmc_does_not_say(spec) -> None:  # type: ignore[no-untyped-def]
    report = drift(spec, _inv(adapters=[], drives=[r.Drive(Protocol="NVMe")] * 10))
    verdicts = {i.key: i.verdict for i in report.items}
    assert verdicts["network.infiniband.count"] == "unknown" and verdicts["storage.boot.count"] == "unknown"


def test_supermicro_capture_inventory(spec) -> None:  # type: ignore[no-untyped-def]
    with Served(FakeBmc(tree=tree("supermicro"))) as srv:
        inv = observe(connect(srv))
    assert inv.vendor == "supermicro"
    assert len(inv.gpus) == 8 and {g.source for g in inv.gpus} == {"pcie"}
    assert [c.model for c in inv.cpus] == ["Intel(R) Xeon(R) Platinum 8462Y+"] * 2
    verdicts = {i.key: i.verdict for i in drift(spec, inv).items}
    assert verdicts["gpu.count"] == "ok" and verdicts["cpu.model"] == "drift"  # the capture has 8462Y+


# ---- comparison kinds (exact | minimum) ------------------------------------------------------------
def _with(spec, **comparisons: str):  # type: ignore[no-untyped-def]
    from provision.spec.model import NodeSpec

    return NodeSpec.model_validate({**spec.model_dump(mode="json"), "comparisons": comparisons})


def test_psu_watts_is_a_minimum_by_default(spec) -> None:  # type: ignore[no-untyped-def]
    bigger = r.Power(PowerSupplies=[r.PowerSupply(PowerCapacityWatts=3600, Status={"State": "Enabled"})] * 2)
    items = {i.key: i for i in drift(spec, _inv(power=[bigger])).items}
    assert items["power.psu_watts"].kind == "minimum" and items["power.psu_watts"].verdict == "ok"
    assert items["power.psu_watts"].expected == ">= 3200"
    smaller = r.Power(PowerSupplies=[r.PowerSupply(PowerCapacityWatts=2400, Status={"State": "Enabled"})] * 2)
    assert "power.psu_watts" in {i.key for i in drift(spec, _inv(power=[smaller])).drifted}


def test_exact_figures_stay_exact(spec) -> None:  # type: ignore[no-untyped-def]
    items = {i.key: i for i in drift(spec, _inv(gpus=_inv().gpus * 2)).items}  # 16 GPUs where 8 are specified
    assert items["gpu.count"].kind == "exact" and items["gpu.count"].verdict == "drift"
    assert {i.kind for i in items.values() if i.key != "power.psu_watts"} == {"exact"}


def test_profile_may_make_a_count_a_minimum(spec) -> None:  # type: ignore[no-untyped-def]
    three = r.Power(PowerSupplies=[r.PowerSupply(PowerCapacityWatts=3200, Status={"State": "Enabled"})] * 3)
    assert "power.psu_count" in {i.key for i in drift(spec, _inv(power=[three])).drifted}
    relaxed = _with(spec, **{"power.psu_count": "minimum"})
    item = next(i for i in drift(relaxed, _inv(power=[three])).items if i.key == "power.psu_count")
    assert (item.kind, item.verdict, item.expected) == ("minimum", "ok", ">= 2")


@pytest.mark.parametrize(("comparisons", "message"), [
    ({"power.psu_colour": "minimum"}, "unknown comparison figure"),
    ({"cpu.model": "minimum"}, "names, not figures"),
    ({"power.psu_watts": "at-least"}, "Input should be 'exact' or 'minimum'"),
])
def test_bad_comparisons_refused(spec, comparisons: dict, message: str) -> None:  # type: ignore[no-untyped-def]
    from pydantic import ValidationError

    from provision.spec.model import NodeSpec

    data = spec.model_dump(mode="json")
    data["comparisons"] = comparisons
    with pytest.raises(ValidationError, match=message):
        NodeSpec.model_validate(data)


def test_every_drift_item_has_a_default_kind(spec) -> None:  # type: ignore[no-untyped-def]
    from provision.spec.acceptance import COMPARISONS

    assert {i.key for i in drift(spec, _inv()).items} == set(COMPARISONS)


def _one_size(spec, boot: int, scratch: int):  # type: ignore[no-untyped-def]
    """The spec with boot and scratch on one drive size (7.68 TB), as the SYS-821GE-TNHR capture's bays."""
    st = spec.storage
    zfs = st.scratch.zfs.model_copy(update={"vdevs": scratch})
    storage = st.model_copy(update={"boot": st.boot.model_copy(update={"size_tb": 7.68, "count": boot}),
                                    "scratch": st.scratch.model_copy(update={"count": scratch, "zfs": zfs})})
    return spec.model_copy(update={"storage": storage})


@pytest.mark.parametrize(("drives", "verdict"), [(8, "ok"), (7, "drift"), (9, "drift")])
def test_one_drive_size_for_boot_and_scratch_counts_both_roles_together(
        spec, drives: int, verdict: str) -> None:  # type: ignore[no-untyped-def]
    one = _one_size(spec, 2, 6)
    bay = r.Drive(CapacityBytes=7_681_501_126_656, Protocol="NVMe")
    items = {i.key: i for i in drift(one, _inv(drives=[bay] * drives)).items}
    for key in ("storage.boot.count", "storage.scratch.count"):
        assert items[key].verdict == verdict, items[key]
        assert items[key].observed == str(drives) and "counted together" in items[key].expected


def test_distinct_sizes_still_count_each_role(spec) -> None:  # type: ignore[no-untyped-def]
    scratch = r.Drive(CapacityBytes=7_681_501_126_656, Protocol="NVMe")
    items = {i.key: i for i in drift(spec, _inv(drives=[scratch] * 10)).items}
    assert items["storage.boot.count"].verdict == "drift" and items["storage.boot.count"].expected == "2 x 1.92 TB"
    assert items["storage.scratch.count"].verdict == "drift"


def _workstation_inv(**kw: object) -> NodeInventory:
    """The catalogue i5-13500 workstation as its BMC shows it: one CPU, 2 DIMMs, one RTX 4000, two 0.5 TB NVMe."""
    cpu = r.Processor(Id="1", ProcessorType="CPU", Model="13th Gen Intel(R) Core(TM) i5-13500", TotalCores=14)
    gpu = GpuView(uri="/g", model="NVIDIA RTX 4000 SFF Ada Generation", serial_number=None, firmware_version=None,
                  memory_gib=20, source="pcie")
    boot = r.Drive(Id="b", CapacityBytes=500_107_862_016, Protocol="NVMe")
    eth = Adapter(adapter=r.NetworkAdapter(Id="e"), ports=[r.NetworkPort(LinkNetworkTechnology="Ethernet")])
    psu = r.PowerSupply(PowerCapacityWatts=750, Status={"State": "Enabled"})
    base: dict[str, object] = dict(
        vendor="generic", system=r.ComputerSystem(), cpus=[cpu], gpus=[gpu],
        memory=[r.Memory(Id="d", CapacityMiB=32768, MemoryDeviceType="DDR5")] * 2, drives=[boot] * 2, storage=[],
        pcie_devices=[], adapters=[eth], power=[r.Power(PowerSupplies=[psu])], thermal=[], firmware=[],
    )
    base.update(kw)
    return NodeInventory.model_validate(base)


@pytest.fixture(scope="module")
def profiles():  # type: ignore[no-untyped-def]
    return load_fleet(ROOT / "inventory" / "hosts.yml").profiles


def test_catalogue_profiles_have_drift_items_only_for_their_sections(profiles) -> None:  # type: ignore[no-untyped-def]
    ws = drift(profiles["catalogue_i5_13500_ws"], _workstation_inv())
    assert ws.drifted == [], ws.drifted
    keys = {i.key for i in ws.items}
    assert {"gpu.count", "storage.boot.count", "storage.nvme_drives"} <= keys
    assert "storage.scratch.count" not in keys  # no scratch set: no scratch figure
    assert "gpu.count" in {i.key for i in drift(profiles["catalogue_i5_13500_ws"], _workstation_inv(gpus=[])).drifted}
    epyc = drift(profiles["catalogue_epyc_9454p"], _workstation_inv(gpus=[]))
    # no gpu section: one GPU figure, none expected (model and memory have nothing to be compared with)
    assert [(i.key, i.expected, i.observed, i.verdict) for i in epyc.items if i.key.startswith("gpu.")] == [
        ("gpu.count", "0 (no gpu section)", "0", "ok")]
    assert "storage.nvme_drives" in {i.key for i in drift(profiles["catalogue_i5_13500_ws"],
                                                          _workstation_inv(drives=[])).drifted}


# ---- absent sections expect none: catalogue profiles against real captures -------------------------------
def _capture(name: str) -> NodeInventory:
    """A capture as observe() reads it: 'full/NAME' from tests/fixtures/redfish/full, else a mockup tree."""
    from full_captures import full_tree

    served = full_tree(name.split("/", 1)[1]) if name.startswith("full/") else tree(name)
    with Served(FakeBmc(tree=served)) as srv:
        return observe(connect(srv))


@pytest.fixture(scope="module")
def captures() -> dict[str, NodeInventory]:
    return {n: _capture(n) for n in ("supermicro", "full/supermicro", "full/lenovo", "full/hpe", "public-rackmount1")}


# (profile, capture, gpu.count verdict, what the BMC shows). Counts read from the captures: the Supermicro
# SYS-821GE-TNHR trees list 8 H100 (PCIe devices), Lenovo SR670 V2 8 L40, HPE DL385 and the DMTF public
# rackmount none.
@pytest.mark.parametrize(("profile", "capture", "verdict", "observed"), [
    ("catalogue_epyc_9454p", "supermicro", "drift", "8 x H100 80GB HBM3"),
    ("catalogue_ryzen9_7950x", "full/supermicro", "drift", "8 x H100 80GB HBM3"),
    ("catalogue_i9_9900k", "full/lenovo", "drift", "8 x NVIDIA L40"),
    ("catalogue_epyc_9454p", "full/hpe", "ok", "0"),
    ("catalogue_i9_9900k", "public-rackmount1", "ok", "0"),
])
def test_no_gpu_section_means_no_gpu_expected(profiles, captures, profile: str, capture: str, verdict: str,
                                              observed: str) -> None:  # type: ignore[no-untyped-def]
    items = {i.key: i for i in drift(profiles[profile], captures[capture]).items}
    gpu = items["gpu.count"]
    assert (gpu.expected, gpu.observed, gpu.verdict, gpu.kind) == ("0 (no gpu section)", observed, verdict, "exact")
    assert not {"gpu.model", "gpu.memory_gb"} & set(items)


def test_absent_gpu_expects_none_even_where_the_profile_makes_counts_minimums(profiles, captures) -> None:  # type: ignore[no-untyped-def]
    """A minimum of 0 would hold for any count: an absent section is held exactly."""
    relaxed = _with(profiles["catalogue_epyc_9454p"], **{"gpu.count": "minimum", "network.infiniband.count": "minimum"})
    items = {i.key: i for i in drift(relaxed, captures["supermicro"]).items}
    assert (items["gpu.count"].kind, items["gpu.count"].verdict) == ("exact", "drift")
    hpe = {i.key: i for i in drift(relaxed, captures["full/hpe"]).items}
    assert (hpe["network.infiniband.count"].kind, hpe["network.infiniband.count"].verdict) == ("exact", "drift")


# (profile, capture, figure, expected, observed, verdict): InfiniBand and NVMe drives a profile without
# those sections does not expect. The HPE DL385 capture has two InfiniBand adapters and 16 NVMe drives (its
# two 480 GB boot drives are not NVMe).
@pytest.mark.parametrize(("profile", "capture", "key", "expected", "observed", "verdict"), [
    ("catalogue_epyc_9454p", "full/hpe", "network.infiniband.count", "0 (no network.infiniband section)",
     "2 x HPE InfiniBand HDR100/Ethernet 100Gb 1-port MCX653105A-ECAT QSFP56 x16 Adapter", "drift"),
    ("catalogue_epyc_9454p", "full/supermicro", "network.infiniband.count", "0 (no network.infiniband section)",
     "0", "ok"),
    ("catalogue_epyc_9454p", "full/hpe", "storage.nvme_drives", "2 (boot only: no storage.scratch section)", "16",
     "drift"),
    # the DMTF rackmount's two drives state no Protocol: not taken for NVMe, so the figure cannot hold
    ("catalogue_epyc_9454p", "public-rackmount1", "storage.nvme_drives",
     "2 (boot only: no storage.scratch section)", "0 (+ 2 of unknown protocol)", "unknown"),
])
def test_absent_network_and_scratch_sections_name_what_the_bmc_shows(
        profiles, captures, profile: str, capture: str, key: str, expected: str, observed: str,
        verdict: str) -> None:  # type: ignore[no-untyped-def]
    item = next(i for i in drift(profiles[profile], captures[capture]).items if i.key == key)
    assert (item.expected, item.observed, item.verdict) == (expected, observed, verdict)


# ---- SAS/SATA drives: none expected without a storage.jbod section (but SAS/SATA boot drives) ------------
def _disk(protocol: str | None, model: str = "ST18000NM004J") -> r.Drive:
    return r.Drive(Id=model, CapacityBytes=18_000_207_937_536, Protocol=protocol, Model=model, MediaType="HDD")


@pytest.mark.parametrize(("profile", "changes", "extra", "expected", "observed", "verdict"), [
    ("catalogue_i5_13500_ws", {}, [], "0 (no storage.jbod section)", "0", "ok"),
    ("catalogue_i5_13500_ws", {}, [_disk("SAS")] * 4, "0 (no storage.jbod section)", "4 x SAS ST18000NM004J", "drift"),
    ("catalogue_i5_13500_ws", {}, [_disk("SATA", "WDC WD40EFZX")], "0 (no storage.jbod section)",
     "1 x SATA WDC WD40EFZX", "drift"),
    # a drive of unknown protocol may be SAS/SATA: the figure is unknown, not ok (it used to be taken for NVMe)
    ("catalogue_i5_13500_ws", {}, [_disk(None)], "0 (no storage.jbod section)", "0 (+ 1 of unknown protocol)",
     "unknown"),
    # SATA boot drives are expected, and only they
    ("catalogue_i5_13500_ws", {"storage.boot.interface": "sata"}, [_disk("SATA", "MZ7L3480")] * 2,
     "2 (the SAS/SATA boot drives only: no storage.jbod section)", "2 x SATA MZ7L3480", "ok"),
    ("catalogue_i5_13500_ws", {"storage.boot.interface": "sata"}, [_disk("SATA", "MZ7L3480")] * 2 + [_disk("SAS")],
     "2 (the SAS/SATA boot drives only: no storage.jbod section)", "1 x SAS ST18000NM004J, 2 x SATA MZ7L3480",
     "drift"),
])
def test_sas_sata_drives_without_a_jbod_section_are_drift(profiles, profile: str, changes: dict, extra: list,  # type: ignore[no-untyped-def,type-arg]
                                                          expected: str, observed: str, verdict: str) -> None:
    spec = profiles[profile]
    if changes:
        data = spec.model_dump(mode="json")
        data["storage"]["boot"]["interface"] = changes["storage.boot.interface"]
        spec = type(spec).model_validate(data)
    inv = _workstation_inv()
    inv = inv.model_copy(update={"drives": [d for d in inv.drives if d.is_nvme] + extra})
    item = next(i for i in drift(spec, inv).items if i.key == "storage.sas_sata_drives")
    assert (item.expected, item.observed, item.verdict, item.kind) == (expected, observed, verdict, "exact")


def test_a_jbod_section_makes_no_sas_sata_figure_and_a_capture_s_sata_disks_drift(profiles, captures) -> None:  # type: ignore[no-untyped-def]
    assert profiles["ml_prod_v4"].storage.jbod is not None
    assert "storage.sas_sata_drives" not in {i.key for i in drift(profiles["ml_prod_v4"], captures["full/hpe"]).items}
    # the HPE DL385 capture's two 480 GB SATA boot drives on an NVMe-boot catalogue server: not what it has
    item = next(i for i in drift(profiles["catalogue_epyc_9454p"], captures["full/hpe"]).items
                if i.key == "storage.sas_sata_drives")
    assert (item.observed, item.verdict) == ("2 x SATA VK000480GZXRF", "drift")
