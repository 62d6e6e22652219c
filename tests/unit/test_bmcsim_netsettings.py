"""The simulator's manager settings in process: NTP, host name, DNS servers, SSDP/IPMI switches."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from provision.lab.bmcsim.bmc import Bmc
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.config import TREES_DIR, BmcConfig, SimConfig
from provision.lab.bmcsim.reply import Reply
from provision.lab.bmcsim.request import Request
from provision.lab.bmcsim.seed import get_seed

AUTH = {"Authorization": "Basic " + base64.b64encode(b"admin:pass-word-1").decode()}


def make_bmc(tmp: Path, tree: str = "supermicro") -> Bmc:
    node = BmcConfig(name="node01", index=1, password=SecretStr("pass-word-1"), tree=TREES_DIR / tree)
    cfg = SimConfig(lab_dir=tmp, nodes=[node], control_token=SecretStr("t"), ready_file=tmp / "r.json",
                    log_file=tmp / "log")
    return Bmc(node, cfg, get_seed(node.tree, False, cfg.parts), SimClock(cfg.speed))


def call(bmc: Bmc, method: str, path: str, payload: Any = None) -> Reply:
    return bmc.handle(Request(method, path, AUTH, json.dumps(payload).encode() if payload is not None else b""))


def get(bmc: Bmc, path: str) -> dict[str, Any]:
    reply = call(bmc, "GET", path)
    assert reply.status == 200, path
    return dict(json.loads(reply.raw)) if reply.raw is not None else dict(reply.body or {})


def ids(reply: Reply) -> list[str]:
    return [m["MessageId"].rsplit(".", 1)[1] for m in (reply.body or {})["error"]["@Message.ExtendedInfo"]]


def paths(bmc: Bmc) -> tuple[str, str]:
    manager = bmc.seed.managers[0]
    mgr = get(bmc, manager)
    nics = get(bmc, mgr["EthernetInterfaces"]["@odata.id"])["Members"]
    return mgr["NetworkProtocol"]["@odata.id"], nics[0]["@odata.id"]


@pytest.mark.parametrize("tree", ["supermicro", "dell", "public-rackmount1"])
def test_ntp_names_and_switches_read_back_as_written(tmp_path: Path, tree: str) -> None:
    bmc = make_bmc(tmp_path, tree)
    proto, nic = paths(bmc)
    reply = call(bmc, "PATCH", proto, {"NTP": {"ProtocolEnabled": True, "NTPServers": ["10.0.0.1", "ntp.site.example"]},
                                       "HostName": "node01-bmc", "FQDN": "node01-bmc.site.example",
                                       "SSDP": {"ProtocolEnabled": False}, "IPMI": {"ProtocolEnabled": False}})
    assert reply.status == 200
    got = get(bmc, proto)
    assert got["NTP"]["ProtocolEnabled"] is True and got["NTP"]["NTPServers"] == ["10.0.0.1", "ntp.site.example"]
    assert (got["HostName"], got["FQDN"]) == ("node01-bmc", "node01-bmc.site.example")
    assert got["SSDP"]["ProtocolEnabled"] is False and got["IPMI"]["ProtocolEnabled"] is False
    assert get(bmc, nic)["HostName"] == "node01-bmc"  # one name for the manager
    assert call(bmc, "PATCH", nic, {"StaticNameServers": ["10.0.0.53", "2001:db8::53"], "HostName": "n1"}).status \
        == 200
    got_nic = get(bmc, nic)
    assert got_nic["StaticNameServers"] == ["10.0.0.53", "2001:db8::53"]
    assert got_nic["NameServers"] == ["10.0.0.53", "2001:db8::53"]
    assert get(bmc, proto)["HostName"] == "n1"


def test_array_patch_rules_for_ntp_servers(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    proto, _ = paths(bmc)
    assert call(bmc, "PATCH", proto, {"NTP": {"NTPServers": ["a.example", "b.example", "c.example"]}}).status == 200
    assert call(bmc, "PATCH", proto, {"NTP": {"NTPServers": [{}, None, "d.example"]}}).status == 200
    assert get(bmc, proto)["NTP"]["NTPServers"] == ["a.example", "d.example"]


@pytest.mark.parametrize(("body", "want"), [
    ({"HostName": "bad_name!"}, "PropertyValueFormatError"),
    ({"HostName": "a.b"}, "PropertyValueFormatError"),
    ({"HostName": 7}, "PropertyValueTypeError"),
    ({"FQDN": "-x-.example"}, "PropertyValueFormatError"),
    ({"NTP": {"NTPServers": ["ok.example", "not a server"]}}, "PropertyValueFormatError"),
    ({"NTP": {"NTPServers": "10.0.0.1"}}, "PropertyValueTypeError"),
    ({"NTP": {"NTPServers": ["a.example", "b.example", "c.example", "d.example", "e.example"]}},
     "PropertyValueOutOfRange"),
    ({"NTP": {"ProtocolEnabled": "yes"}}, "PropertyValueTypeError"),
    ({"SSDP": {"Port": 1901}}, "PropertyNotWritable"),
    ({"HTTPS": {"ProtocolEnabled": False}}, "PropertyNotWritable"),
    ({"Telnet": {"ProtocolEnabled": True}}, "PropertyUnknown"),
])
def test_bad_protocol_patches_are_400_and_change_nothing(tmp_path: Path, body: dict[str, Any], want: str) -> None:
    bmc = make_bmc(tmp_path)
    proto, _ = paths(bmc)
    before = get(bmc, proto)
    reply = call(bmc, "PATCH", proto, {"HostName": "good-name", **body})
    assert reply.status == 400 and want in ids(reply)
    assert get(bmc, proto) == before  # the good part of the PATCH is not applied either


@pytest.mark.parametrize(("body", "want"), [
    ({"StaticNameServers": ["dns.example"]}, "PropertyValueFormatError"),
    ({"StaticNameServers": ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]}, "PropertyValueOutOfRange"),
    ({"NameServers": ["10.0.0.1"]}, "PropertyNotWritable"),
    ({"FQDN": "no_underscores.example"}, "PropertyValueFormatError"),
])
def test_bad_interface_patches_are_400(tmp_path: Path, body: dict[str, Any], want: str) -> None:
    bmc = make_bmc(tmp_path)
    _, nic = paths(bmc)
    before = get(bmc, nic)
    reply = call(bmc, "PATCH", nic, body)
    assert reply.status == 400 and want in ids(reply)
    assert get(bmc, nic) == before
