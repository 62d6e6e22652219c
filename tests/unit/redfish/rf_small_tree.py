"""A small hand-made Redfish tree for the counting and reading rules: a root, one system with two CPUs and one
chassis, to which each test adds the resources its rule is about; and the loopback BMC that serves it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rf_fakebmc import FakeBmc, Served
from rf_support import connect

from provision.redfish.ops.drift import DriftItem, drift
from provision.redfish.ops.inventory import NodeInventory, observe
from provision.spec import load_fleet
from provision.spec.model import NodeSpec

R = "/redfish/v1"
REPO = Path(__file__).resolve().parents[3]
TB = 10**12


def link(uri: str) -> dict[str, str]:
    return {"@odata.id": uri}


def coll(uri: str, members: list[str], **extra: Any) -> dict[str, Any]:
    return {"@odata.id": uri, "Members": [link(m) for m in members], "Members@odata.count": len(members), **extra}


def node(system: dict[str, Any] | None = None, chassis: dict[str, Any] | None = None) -> dict[str, Any]:
    """A root, one system (two Xeon CPUs) and one chassis; `system`/`chassis` add links to each."""
    t: dict[str, Any] = {
        R: {"@odata.id": R, "Systems": link(f"{R}/Systems"), "Chassis": link(f"{R}/Chassis"),
            "UpdateService": link(f"{R}/UpdateService"), "Links": {"Sessions": link(f"{R}/SessionService/Sessions")}},
        f"{R}/Systems": coll(f"{R}/Systems", [f"{R}/Systems/1"]),
        f"{R}/Systems/1": {"@odata.id": f"{R}/Systems/1", "Id": "1", "Bios": link(f"{R}/Systems/1/Bios"),
                           "Manufacturer": "Example", "Processors": link(f"{R}/Systems/1/Processors"),
                           **(system or {})},
        f"{R}/Systems/1/Processors": coll(f"{R}/Systems/1/Processors", [f"{R}/Systems/1/Processors/{i}"
                                                                          for i in (1, 2)]),
        f"{R}/Chassis": coll(f"{R}/Chassis", [f"{R}/Chassis/1"]),
        f"{R}/Chassis/1": {"@odata.id": f"{R}/Chassis/1", "Id": "1", **(chassis or {})},
        f"{R}/UpdateService/FirmwareInventory": coll(f"{R}/UpdateService/FirmwareInventory", []),
    }
    for i in (1, 2):
        t[f"{R}/Systems/1/Processors/{i}"] = {"@odata.id": f"{R}/Systems/1/Processors/{i}", "Id": str(i),
                                             "ProcessorType": "CPU", "TotalCores": 64,
                                             "Model": "Intel(R) Xeon(R) Platinum 8592+"}
    return t


def drive(uri: str, serial: str | None = "S1", tb: float = 1.92, protocol: str | None = "NVMe",
           **extra: Any) -> dict[str, Any]:
    body = {"@odata.id": uri, "Id": uri.rsplit("/", 1)[-1], "Model": "MZ1L21T9", "CapacityBytes": int(tb * TB),
            "Protocol": protocol, "MediaType": "SSD", "Status": {"State": "Enabled"}, **extra}
    if serial:
        body["SerialNumber"] = serial
    return body


def storage(t: dict[str, Any], drives: list[dict[str, Any]]) -> None:
    """One Storage subsystem listing `drives` (each also served at its URI)."""
    t[f"{R}/Systems/1"]["Storage"] = link(f"{R}/Systems/1/Storage")
    t[f"{R}/Systems/1/Storage"] = coll(f"{R}/Systems/1/Storage", [f"{R}/Systems/1/Storage/1"])
    t[f"{R}/Systems/1/Storage/1"] = {"@odata.id": f"{R}/Systems/1/Storage/1", "Id": "1",
                                     "Drives": [link(d["@odata.id"]) for d in drives]}
    for d in drives:
        t[d["@odata.id"]] = d


def chassis_drives(t: dict[str, Any], drives: list[dict[str, Any]]) -> None:
    t[f"{R}/Chassis/1"]["Drives"] = link(f"{R}/Chassis/1/Drives")
    t[f"{R}/Chassis/1/Drives"] = coll(f"{R}/Chassis/1/Drives", [d["@odata.id"] for d in drives])
    for d in drives:
        t[d["@odata.id"]] = d


def simple(t: dict[str, Any], devices: list[dict[str, Any]]) -> None:
    t[f"{R}/Systems/1"]["SimpleStorage"] = link(f"{R}/Systems/1/SimpleStorage")
    t[f"{R}/Systems/1/SimpleStorage"] = coll(f"{R}/Systems/1/SimpleStorage", [f"{R}/Systems/1/SimpleStorage/1"])
    t[f"{R}/Systems/1/SimpleStorage/1"] = {"@odata.id": f"{R}/Systems/1/SimpleStorage/1", "Id": "1",
                                           "Devices": devices}


def observe_tree(t: dict[str, Any], bmc: FakeBmc | None = None) -> NodeInventory:
    with Served(bmc or FakeBmc(tree=t)) as srv:
        return observe(connect(srv))


@pytest.fixture(scope="module")
def spec() -> NodeSpec:
    """node01 of the example inventory: ML-PROD-V4 (2 x 1.92 TB boot + 8 x 7.68 TB scratch NVMe, 2 PSUs, 2 Ethernet
    and 2 InfiniBand ports)."""
    return load_fleet(REPO / "inventory" / "hosts.yml").hosts["node01"].spec


def drift_items(spec: NodeSpec, inv: NodeInventory) -> dict[str, DriftItem]:
    return {i.key: i for i in drift(spec, inv).items}


def adapters(t: dict[str, Any], techs: list[str | None]) -> None:
    """One adapter per port, each port stating `tech` as LinkNetworkTechnology (None: nothing)."""
    c = f"{R}/Chassis/1"
    t[c]["NetworkAdapters"] = link(f"{c}/NetworkAdapters")
    uris = [f"{c}/NetworkAdapters/{i}" for i in range(len(techs))]
    t[f"{c}/NetworkAdapters"] = coll(f"{c}/NetworkAdapters", uris)
    for uri, tech in zip(uris, techs, strict=True):
        t[uri] = {"@odata.id": uri, "Id": uri.rsplit("/", 1)[-1], "Model": "ConnectX-7", "Ports": link(f"{uri}/Ports")}
        t[f"{uri}/Ports"] = coll(f"{uri}/Ports", [f"{uri}/Ports/1"])
        t[f"{uri}/Ports/1"] = {"@odata.id": f"{uri}/Ports/1", "Id": "1", "CurrentSpeedGbps": 400,
                               **({"LinkNetworkTechnology": tech} if tech else {})}
