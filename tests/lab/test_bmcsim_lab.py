"""The done criteria of the lab's BMC side, end to end over real HTTPS on loopback."""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redfish

from provision.lab.bmcsim.config import TREES_DIR
from provision.lab.bmcsim.images import make_image
from provision.lab.ca import make_ca_and_server

pytestmark = pytest.mark.lab

CLI = [sys.executable, "-c", "from provision.cli import run; run()"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, check=False)


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/cmdline").read_bytes() != b""


def test_cli_up_two_https_bmcs_then_down_leaves_nothing(tmp_path: Path, lab_handle: Any) -> None:
    lab = tmp_path / "lab"
    up = _cli("lab", "up", "--bmc-only", "--nodes", "2", "--lab-dir", str(lab))
    try:
        assert up.returncode == 0, up.stderr
        status = json.loads(_cli("lab", "status", "--json", "--lab-dir", str(lab)).stdout)
        assert status["state"] == "up" and Path(status["inventory"]).is_file()
        state = json.loads((lab / "lab.json").read_text())
        handle = lab_handle(lab)
        for node in ("node01", "node02"):
            client = handle.client(node)
            assert client.get("/redfish/v1/Systems/1").dict["PowerState"] in ("On", "Off")
            client.logout()
        hv = handle.host_vars("node01")
        assert oct((lab / "inventory" / "host_vars" / "node01.yml").stat().st_mode & 0o777) == "0o600"
        other = tmp_path / "other-ca"
        other.mkdir()
        wrong_ca, _, _ = make_ca_and_server(other)
        with pytest.raises(redfish.rest.v1.RetriesExhaustedError) as refused:
            stranger = redfish.redfish_client(base_url=hv["provision_bmc_address"], username="admin",
                                              password=hv["provision_bmc_password"], cafile=str(wrong_ca),
                                              timeout=5, max_retry=1)
            stranger.login(auth="session")
        assert "certificate verify failed" in repr(refused.value.__cause__).lower()
        with pytest.raises(urllib.error.URLError, match=r"(?i)certificate"):
            urllib.request.urlopen(f"{hv['provision_bmc_address']}/redfish/v1", timeout=5,
                                   context=ssl.create_default_context())
    finally:
        down = _cli("lab", "down", "--lab-dir", str(lab))
    assert down.returncode == 0, down.stderr
    ports = [p for n in state["nodes"] for p in (n["https_port"], n["http_port"])] + [state["control_port"]]
    assert not [p for p in ports if _listening(p)]
    assert not _alive(state["pid"])
    assert not (lab / "lab.json").exists() and not (lab / "inventory").exists()
    assert not (lab / "bmcsim.json").exists(), "the file holding the lab passwords is removed"
    assert json.loads(_cli("lab", "status", "--json", "--lab-dir", str(lab)).stdout)["state"] == "down"


def test_status_and_fault_refuse_bad_input(bmc_lab: Any) -> None:
    lab = str(bmc_lab.state.lab_dir)
    bad_kind = _cli("lab", "fault", "node01", "meteor-strike", "--lab-dir", lab)
    assert bad_kind.returncode == 2 and "meteor-strike" in bad_kind.stderr and "Traceback" not in bad_kind.stderr
    bad_node = _cli("lab", "fault", "node99", "drop", "--lab-dir", lab)
    assert bad_node.returncode == 2 and "node99" in bad_node.stderr
    again = _cli("lab", "up", "--bmc-only", "--lab-dir", lab)
    assert again.returncode == 1 and "already up" in again.stderr


# --- the same flows on each tree, as captured, and on the complete default server -------------------
BIOS_CHANGE = {
    "supermicro": ("AES_NI_3C75", "Disable"),
    "dell": ("LogicalProc", "Disabled"),
    "public-rackmount1": ("ProcHyperthreading", "Disabled"),
}


@pytest.fixture(scope="module", params=[("supermicro", False), ("supermicro", True), ("dell", True),
                                        ("public-rackmount1", True)],
                ids=["supermicro-complete", "supermicro-captured", "dell-captured", "rackmount1-captured"])
def tree_lab(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
             lab_factory: Any) -> Iterator[Any]:
    name, captured = request.param
    with lab_factory(tmp_path_factory.mktemp(f"lab-{name}"), nodes=1, bmc_tree=TREES_DIR / name,
                     as_captured=captured) as lab:
        yield lab


def _system(client: Any) -> str:
    return str(client.get("/redfish/v1/Systems").dict["Members"][0]["@odata.id"])


def _wait(pred: Any, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError("condition not reached in time")


def test_bios_bad_patch_400_good_patch_only_after_reset(tree_lab: Any) -> None:
    client = tree_lab.client("node01")
    system = _system(client)
    bios_uri = client.get(system).dict["Bios"]["@odata.id"]
    bios = client.get(bios_uri).dict
    settings = bios["@Redfish.Settings"]["SettingsObject"]["@odata.id"]
    tree = Path(tree_lab.state.tree).name
    attr, value = BIOS_CHANGE[tree]
    bad = client.patch(settings, body={"Attributes": {"NoSuchAttribute_XYZ": 1}})
    assert bad.status == 400
    assert "PropertyUnknown" in bad.dict["error"]["@Message.ExtendedInfo"][0]["MessageId"]
    assert bios["Attributes"][attr] != value
    assert client.patch(settings, body={"Attributes": {attr: value}}).status in (200, 202, 204)
    assert client.get(bios_uri).dict["Attributes"][attr] != value, "not applied before a reset"
    reset = client.post(f"{system}/Actions/ComputerSystem.Reset", body={"ResetType": "ForceRestart"})
    assert reset.status in (200, 202, 204)
    _wait(lambda: client.get(bios_uri).dict["Attributes"][attr] == value)
    client.logout()


def _bios_inventory(client: Any) -> str:
    members = client.get("/redfish/v1/UpdateService/FirmwareInventory").dict["Members"]
    for m in members:
        res = client.get(m["@odata.id"])
        if res.status == 200 and (res.dict.get("Id") == "BIOS" or (
                res.dict.get("Name") == "BIOS" and not res.dict["Id"].startswith("Previous"))):
            return str(m["@odata.id"])
    raise AssertionError("no BIOS entry in FirmwareInventory")


def test_simple_update_changes_version_after_task(tree_lab: Any, image_server: Any) -> None:
    client = tree_lab.client("node01")
    entry = _bios_inventory(client)
    before = client.get(entry).dict["Version"]
    new = f"{Path(tree_lab.state.tree).name}-9.9"
    make_image(image_server.directory / f"{new}.bin", "BIOS", new)
    resp = client.post("/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
                       body={"ImageURI": image_server.url_for(f"{new}.bin"), "TransferProtocol": "HTTP"})
    assert resp.status == 202
    task = resp.getheader("Location")
    assert client.get(entry).dict["Version"] == before
    done = _wait(lambda: (t := client.get(task).dict)["TaskState"] in ("Completed", "Exception") and t)
    assert done["TaskState"] == "Completed", done["Messages"]
    assert client.get(entry).dict["Version"] == new != before
    client.logout()
