"""Faults injected live with `provision lab fault`, seen over the wire and recorded in the SEL/log."""

from __future__ import annotations

import base64
import http.client
import json
import ssl
import subprocess
import sys
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlparse

import pytest

pytestmark = pytest.mark.lab

CLI = [sys.executable, "-c", "from provision.cli import run; run()"]
NODE = "node02"


def _fault(lab: Any, kind: str, *extra: str) -> None:
    done = subprocess.run([*CLI, "lab", "fault", NODE, kind, *extra, "--lab-dir", str(lab.state.lab_dir)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def conn(bmc_lab: Any) -> Iterator[Any]:
    hv = bmc_lab.host_vars(NODE)
    url = urlparse(hv["provision_bmc_address"])
    ctx = ssl.create_default_context(cafile=str(bmc_lab.ca))
    auth = base64.b64encode(f"{hv['provision_bmc_username']}:{hv['provision_bmc_password']}".encode()).decode()

    def get(path: str, timeout: float = 10.0, token: str | None = None) -> http.client.HTTPResponse:
        c = http.client.HTTPSConnection(url.hostname or "", url.port, context=ctx, timeout=timeout)
        headers = {"X-Auth-Token": token} if token else {"Authorization": f"Basic {auth}"}
        c.request("GET", path, headers=headers)
        return c.getresponse()

    yield get


def _sel(get: Any) -> list[str]:
    sys_res = json.loads(get("/redfish/v1/Systems/1/LogServices/Log1/Entries").read())
    return [json.loads(get(m["@odata.id"]).read()).get("Message", "") for m in sys_res["Members"][-6:]]


def test_unavailable_gives_503_with_retry_after(bmc_lab: Any, conn: Any) -> None:
    _fault(bmc_lab, "unavailable", "--value", "7")
    try:
        resp = conn("/redfish/v1/Systems/1")
        assert resp.status == 503 and resp.getheader("Retry-After") == "7"
    finally:
        _fault(bmc_lab, "unavailable", "--clear")
    assert conn("/redfish/v1/Systems/1").status == 200
    assert any("unavailable" in m for m in _sel(conn))


def test_dropped_connections(bmc_lab: Any, conn: Any) -> None:
    _fault(bmc_lab, "drop")
    try:
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError, ssl.SSLError)):
            conn("/redfish/v1/Systems/1").read()
    finally:
        _fault(bmc_lab, "drop", "--clear")
    assert conn("/redfish/v1/Systems/1").status == 200


def test_latency_outlasts_a_short_client_timeout(bmc_lab: Any, conn: Any) -> None:
    _fault(bmc_lab, "latency", "--value", "3000")
    try:
        with pytest.raises(TimeoutError):
            conn("/redfish/v1/Systems/1", timeout=0.5).read()
    finally:
        _fault(bmc_lab, "latency", "--clear")
    assert conn("/redfish/v1/Systems/1", timeout=10).status == 200
    assert any("latency" in m for m in _sel(conn))


def test_session_expiry_makes_tokens_401(bmc_lab: Any, conn: Any) -> None:
    client = bmc_lab.client(NODE)
    token = client.get_session_key()
    assert conn("/redfish/v1/Systems/1", token=token).status == 200
    _fault(bmc_lab, "session-expiry")
    assert conn("/redfish/v1/Systems/1", token=token).status == 401
    status = subprocess.run([*CLI, "lab", "status", "--json", "--lab-dir", str(bmc_lab.state.lab_dir)],
                            capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(status.stdout)["state"] == "up"
    log = (bmc_lab.state.lab_dir / "bmcsim.log").read_text()
    assert f'"node": "{NODE}", "event": "sessions.expired"' in log
