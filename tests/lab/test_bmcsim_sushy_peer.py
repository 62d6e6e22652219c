"""An independent peer: the same client flows (plain `redfish` library calls) get the same answers
from the lab's simulator and from sushy-tools' emulator (fake driver) for power, boot override and
virtual media -- the flows both serve (boot override frequency only where sushy keeps it). sushy-emulator runs without an auth file here (it only accepts
bcrypt digests); our side keeps HTTPS and authentication on."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redfish

pytestmark = pytest.mark.lab

BOOTS = [("Pxe", "Once"), ("Cd", "Continuous"), ("Hdd", "Once")]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _emulator(work: Path, extra_conf: str = "") -> Iterator[str]:
    exe = shutil.which("sushy-emulator", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("sushy-tools not installed (pip install -e .[test])")
    port = _free_port()
    conf = work / "emulator.conf"
    conf.write_text(
        "SUSHY_EMULATOR_LISTEN_IP = '127.0.0.1'\n"
        f"SUSHY_EMULATOR_LISTEN_PORT = {port}\n"
        "SUSHY_EMULATOR_FAKE_DRIVER = True\n"
        f"SUSHY_EMULATOR_STATE_DIR = '{work}'\n"
        "SUSHY_EMULATOR_FAKE_SYSTEMS = [{'uuid': '27946b59-9e44-4fa7-8e91-f3527a1ef094', 'name': 'peer',"
        " 'power_state': 'On', 'nics': [{'mac': '00:5c:52:31:3a:9c', 'ip': '127.0.0.2'}]}]\n" + extra_conf
    )
    log = (work / "sushy.log").open("w")
    proc = subprocess.Popen([exe, "--config", str(conf)], stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        _wait(lambda: _up(url), 30)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


@pytest.fixture(scope="module")
def sushy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with _emulator(tmp_path_factory.mktemp("sushy")) as url:
        yield url


@pytest.fixture(scope="module")
def sushy_basic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """sushy-emulator with HTTP basic auth on (an htpasswd file of bcrypt digests, all it accepts) and, as
    always, no SessionService: (url, password)."""
    import bcrypt

    work = tmp_path_factory.mktemp("sushy-basic")
    password = "peer-Pa55-" + work.name[-6:]
    (work / "htpasswd").write_text(f"admin:{bcrypt.hashpw(password.encode(), bcrypt.gensalt()).decode()}\n")
    with _emulator(work, f"SUSHY_EMULATOR_AUTH_FILE = '{work / 'htpasswd'}'\n") as url:
        yield url, password


def _up(url: str) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])), timeout=1):
            return True
    except OSError:
        return False


def _wait(pred: Any, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError("condition not reached in time")


def flows(client: Any, iso_url: str) -> dict[str, Any]:
    """The client side under test: discover, power off/on, boot overrides, insert/eject media."""
    out: dict[str, Any] = {}
    system = client.get("/redfish/v1/Systems").dict["Members"][0]["@odata.id"]
    target = client.get(system).dict["Actions"]["#ComputerSystem.Reset"]["target"]
    for kind, want in (("ForceOff", "Off"), ("On", "On")):
        resp = client.post(target, body={"ResetType": kind})
        out[f"reset {kind} accepted"] = resp.status in (200, 202, 204)
        out[f"power after {kind}"] = _wait(lambda w=want: client.get(system).dict["PowerState"] == w and w, 30)
    for boot_target, enabled in BOOTS:
        resp = client.patch(system, body={"Boot": {"BootSourceOverrideTarget": boot_target,
                                                   "BootSourceOverrideEnabled": enabled}})
        boot = client.get(system).dict["Boot"]
        out[f"boot {boot_target}/{enabled}"] = (resp.status in (200, 204), boot["BootSourceOverrideTarget"],
                                                boot["BootSourceOverrideEnabled"])
    media = _cd(client, system)
    insert = client.get(media).dict["Actions"]["#VirtualMedia.InsertMedia"]["target"]
    eject = client.get(media).dict["Actions"]["#VirtualMedia.EjectMedia"]["target"]
    resp = client.post(insert, body={"Image": iso_url, "Inserted": True, "WriteProtected": True})
    got = client.get(media).dict
    out["media inserted"] = (resp.status in (200, 202, 204), got.get("Inserted"), got.get("Image"))
    resp = client.post(eject, body={})
    got = client.get(media).dict
    out["media ejected"] = (resp.status in (200, 202, 204), bool(got.get("Inserted")), got.get("Image") or None)
    return out


def _cd(client: Any, system: str) -> str:
    links = [client.get(system).dict.get("VirtualMedia")]
    for mgr in client.get("/redfish/v1/Managers").dict["Members"]:
        links.append(client.get(mgr["@odata.id"]).dict.get("VirtualMedia"))
    for link in filter(None, links):
        coll = client.get(link["@odata.id"])
        if coll.status != 200:
            continue
        for member in coll.dict["Members"]:
            res = client.get(member["@odata.id"]).dict
            if "CD" in res.get("MediaTypes", []):
                return str(member["@odata.id"])
    raise AssertionError("no virtual CD")


def test_same_answers_as_sushy_emulator(bmc_lab: Any, sushy: str, image_server: Any) -> None:
    (image_server.directory / "boot.iso").write_bytes(b"\0" * 2048)
    iso = image_server.url_for("boot.iso")
    peer = redfish.redfish_client(base_url=sushy, username="admin", password="unused", timeout=15)
    peer.login(auth="basic")
    ours = bmc_lab.client("node02")
    theirs_out, ours_out = flows(peer, iso), flows(ours, iso)
    ours.logout()
    # sushy-tools stores only the boot target and always answers BootSourceOverrideEnabled "Continuous"
    # (its main.py: "we always set the boot device frequency to continuous"): compare the target there.
    for boot_target, enabled in BOOTS:
        key = f"boot {boot_target}/{enabled}"
        assert ours_out[key] == (True, boot_target, enabled)
        if enabled != "Continuous":
            assert theirs_out[key][:2] == ours_out[key][:2]
            del theirs_out[key], ours_out[key]
    assert ours_out == theirs_out
    assert ours_out["media inserted"] == (True, True, iso)
    assert ours_out["power after ForceOff"] == "Off"


def test_the_connector_talks_basic_to_sushy_emulator_with_auth_on(sushy_basic: tuple[str, str]) -> None:
    """auto: sushy's service root links no SessionService, so the connector logs in with basic auth (it
    was refused "credentials refused" before: it POSTed a session login first and took the 404 for no)."""
    from pydantic import SecretStr

    from provision.redfish.connector import Connector, ConnectorOptions
    from provision.redfish.errors import RedfishAuthError
    from provision.redfish.ops.session import node_facts

    url, password = sushy_basic
    opts = ConnectorOptions(address=url, username="admin", password=SecretStr(password), name="peer",
                            insecure_http=True)  # sushy-emulator serves plain HTTP on loopback
    conn = Connector(opts)
    conn.open()
    try:
        node = node_facts(conn)
        assert node.system.power_state in ("On", "Off")
        assert conn.stats.relogins == 0
    finally:
        conn.close()
    wrong = Connector(opts.model_copy(update={"password": SecretStr("not-" + password)}))
    with pytest.raises(RedfishAuthError, match=r"refused \(basic auth\)"):
        wrong.open()
