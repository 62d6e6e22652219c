"""The one transport: proxies from the environment carry every request (login and logout too), redirects
are followed on the BMC's own host only, and no_proxy is honoured (names, addresses, CIDR blocks)."""

from __future__ import annotations

import json

import pytest
from rf_fakebmc import FakeBmc, Served
from rf_support import connect, options, tree

from provision.redfish.connector import Connector
from provision.redfish.errors import RedfishUnreadable
from provision.redfish.transport import environ_proxy

SYS = "/redfish/v1/Systems/1"
SESSIONS = "/redfish/v1/SessionService/Sessions"


@pytest.fixture
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_a_proxy_from_the_environment_carries_every_request(no_proxy_env: pytest.MonkeyPatch) -> None:
    """The loopback server stands in for the proxy: it is sent each request in absolute form, and answers
    as the BMC would. The BMC's own name does not resolve, so nothing could have gone there directly."""
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as proxy:
        no_proxy_env.setenv("http_proxy", proxy.address)
        conn = Connector(options("http://bmc-node01.invalid:8000"), sleep=lambda s: None)
        conn.open()
        assert conn.get(SYS)["Id"] == "1"
        conn.close()
    seen = {(s.method, s.path) for s in bmc.seen}
    assert {("POST", SESSIONS), ("GET", SYS), ("DELETE", f"{SESSIONS}/1")} <= seen
    assert {s.headers.get("host") for s in bmc.seen} == {"bmc-node01.invalid:8000"}
    assert not bmc.tokens  # logged out through the proxy too


@pytest.mark.parametrize(("address", "proxied"), [
    ("https://10.1.2.3", False),  # in the CIDR block
    ("https://bmc07.oob.example.net", False),  # a name suffix
    ("https://192.168.1.1", False),  # an address
    ("https://10.200.0.1:8443", True),
    ("https://bmc07.example.org", True),
])
def test_no_proxy_names_addresses_and_blocks(no_proxy_env: pytest.MonkeyPatch, address: str, proxied: bool) -> None:
    no_proxy_env.setenv("https_proxy", "http://proxy.example.net:3128")
    no_proxy_env.setenv("no_proxy", "10.0.0.0/9, .oob.example.net,192.168.1.1")
    assert environ_proxy(address) == ("http://proxy.example.net:3128" if proxied else None)


def test_no_proxy_at_all_sends_directly(no_proxy_env: pytest.MonkeyPatch) -> None:
    assert environ_proxy("https://10.0.0.1") is None


def test_a_redirect_off_the_bmc_is_not_followed(no_proxy_env: pytest.MonkeyPatch) -> None:
    """The session token would go with it: the answer is unreadable, naming where it pointed."""
    bmc = FakeBmc(tree=tree("supermicro"))
    with Served(bmc) as srv:
        conn = connect(srv)
        bmc.redirects[f"{SYS}/Elsewhere"] = "http://collector.invalid/redfish/v1/Systems/1"
        with pytest.raises(RedfishUnreadable, match=r"GET /redfish/v1/Systems/1/Elsewhere: redirected off the "
                                                    r"BMC to collector\.invalid"):
            conn.get(f"{SYS}/Elsewhere")
    assert bmc.seen[-1].path == f"{SYS}/Elsewhere"  # nothing sent after the redirect


def test_a_307_keeps_the_method_and_the_body(no_proxy_env: pytest.MonkeyPatch) -> None:
    bmc = FakeBmc(tree=tree("supermicro"))
    target = f"{SYS}/Actions/ComputerSystem.Reset"
    with Served(bmc) as srv:
        conn = connect(srv)
        bmc.redirects[f"{SYS}/Actions/Old.Reset"] = target
        conn.post(f"{SYS}/Actions/Old.Reset", {"ResetType": "On"})
    moved = [s for s in bmc.seen if s.path == target]
    assert [(s.method, json.loads(s.body)) for s in moved] == [("POST", {"ResetType": "On"})]
    assert moved[0].headers.get("x-auth-token")  # the same BMC: still logged in


def test_a_multipart_upload_is_byte_for_byte_what_requests_toolbelt_sent() -> None:
    """Firmware uploads (MultipartHttpPushUri): the body BMCs were sent before is sent still, boundary aside."""
    from requests_toolbelt import MultipartEncoder

    from provision.redfish.transport import encode

    parts = {"UpdateParameters": (None, json.dumps({"Targets": ["/redfish/v1/UpdateService/FirmwareInventory/BIOS"]}),
                                  "application/json"),
             "UpdateFile": ("bios_3.0.bin", b"\x00\x01--not-a-boundary\r\n\r\nbinary\xff", "application/octet-stream")}
    headers = {"Content-Type": "multipart/form-data"}
    sent = encode(parts, headers)
    before = MultipartEncoder(parts)
    ours, theirs = headers["Content-Type"].split("boundary="), before.content_type.split("boundary=")
    assert ours[0] == theirs[0] == "multipart/form-data; "
    assert sent is not None and sent.replace(ours[1].encode(), b"B") == before.to_string().replace(theirs[1].encode(), b"B")
