"""Counting by identity (issue 38, item 4), each rule on a small hand-made tree served by the loopback BMC: a
drive listed twice counts once, removable media never counts, a drive without protocol is not NVMe, PSUs are read
from Power and PowerSubsystem, a port without technology is unknown. Each test fails on the reader before."""

from __future__ import annotations

from typing import Any

import pytest
from rf_fakebmc import FakeBmc
from rf_small_tree import (
    TB,
    R,
    adapters,
    chassis_drives,
    coll,
    drift_items,
    drive,
    link,
    node,
    observe_tree,
    simple,
    spec,
    storage,
)

from provision.redfish.ops.inventory import NodeInventory
from provision.spec.model import NodeSpec

__all__ = ["spec"]  # the module-scoped fixture, used by name

# ---- drives ---------------------------------------------------------------------------------------
def test_a_drive_listed_under_storage_and_chassis_counts_once(spec: NodeSpec) -> None:
    """Two URIs, one serial: one drive, and the boot pair (2 x 1.92 TB) is not "ok" on a node with one."""
    t = node()
    storage(t, [drive(f"{R}/Systems/1/Storage/1/Drives/0", serial="S6CKNN0W502286")])
    chassis_drives(t, [drive(f"{R}/Chassis/1/Drives/Bay0", serial="s6cknn0w502286 ")])
    inv = observe_tree(t)
    assert [d.serial_number for d in inv.drives] == ["S6CKNN0W502286"]
    boot = drift_items(spec, inv)["storage.boot.count"]
    assert (boot.observed, boot.verdict) == ("1", "drift")


def test_an_empty_bay_is_no_drive() -> None:
    """A bay a BMC lists with Status.State Absent (some BMCs list every slot, filled or not) holds no drive: two
    drives and two empty bays are two drives, in Storage and under Chassis alike."""
    empty = {"Status": {"State": "Absent"}}
    t = node()
    storage(t, [drive(f"{R}/Systems/1/Storage/1/Drives/0", serial="A0"),
                 drive(f"{R}/Systems/1/Storage/1/Drives/1", serial=None, **empty)])
    chassis_drives(t, [drive(f"{R}/Chassis/1/Drives/Bay1", serial="A1"),
                       drive(f"{R}/Chassis/1/Drives/Bay2", serial=None, **empty)])
    assert sorted(d.serial_number or "" for d in observe_tree(t).drives) == ["A0", "A1"]


def test_drives_without_serial_are_one_per_model_capacity_and_bay() -> None:
    bay = {"PhysicalLocation": {"PartLocation": {"ServiceLabel": "Bay 3", "LocationType": "Bay"}}}
    other_bay = {"PhysicalLocation": {"PartLocation": {"ServiceLabel": "Bay 4", "LocationType": "Bay"}}}
    t = node()
    storage(t, [drive(f"{R}/Systems/1/Storage/1/Drives/3", serial=None, **bay),
                 drive(f"{R}/Systems/1/Storage/1/Drives/4", serial=None, **other_bay)])
    chassis_drives(t, [drive(f"{R}/Chassis/1/Drives/Bay3", serial=None, **bay)])
    assert sorted(d.bay or "" for d in observe_tree(t).drives) == ["Bay:Bay 3", "Bay:Bay 4"]


def test_drives_that_cannot_be_told_apart_stay_one_per_listing() -> None:
    """No serial, no bay: two identical drives in one Storage are two drives, never merged into one."""
    t = node()
    storage(t, [drive(f"{R}/Systems/1/Storage/1/Drives/{i}", serial=None) for i in (0, 1)])
    assert len(observe_tree(t).drives) == 2


def test_virtual_media_in_simple_storage_is_not_adrive(spec: NodeSpec) -> None:
    """AMI's virtual CD and HDisk (no protocol, no capacity) were counted as NVMe drives."""
    t = node()
    simple(t, [{"Name": "Virtual Cdrom Device", "Model": "Virtual Cdrom Device", "Status": {"State": "Enabled"}},
                {"Name": "Virtual HDisk Device", "Status": {"State": "Enabled"}},
                {"Name": "USB key", "Removable": True, "Status": {"State": "Enabled"}},
                {"Name": "Slot 0", "Model": "MZQL27T6HBLA", "CapacityBytes": int(7.68 * TB),
                 "Status": {"State": "Enabled"}}])
    inv = observe_tree(t)
    assert [d.model for d in inv.drives] == ["MZQL27T6HBLA"]
    nvme = drift_items(spec, inv)["storage.nvme_drives"]
    assert (nvme.observed, nvme.verdict) == ("0 (+ 1 of unknown protocol)", "drift")  # 10 wanted, at most 1


def test_a_drive_without_protocol_is_unknown_not_nvme(spec: NodeSpec) -> None:
    t = node()
    drives = [drive(f"{R}/Systems/1/Storage/1/Drives/{i}", serial=f"B{i}", tb=1.92) for i in (0, 1)]
    drives += [drive(f"{R}/Systems/1/Storage/1/Drives/{i}", serial=f"S{i}", tb=7.68, protocol=None)
               for i in range(2, 10)]
    storage(t, drives)
    inv = observe_tree(t)
    assert len([d for d in inv.drives if d.is_nvme]) == 2
    items = drift_items(spec, inv)
    assert (items["storage.nvme_drives"].observed, items["storage.nvme_drives"].verdict) == (
        "2 (+ 8 of unknown protocol)", "unknown")
    assert (items["storage.boot.count"].observed, items["storage.boot.count"].verdict) == ("2", "ok")
    assert (items["storage.scratch.count"].observed, items["storage.scratch.count"].verdict) == (
        "0 (+ 8 of unknown protocol)", "unknown")


def test_simple_storage_restating_storage_adds_only_the_drives_beyond_it() -> None:
    """SimpleStorage lists the Storage drives again without serials: matched by model; a further device counts."""
    t = node()
    storage(t, [drive(f"{R}/Systems/1/Storage/1/Drives/{i}", serial=f"S{i}") for i in (0, 1)])
    device = {"Name": "Slot", "Model": "MZ1L21T9", "Status": {"State": "Enabled"}}
    simple(t, [device, device])
    assert len(observe_tree(t).drives) == 2
    simple(t, [device, device, {**device, "Model": "ST18000NM004J"}])
    assert sorted(d.model or "" for d in observe_tree(t).drives) == ["MZ1L21T9", "MZ1L21T9", "ST18000NM004J"]


# ---- PSUs ------------------------------------------------------------------------------------------
def _psu(i: int, serial: str | None, **extra: Any) -> dict[str, Any]:
    body = {"MemberId": str(i), "Name": f"PSU{i}", "Model": "PWS-3K06G", "PowerCapacityWatts": 3200,
            "Status": {"State": "Enabled", "Health": "OK"}, **extra}
    return {**body, "SerialNumber": serial} if serial else body


def _power(t: dict[str, Any], legacy: list[dict[str, Any]], sub: list[dict[str, Any]]) -> None:
    c = f"{R}/Chassis/1"
    t[c]["Power"] = link(f"{c}/Power")
    t[f"{c}/Power"] = {"@odata.id": f"{c}/Power", "Id": "Power", "PowerSupplies": legacy}
    t[c]["PowerSubsystem"] = link(f"{c}/PowerSubsystem")
    t[f"{c}/PowerSubsystem"] = {"@odata.id": f"{c}/PowerSubsystem", "Id": "PowerSubsystem",
                                "PowerSupplies": link(f"{c}/PowerSubsystem/PowerSupplies")}
    uris = [f"{c}/PowerSubsystem/PowerSupplies/PSU{i}" for i in range(len(sub))]
    t[f"{c}/PowerSubsystem/PowerSupplies"] = coll(f"{c}/PowerSubsystem/PowerSupplies", uris)
    for uri, body in zip(uris, sub, strict=True):
        t[uri] = {"@odata.id": uri, "Id": uri.rsplit("/", 1)[-1], **body}


def _psus(inv: NodeInventory) -> list[str]:
    return sorted(p.serial_number or p.name or "?" for pw in inv.power for p in pw.power_supplies if p.present)


def test_psus_from_power_subsystem_when_power_lists_none(spec: NodeSpec) -> None:
    t = node()
    _power(t, [], [_psu(i, f"P{i}") for i in range(6)])
    inv = observe_tree(t)
    assert _psus(inv) == [f"P{i}" for i in range(6)]
    assert drift_items(spec, inv)["power.psu_count"].observed == "6"


def test_psus_listed_in_power_and_power_subsystem_count_once_per_serial() -> None:
    t = node()
    _power(t, [_psu(0, "P0"), _psu(1, "P1"), _psu(2, None, Status={"State": "Absent"})],
           [_psu(0, "p0"), _psu(1, "P1"), _psu(3, "P3")])
    assert _psus(observe_tree(t)) == ["P0", "P1", "P3"]


def test_psus_without_serials_in_both_count_the_larger_listing() -> None:
    t = node()
    _power(t, [_psu(0, None), _psu(1, None)], [_psu(0, None), _psu(1, None), _psu(2, None)])
    assert len(_psus(observe_tree(t))) == 3


# ---- NIC ports -------------------------------------------------------------------------------------
def test_ports_that_state_no_technology_are_unknown_and_said_so(spec: NodeSpec) -> None:
    t = node()
    adapters(t, ["Ethernet", "InfiniBand"] + [None] * 8)
    inv = observe_tree(t)
    assert (inv.ports.ethernet, inv.ports.infiniband, inv.ports.unknown) == (1, 1, 8)
    items = drift_items(spec, inv)
    eth, ib = items["network.ethernet.count"], items["network.infiniband.count"]
    assert (eth.observed, eth.verdict) == ("1 (Ethernet 1, InfiniBand 1, unknown 8)", "unknown")
    assert (ib.observed, ib.verdict) == ("1 (Ethernet 1, InfiniBand 1, unknown 8)", "unknown")


def test_ports_that_all_state_their_technology_hold_or_drift(spec: NodeSpec) -> None:
    t = node()
    adapters(t, ["Ethernet", "Ethernet", "InfiniBand"])
    items = drift_items(spec, observe_tree(t))
    assert (items["network.ethernet.count"].observed, items["network.ethernet.count"].verdict) == ("2", "ok")
    assert (items["network.infiniband.count"].observed, items["network.infiniband.count"].verdict) == ("1", "drift")
    # three unknown ports cannot make one missing Ethernet port "ok", nor hide three known extra ones
    t = node()
    adapters(t, ["Ethernet"] * 3 + [None] * 3)
    assert drift_items(spec, observe_tree(t))["network.ethernet.count"].verdict == "drift"




def test_odd_shapes_of_the_identity_fields_read_as_unsaid() -> None:
    """A BMC's odd values for the fields counting reads (a number for a serial, "N/A" for Removable, null
    locations) are "not given", never a shape error that would stop the whole inventory."""
    from provision.redfish.resources import Drive, PowerSupply

    d = Drive.parse({"@odata.id": "/d", "SerialNumber": 123, "Removable": "N/A", "Protocol": "N/A",
                     "PhysicalLocation": None, "Location": {"Info": "x"}})
    assert (d.serial_number, d.removable, d.protocol, d.bay, d.identity) == (None, None, None, None, None)
    assert PowerSupply.parse({"SerialNumber": 123456, "PartNumber": ["x"]}).serial_number is None


def test_without_network_adapters_the_host_s_ethernet_interfaces_are_ports_of_unknown_technology(
        spec: NodeSpec) -> None:
    t = node()
    uri = f"{R}/Systems/1/EthernetInterfaces"
    t[f"{R}/Systems/1"]["EthernetInterfaces"] = link(uri)
    t[uri] = coll(uri, [f"{uri}/eth0", f"{uri}/eth1", f"{uri}/usb0"])
    for name, kind in (("eth0", "Physical"), ("eth1", None), ("usb0", "Virtual")):
        t[f"{uri}/{name}"] = {"@odata.id": f"{uri}/{name}", "Id": name, "SpeedMbps": 100000,
                              **({"EthernetInterfaceType": kind} if kind else {})}
    inv = observe_tree(t)
    assert (inv.ports.ethernet, inv.ports.unknown) == (0, 2)
    eth = drift_items(spec, inv)["network.ethernet.count"]
    assert (eth.observed, eth.verdict) == ("0 (Ethernet 0, InfiniBand 0, unknown 2)", "unknown")
    adapters(t, ["Ethernet", "Ethernet"])  # NetworkAdapters listed: those are the ports, interfaces not read
    bmc = FakeBmc(tree=t)
    assert observe_tree(t, bmc).ports.model_dump() == {"ethernet": 2, "infiniband": 0, "other": 0, "unknown": 0}
    assert not [s for s in bmc.seen if "EthernetInterfaces" in s.path]


@pytest.mark.parametrize(("controllers", "own", "protocol"), [
    ([{"SupportedDeviceProtocols": ["NVMe"]}], None, "NVMe"),  # an NVMe backplane: its drives are NVMe
    ([{"SupportedDeviceProtocols": ["NVMe"]}], "SATA", "SATA"),  # a drive's own Protocol always stands
    ([{"SupportedDeviceProtocols": ["SAS", "SATA"]}], None, None),  # a tri-mode HBA: nothing inferred
    ([{"SupportedDeviceProtocols": ["NVMe"]}, {"SupportedDeviceProtocols": ["SATA"]}], None, None),
    ([{}], None, None),  # controllers that say nothing: unknown, never NVMe
    ([], None, None),
])
def test_a_drive_without_protocol_takes_its_controllers_one_protocol(
        controllers: list[dict[str, object]], own: str | None, protocol: str | None) -> None:
    from provision.redfish.ops.counting import controller_protocol, with_controller_protocol
    from provision.redfish.resources import Drive

    uri = "/redfish/v1/Chassis/1/Drives/0"
    drive = Drive.parse({"@odata.id": uri, "Protocol": own, "Model": "X", "SerialNumber": "S1"})
    stated = {uri: p} if (p := controller_protocol({"StorageControllers": controllers})) else {}
    assert with_controller_protocol(drive, stated).protocol == protocol
