"""FirmwareInventory entries listed Absent with a version are shown with both; a CPU named only in
ProcessorId.EffectiveFamily (AMI) is named (issue 38, item 4)."""

from __future__ import annotations

from rf_small_tree import (
    R,
    drift_items,
    node,
    observe_tree,
    spec,
)

from provision.redfish.ops import firmware as fw
from provision.redfish.resources import SoftwareInventory, UpdateService
from provision.redfish.vendors.registry import by_name
from provision.spec.firmware import FirmwareComponent
from provision.spec.model import NodeSpec

__all__ = ["spec"]  # the module-scoped fixture, used by name

# ---- firmware entries Absent -----------------------------------------------------------------------
def test_an_absent_firmware_entry_is_shown_with_its_version_and_state() -> None:
    entries = [SoftwareInventory.parse({"@odata.id": f"{R}/UpdateService/FirmwareInventory/HGX_FW_GPU_0",
                                        "Id": "HGX_FW_GPU_0", "Version": "96.00.5E.00.01",
                                        "Status": {"State": "Absent"}})]
    state = fw.FirmwareState(entries=entries, service=UpdateService.parse({}))
    comp = FirmwareComponent.model_validate({"component": "gpu", "version": "96.00.89.00.01",
                                             "image": "/nonexistent/gpu.fwpkg", "sha256": "0" * 64,
                                             "applies_to": "any"})
    (row,) = fw.status((comp,), state, by_name("nvidia_hgx"))
    assert row.verdict == "absent"  # nothing running to compare: could not check, never "ok"
    assert [(e.id, e.raw_version, e.state, e.version) for e in row.entries] == [
        ("HGX_FW_GPU_0", "96.00.5E.00.01", "Absent", None)]
    from provision.cli.firmware import _unchecked_why

    assert _unchecked_why(row) == ("listed Absent in FirmwareInventory: HGX_FW_GPU_0 version 96.00.5E.00.01 "
                                   "(Status.State Absent)")
    plan = fw.plan((comp,), state, by_name("nvidia_hgx"))
    assert plan.steps == [] and plan.absent == ["gpu"]
    assert plan.problems() == ["firmware gpu: listed Absent in FirmwareInventory (HGX_FW_GPU_0 96.00.5E.00.01): "
                               "could not check"]
    nothing = fw.FirmwareState(entries=[], service=UpdateService.parse({}))
    assert fw.status((comp,), nothing, by_name("nvidia_hgx"))[0].entries == []
    assert fw.plan((comp,), nothing, by_name("nvidia_hgx")).problems() == [
        "firmware gpu: not in FirmwareInventory: could not check"]


# ---- CPUs ------------------------------------------------------------------------------------------
def test_a_cpu_named_only_in_effective_family_is_named(spec: NodeSpec) -> None:
    t = node()
    for i in (1, 2):
        cpu = t[f"{R}/Systems/1/Processors/{i}"]
        del cpu["Model"]
        cpu["ProcessorId"] = {"EffectiveFamily": "Intel(R) Xeon(R) Platinum 8592+", "VendorId": "GenuineIntel"}
    inv = observe_tree(t)
    assert [c.model for c in inv.cpus] == ["Intel(R) Xeon(R) Platinum 8592+"] * 2
    assert drift_items(spec, inv)["cpu.model"].verdict == "ok"
    t[f"{R}/Systems/1/Processors/1"]["ProcessorId"] = {"EffectiveFamily": "0x6", "EffectiveModel": "0xCF"}
    numbers = observe_tree(t).cpus[0]
    assert numbers.model is None and numbers.identity == "family 0x6 model 0xCF"
