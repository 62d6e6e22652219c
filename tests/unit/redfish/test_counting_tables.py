"""Counting by identity as pure tables (provision/redfish/ops/counting.py): which listings are one part and which
are two, for drives restated by SimpleStorage and PSUs restated by PowerSubsystem. Each row is a bug a reader
could have: parts of other models taken for one, a serial-numbered part folded into another one."""

from __future__ import annotations

from typing import Any

import pytest

from provision.redfish.ops.counting import controller_protocol, merge_simple_storage, psus_by_identity
from provision.redfish.resources import Drive, PowerSupply

TB = 10**12


def _drive(uri: str, **fields: Any) -> Drive:
    return Drive.parse({"@odata.id": uri, "Status": {"State": "Enabled"}, **fields})


def _psu(member: str, **fields: Any) -> PowerSupply:
    return PowerSupply.parse({"MemberId": member, "Status": {"State": "Enabled"}, **fields})


STORAGE = "/redfish/v1/Systems/1/Storage/1/Drives/0"
SIMPLE = "/redfish/v1/Systems/1/SimpleStorage/1#/Devices/0"

# Storage's drive (no serial, no bay: no identity) and the one device SimpleStorage lists: how many drives.
DRIVE_ROWS = [
    ("same model, same capacity: one drive listed twice", dict(Model="MZ1L21T9", CapacityBytes=2 * TB),
     dict(Model="MZ1L21T9", CapacityBytes=2 * TB), 1),
    ("same model, one capacity unsaid: one drive", dict(Model="MZ1L21T9", CapacityBytes=2 * TB),
     dict(Model="mz1l21t9"), 1),
    ("other models: two drives", dict(Model="MZ1L21T9", CapacityBytes=2 * TB), dict(Model="ST4000NM"), 2),
    ("other models, capacities unsaid: two drives", dict(Model="MZ1L21T9"), dict(Model="ST4000NM"), 2),
    ("same model, other capacities: two drives", dict(Model="MZ1L21T9", CapacityBytes=2 * TB),
     dict(Model="MZ1L21T9", CapacityBytes=4 * TB), 2),
    ("no model on either: nothing says they are one", dict(CapacityBytes=2 * TB), dict(CapacityBytes=2 * TB), 2),
    ("two serials: two drives, alike or not", dict(Model="MZ1L21T9", SerialNumber="S1"),
     dict(Model="MZ1L21T9", SerialNumber="S2"), 2),
    ("one serial, same case or not: one drive", dict(Model="MZ1L21T9", SerialNumber="s1 "),
     dict(Model="MZ1L21T9", SerialNumber="S1"), 1),
    ("a device without serial restates the serial-numbered drive of its model", dict(Model="MZ1L21T9",
     SerialNumber="S1"), dict(Model="MZ1L21T9"), 1),
]


@pytest.mark.parametrize(("storage", "device", "count"), [r[1:] for r in DRIVE_ROWS], ids=[r[0] for r in DRIVE_ROWS])
def test_simple_storage_devices_against_storage_drives(storage: dict[str, Any], device: dict[str, Any],
                                                        count: int) -> None:
    merged = merge_simple_storage([_drive(STORAGE, **storage)], [_drive(SIMPLE, **device)])
    assert len(merged) == count
    assert merged[0].uri == STORAGE  # Storage's listing is the one kept


def test_a_serial_listed_twice_beyond_storage_is_one_drive_more() -> None:
    """SimpleStorage naming one serial Storage does not, twice (two controllers' views of one disk): one drive."""
    devices = [_drive(SIMPLE, Model="A", SerialNumber="S2"), _drive(SIMPLE.replace("/0", "/1"), Model="A",
                                                                      SerialNumber="s2")]
    merged = merge_simple_storage([_drive(STORAGE, Model="A", SerialNumber="S1")], devices)
    assert [d.serial_number for d in merged] == ["S1", "S2"]


def test_a_serial_numbered_device_never_takes_the_place_of_another_model_s_drive() -> None:
    """Two Storage drives without serial and a SimpleStorage device with one: the device matches the drive of its
    model (by model, the only thing both say), never the first drive that happens to be unmatched."""
    drives = [_drive(STORAGE, Model="A"), _drive(STORAGE.replace("/0", "/1"), Model="B")]
    merged = merge_simple_storage(drives, [_drive(SIMPLE, Model="B", SerialNumber="SB")])
    assert [d.uri for d in merged] == [d.uri for d in drives]


# Power's PSU and PowerSubsystem's, both present: how many PSUs the chassis has.
PSU_ROWS = [
    ("one serial in both: one PSU", dict(SerialNumber="P1", Model="PWS-3K06G"), dict(SerialNumber="p1"), 1),
    ("two serials: two PSUs", dict(SerialNumber="P1", Model="PWS-3K06G"), dict(SerialNumber="P2",
     Model="PWS-3K06G"), 2),
    ("no serials, same model: the larger listing", dict(Model="PWS-3K06G"), dict(Model="pws-3k06g"), 1),
    ("no serials, other models: two PSUs", dict(Model="PWS-3K06G"), dict(Model="PWS-DF009"), 2),
    ("no serials, a model unsaid on one side: alike", dict(Model="PWS-3K06G"), dict(), 1),
]


@pytest.mark.parametrize(("legacy", "subsystem", "count"), [r[1:] for r in PSU_ROWS], ids=[r[0] for r in PSU_ROWS])
def test_power_and_power_subsystem_psus(legacy: dict[str, Any], subsystem: dict[str, Any], count: int) -> None:
    assert len(psus_by_identity([_psu("0", **legacy)], [_psu("0", **subsystem)])) == count


def test_an_absent_legacy_listing_gives_the_subsystem_s_psus() -> None:
    absent = PowerSupply.parse({"MemberId": "0", "Status": {"State": "Absent"}})
    sub = [_psu("0", SerialNumber="P1"), _psu("1", SerialNumber="P2")]
    assert psus_by_identity([absent], sub) == sub


@pytest.mark.parametrize(("controllers", "want"), [
    ([{"SupportedDeviceProtocols": ["NVMe"]}], "NVMe"),
    ([{"SupportedDeviceProtocols": ["NVMe"]}, {"SupportedDeviceProtocols": ["nvme"]}], "NVMe"),
    ([{"SupportedDeviceProtocols": ["NVMe", "SAS"]}], None),  # more than one: nothing inferred
    ([{"SupportedDeviceProtocols": ["  ", "NVMe"]}], "NVMe"),  # a blank entry says nothing
    ([{"SupportedDeviceProtocols": [None, 7, "NVMe"]}, "not an object"], "NVMe"),  # odd shapes, as BMCs send
    ([{"SupportedDeviceProtocols": None}], None),
    ([], None),
])
def test_the_one_protocol_a_storage_s_controllers_attach(controllers: list[Any], want: str | None) -> None:
    got = controller_protocol({"StorageControllers": controllers})
    assert (got and got.upper()) == (want and want.upper())  # one protocol, however each controller spells it
