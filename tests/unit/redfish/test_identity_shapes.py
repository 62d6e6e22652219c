"""Platform identity from odd shapes, as BMCs send them (provision/redfish/ops/identity.py): a number where a
string is usual, a boolean where a count is, a link that is a bare string, a collection without a Members list.
Each is read as the standard means it, or as not said; none crashes, none is taken for more than it says."""

from __future__ import annotations

from typing import Any

import pytest

from provision.redfish.ops import identity
from provision.spec.platforms import DeviceKind

S = "/redfish/v1/Systems/1"


@pytest.mark.parametrize(("value", "want"), [
    ("SYS-821GE-TNHR", "SYS-821GE-TNHR"), (8675309, "8675309"), (0, "0"), (True, None), (False, None),
    ("N/A", None), ("", None), (None, None), (["x"], None), ({"a": 1}, None),
])
def test_a_stated_value_is_text_a_number_or_nothing(value: Any, want: str | None) -> None:
    assert identity._text(value) == want


@pytest.mark.parametrize(("summary", "want"), [
    ({"Count": 2}, 2), ({"Count": 0}, 0), ({"Count": True}, None), ({"Count": "2"}, None), ({"Count": 2.0}, None),
    ({}, None), ("2", None), (None, None),
])
def test_the_host_cpu_count_is_an_integer_or_not_stated(summary: Any, want: int | None) -> None:
    got = identity.host_cpus({"ProcessorSummary": summary})
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize(("links", "want"), [
    ({"Chassis": [{"@odata.id": "/redfish/v1/Chassis/1/"}]}, ["/redfish/v1/Chassis/1"]),
    ({"Chassis": ["/redfish/v1/Chassis/1", {"@odata.id": "/redfish/v1/Chassis/2"}]}, ["/redfish/v1/Chassis/2"]),
    ({"Chassis": [{"@odata.id": ""}, {}, None]}, []),
    ({"Chassis": {"@odata.id": "/redfish/v1/Chassis/1"}}, []),  # not a list: not the standard's link array
    ({"Chassis": None}, []), ("not an object", []), (None, []),
])
def test_links_are_read_only_where_they_are_links(links: Any, want: list[str]) -> None:
    assert identity._linked({"Links": links}, "Chassis") == want


class _Bmc:
    """get_optional and resolve over a dict of resources."""

    def __init__(self, tree: dict[str, Any], root: dict[str, Any] | None = None) -> None:
        self.tree, self.root = tree, root or {}

    def get_optional(self, uri: str) -> Any:
        return self.tree.get(uri)

    def resolve(self, refs: list[dict[str, Any]]) -> list[Any]:
        return [self.tree[r["@odata.id"]] for r in refs]


FABRICS = {"Fabrics": {"@odata.id": "/redfish/v1/Fabrics"}}


@pytest.mark.parametrize(("root", "collection", "want"), [
    (FABRICS, {"Members": [{"@odata.id": "/redfish/v1/Fabrics/NVLink"}]}, 1),
    (FABRICS, {"Members": []}, 0),
    (FABRICS, {"Members": "none"}, 0),  # not a list: no fabric is listed
    (FABRICS, {}, 0),
    (FABRICS, None, 0),  # the link leads nowhere
    ({"Fabrics": "/redfish/v1/Fabrics"}, {"Members": [{"@odata.id": "/redfish/v1/Fabrics/NVLink"}]}, 0),
    ({"Fabrics": {}}, {"Members": [{"@odata.id": "/redfish/v1/Fabrics/NVLink"}]}, 0),
    ({}, {"Members": [{"@odata.id": "/redfish/v1/Fabrics/NVLink"}]}, 0),
])
def test_fabrics_are_counted_only_from_the_root_s_link_and_a_members_list(root: Any, collection: Any,
                                                                          want: int) -> None:
    bmc = _Bmc({"/redfish/v1/Fabrics": collection} if collection is not None else {}, root)
    assert identity.fabric_count(bmc) == want  # type: ignore[arg-type]


@pytest.mark.parametrize(("members", "want"), [
    ([{"@odata.id": "/redfish/v1/Managers/bmc"}, {"@odata.id": "/redfish/v1/Managers/2"}], ["bmc"]),
    (["/redfish/v1/Managers/bmc", {"@odata.id": "/redfish/v1/Managers/2"}], ["2"]),  # a bare string is no link
    ([{}, {"@odata.id": ""}], []),
    (None, []),
    ([], []),
])
def test_the_first_member_is_the_first_real_link(members: Any, want: list[str]) -> None:
    tree = {"/redfish/v1/Managers": {"Members": members}, "/redfish/v1/Managers/bmc": {"Id": "bmc"},
            "/redfish/v1/Managers/2": {"Id": "2"}}
    got = identity.first_member(_Bmc(tree), "/redfish/v1/Managers")  # type: ignore[arg-type]
    assert [m["Id"] for m in got] == want


def test_a_system_stating_no_cpus_under_a_fabric_less_service_is_a_device_not_a_switch() -> None:
    """Where the Fabrics collection lists nothing usable, a CPU-less system is a device, never a switch tray."""
    system = {"@odata.id": S, "ProcessorSummary": {"Count": 0}, "Model": "X"}
    bmc = _Bmc({"/redfish/v1/Fabrics": {"Members": "none"}}, FABRICS)
    fabrics = identity.fabric_count(bmc)  # type: ignore[arg-type]
    assert identity.device_kind(system, [], fabrics) is DeviceKind.DEVICE


def test_the_chassis_and_bmc_are_the_ones_the_system_links_not_the_first_listed() -> None:
    """A GPU tray or a DPU card listed before the host's own chassis (and a satellite manager before its BMC)."""
    system = {"@odata.id": S, "Manufacturer": "Supermicro", "Model": "SYS-821GE-TNHR", "Bios": {},
              "ProcessorSummary": {"Count": 2},
              "Links": {"Chassis": [{"@odata.id": "/redfish/v1/Chassis/1"}],
                        "ManagedBy": [{"@odata.id": "/redfish/v1/Managers/1"}]}}
    chassis = [{"@odata.id": "/redfish/v1/Chassis/HGX_GPU_Tray", "Model": "HGX H100"},
               {"@odata.id": "/redfish/v1/Chassis/1", "Model": "SC826"}]
    managers = [{"@odata.id": "/redfish/v1/Managers/HGX_BMC", "Model": "HGX"},
                {"@odata.id": "/redfish/v1/Managers/1", "Model": "X13 BMC"}]
    ident = identity.from_tree([system], chassis, managers)
    assert ident.chassis is not None and ident.chassis.model == "SC826"
    assert ident.bmc is not None and ident.bmc.model == "X13 BMC"
    unlinked = identity.from_tree([{**system, "Links": {}}], chassis, managers)  # nothing linked: the first
    assert unlinked.chassis is not None and unlinked.chassis.model == "HGX H100"
