"""Whole real captures (HPE iLO 5, Lenovo XCC, NVIDIA GH200) served two ways, read by the project's CLI:

1. by an independent server, sushy-tools' `sushy-static` (a plain file server of a short mockup: no auth,
   every POST/PATCH 204, and a query string is part of the path it looks up);
2. by the project's simulator as captured (`provision lab up --bmc-only --bmc-tree DIR --as-captured`),
   read and written: BIOS pending, a firmware update with its Task, a power cycle.

Expected answers are facts read from the capture files (FACTS is checked against them first). Every
server is bounded (timeouts) and always stopped (`finally`). Run under the lab lock.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.bringup.stages.firmware import FirmwareStage
from provision.campaign.evidence import Evidence
from provision.conformance.model import Outcome
from provision.journal import Journal
from provision.lab import manager
from provision.lab.bmcsim.images import build_image
from provision.lab.campaign_kit import SimLog
from provision.lab.inventory_writer import absolute_images
from provision.spec import load_fleet

pytestmark = pytest.mark.lab

REPO = Path(__file__).resolve().parents[2]
FULL = REPO / "tests" / "fixtures" / "redfish" / "full"
CLI = [sys.executable, "-c", "from provision.cli import run; run()"]
R = "/redfish/v1"
P, W, F, E = Outcome.PASS, Outcome.WARN, Outcome.FAIL, Outcome.ERROR


@dataclass(frozen=True)
class Facts:
    system: str
    model: str | None  # ComputerSystem.Model (GH200's System_0 has none)
    cpus: int  # ProcessorSummary.Count
    bmc_fw: str  # FirmwareInventory/<bmc_id> Version
    bmc_id: str
    pending: str  # Bios @Redfish.Settings SettingsObject, as captured
    no_attribute: tuple[str, ...]  # ml_prod_v4 BIOS keys this capture's BIOS has no attribute for


SPEC_BIOS = yaml.safe_load((REPO / "inventory/group_vars/all/profile_ml_prod_v4.yml").read_text())[
    "provision_profile_ml_prod_v4"]["bios"]["settings"]
# HPE A42 ROM and Lenovo XCC UEFI: no MMIO-above-4G or ReBAR attribute (in the Bios nor in the registry).
# GH200 (Grace, Arm): its 203-attribute registry has PCIe-port, memory-test, EGM, TPM and console settings
# and none of the ten spec keys (no SR-IOV, SMMU, SMT, NUMA, turbo or boot-mode attribute).
FACTS = {
    "hpe": Facts(f"{R}/Systems/1", "ProLiant DL385 Gen10 Plus v2", 2, "2.72 Sep 04 2022", "1",
                 f"{R}/systems/1/bios/settings", ("above_4g_decoding", "resizable_bar")),
    "lenovo": Facts(f"{R}/Systems/1", "ThinkSystem SR670 V2", 2, "42S-2.83", "BMC-Primary",
                    f"{R}/Systems/1/Bios/Pending", ("above_4g_decoding", "resizable_bar")),
    "nvidia_gh200": Facts(f"{R}/Systems/System_0", None, 2, "GH200-24.05-2", "FW_BMC_0",
                          f"{R}/Systems/System_0/Bios/Settings", tuple(sorted(SPEC_BIOS))),
}
CAPTURES = list(FACTS)


def _captured(name: str, uri: str) -> dict[str, Any]:
    return dict(json.loads((FULL / name / uri.lstrip("/") / "index.json").read_text()))


@pytest.mark.parametrize("name", CAPTURES)
def test_the_facts_are_the_captures(name: str) -> None:
    f = FACTS[name]
    system = _captured(name, f.system)
    assert system.get("Model") == f.model and system["ProcessorSummary"]["Count"] == f.cpus
    assert _captured(name, f"{R}/UpdateService/FirmwareInventory/{f.bmc_id}")["Version"] == f.bmc_fw
    bios = _captured(name, str(system["Bios"]["@odata.id"]))
    assert bios["@Redfish.Settings"]["SettingsObject"]["@odata.id"].rstrip("/") == f.pending


# --- servers ---------------------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"sushy-static exited with {proc.returncode}")
        with socket.socket() as sock:
            sock.settimeout(0.5)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"sushy-static did not listen on {port} within {timeout} s")


@contextlib.contextmanager
def sushy_static(tree: Path, work: Path) -> Iterator[str]:
    """sushy-static serving `tree` (its short form: the redfish/v1 folder); always stopped."""
    exe = shutil.which("sushy-static", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("sushy-tools not installed (pip install -e .[test])")
    port = _free_port()
    log = (work / "sushy-static.log").open("wb")
    proc = subprocess.Popen([exe, "--interface", "127.0.0.1", "--port", str(port), "--mockup-files",
                             str(tree / "redfish" / "v1")], stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_port(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def _for_any_platform(inventory: Path) -> Path:
    """The inventory's profiles for any platform and their images for any platform: these tests judge how each
    capture is read, not whether ML-PROD-V4 describes it (it describes the SYS-821GE-TNHR only: that refusal is
    test_the_example_profile_is_refused_on_another_platform's, and tests/unit/redfish/test_platform_fit.py's)."""
    for path in sorted((inventory.parent / "group_vars").rglob("profile_*.yml")):
        data = yaml.safe_load(path.read_text())
        for spec in data.values():
            spec["platforms"] = "any"
            for fw in spec.get("firmware") or []:
                fw["applies_to"] = "any"
        path.write_text("---\n" + yaml.safe_dump(data, sort_keys=False))
    return inventory


def _peer_inventory(work: Path, address: str) -> Path:
    """An inventory with one ml_prod_v4 node whose BMC is `address` (the project's specs, copied)."""
    inv = work / "inventory"
    (inv / "host_vars").mkdir(parents=True)
    shutil.copytree(REPO / "inventory" / "group_vars", inv / "group_vars")
    absolute_images(inv / "group_vars", REPO / "inventory")
    hosts = {"all": {"children": {"ml_prod_v4": {"hosts": {"node01": None}}}}}
    (inv / "hosts.yml").write_text(yaml.safe_dump(hosts))
    hv = {"provision_bmc_address": address, "provision_bmc_username": "admin", "provision_bmc_password": "x",
          "provision_bmc_insecure_http": True}  # sushy-static serves plain HTTP on loopback
    (inv / "host_vars" / "node01.yml").write_text(yaml.safe_dump(hv))
    return inv / "hosts.yml"


@pytest.fixture(scope="module", params=CAPTURES)
def peer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    work = tmp_path_factory.mktemp(f"sushy-{request.param}")
    with sushy_static(FULL / request.param, work) as address:
        yield request.param, _for_any_platform(_peer_inventory(work, address))


@pytest.fixture(scope="module", params=CAPTURES)
def sim(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
        lab_factory: Any) -> Iterator[tuple[str, Any]]:
    with lab_factory(tmp_path_factory.mktemp(f"lab-{request.param}"), nodes=1, bmc_tree=FULL / request.param,
                     as_captured=True) as lab:
        example = tmp_path_factory.mktemp(f"example-{request.param}") / "inventory"
        shutil.copytree(lab.state.inventory.parent, example)  # the lab's own copy, as `lab up` wrote it
        _for_any_platform(lab.state.inventory)
        EXAMPLE_COPY[request.param] = example / "hosts.yml"
        yield request.param, lab


EXAMPLE_COPY: dict[str, Path] = {}
"""Per capture, the lab's inventory as `lab up` wrote it (the example profiles unchanged)."""


def test_the_example_profile_is_refused_on_another_platform(sim: tuple[str, Any]) -> None:
    """`firmware plan` and `firmware update` of the ML-PROD-V4 baseline on a capture that is not a SYS-821GE-TNHR:
    one line naming node, platform and profile, exit 2, and the simulator's log shows nothing sent."""
    name, lab = sim
    if name == "supermicro":
        pytest.skip("the SYS-821GE-TNHR itself: ML-PROD-V4 describes it")
    start = time.time()
    for args in (("firmware", "plan"), ("firmware", "update"), ("bios", "apply", "--no-reset")):
        proc = subprocess.run([*CLI, *args, "node01", "-i", str(EXAMPLE_COPY[name])], capture_output=True,
                              text=True, timeout=180, check=False, cwd=REPO)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr[-1000:]
        assert re.search(r"^error: node01 is an? .+; profile ML-PROD-V4 describes Supermicro SYS-821GE-TNHR: "
                         r"refused, nothing written$", lines[0]), lines[0]
    log = SimLog(lab.state.lab_dir / manager.SIM_LOG)
    changes = ("task.start", "bios.staged", "system.patch")
    assert [e for e in log.events if e["t"] >= start and e["event"] in changes] == []
    assert any(e["t"] >= start and e["event"] == "login" for e in log.events)  # it did reach the BMC


# --- the CLI ---------------------------------------------------------------------------------
@dataclass
class Answer:
    rc: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        return dict(json.loads(self.out))


def cli(inventory: Path, *args: str, timeout: float = 180) -> Answer:
    """One CLI call, bounded: a client that loops fails here on the timeout, not in CI's."""
    proc = subprocess.run([*CLI, *args, "node01", "-i", str(inventory), "--json"], capture_output=True,
                          text=True, timeout=timeout, check=False, cwd=REPO)
    answer = Answer(proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    # 1: drift, or a one-line error; 3 (README "Exit codes"): the answer, and a spec key that could not be checked
    assert answer.rc in (0, 1, 3), f"{args}: exit {answer.rc}: {proc.stderr[-500:]}"
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith((" ", "/"))]
    if answer.rc == 1 and not answer.out.strip():
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-1000:]
    if answer.rc == 3:
        assert answer.out.strip() and lines[-1].startswith("error: ") and "could not be checked" in lines[-1], \
            proc.stderr[-1000:]
    return answer


READS = [("bmc", "inventory"), ("firmware", "status"), ("bios", "diff"), ("sel",)]


def _inventory_facts(name: str, answer: Answer) -> None:
    f = FACTS[name]
    inv = answer.json()["inventory"]
    if f.model is not None:
        assert inv["system"]["model"] == f.model
    assert len(inv["cpus"]) == f.cpus


def _bmc_version_seen(name: str, answer: Answer) -> None:
    versions = [e["raw_version"] for c in answer.json()["components"] for e in c["entries"]]
    assert FACTS[name].bmc_fw in versions


def _bios_pending(name: str, answer: Answer) -> None:
    assert answer.json()["plan"]["pending_uri"].rstrip("/") == FACTS[name].pending


# --- complete answers (issue 17's done-when): the same checks on both servers -----------------------
SEL = {  # the system event log of each capture, and its entries as captured
    "hpe": f"{R}/Systems/1/LogServices/IML",  # iLO's IML, not the Security Log listed first
    "lenovo": f"{R}/Systems/1/LogServices/SEL",  # captured without an Entries link: no entries to read
    "nvidia_gh200": f"{R}/Systems/System_0/LogServices/SEL",
}
FIRMWARE_FOUND = {  # baseline components whose running entries each capture lists (read from the files)
    "hpe": {"bmc": ["1"], "bios": ["2"]},  # "iLO 5", "System ROM" (not "Redundant System ROM")
    "lenovo": {"bmc": ["BMC-Primary"], "bios": ["UEFI"], "gpu": [f"GPU{i}" for i in range(1, 9)]},
    "nvidia_gh200": {"bmc": ["FW_BMC_0"], "bios": ["UEFI"], "gpu": ["HGX_FW_GPU_0", "HGX_FW_GPU_1"]},
}


def _sel_ids(name: str) -> list[str]:
    entries = _captured(name, SEL[name]).get("Entries")
    if not entries:
        return []
    members = _captured(name, entries["@odata.id"])["Members"]
    return [str(_captured(name, m["@odata.id"])["Id"]) for m in members]


def test_the_sel_facts_are_the_captures() -> None:
    assert len(_sel_ids("hpe")) == 5 and len(_sel_ids("nvidia_gh200")) == 5 and _sel_ids("lenovo") == []
    for name, comps in FIRMWARE_FOUND.items():
        for ids in comps.values():
            for i in ids:
                assert _captured(name, f"{R}/UpdateService/FirmwareInventory/{i}")["Version"]


def _complete_sel(name: str, answer: Answer) -> None:
    assert answer.rc == 0, answer.err[-500:]
    assert [e["id"] for e in answer.json()["entries"]] == _sel_ids(name)


def _complete_firmware(name: str, answer: Answer) -> None:
    comps = {c["component"]: c for c in answer.json()["components"]}
    for comp, ids in FIRMWARE_FOUND[name].items():
        assert sorted(e["id"] for e in comps[comp]["entries"]) == sorted(ids), comp
        assert all(e["version"] for e in comps[comp]["entries"]), f"{comp}: a version unread"
    absent = {c for c, row in comps.items() if not row["entries"]}
    assert absent == {"bmc", "bios", "gpu", "nvswitch"} - set(FIRMWARE_FOUND[name]), "absent is said, not hidden"


def _complete_inventory(name: str, answer: Answer) -> None:
    _inventory_facts(name, answer)
    data = answer.json()
    assert data["unreadable"] == [], data["unreadable"]
    inv = data["inventory"]
    assert all(c["model"] for c in inv["cpus"]) and inv["memory"] and inv["firmware"]
    system = _captured(name, FACTS[name].system)
    assert inv["system"]["power_state"] == system["PowerState"]


def _power_status(name: str, inventory: Path) -> None:
    proc = subprocess.run([*CLI, "power", "node01", "status", "-i", str(inventory)], capture_output=True, text=True,
                          timeout=120, check=False, cwd=REPO)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-1000:]
    assert proc.stdout.strip() == f"node01: {_captured(name, FACTS[name].system)['PowerState']}"


def _answers_completely(name: str, inv: Path) -> None:
    """Inventory, firmware, SEL and power state of capture `name`, read through the CLI from `inv`'s BMC."""
    _complete_inventory(name, cli(inv, "bmc", "inventory"))
    _complete_firmware(name, cli(inv, "firmware", "status"))
    _complete_sel(name, cli(inv, "sel"))
    _power_status(name, inv)


def test_complete_answers_from_sushy_static(peer: tuple[str, Path]) -> None:
    _answers_completely(*peer)


def test_complete_answers_from_the_simulator(sim: tuple[str, Any]) -> None:
    name, lab = sim
    _answers_completely(name, lab.state.inventory)


def test_sushy_static_serves_the_capture_as_captured(peer: tuple[str, Path]) -> None:
    name, inv = peer
    address = yaml.safe_load((inv.parent / "host_vars" / "node01.yml").read_text())["provision_bmc_address"]
    with urllib.request.urlopen(f"{address}{FACTS[name].system}", timeout=10) as resp:
        assert json.loads(resp.read()).get("Model") == FACTS[name].model


@pytest.mark.parametrize("args", READS, ids=["-".join(a) for a in READS])
def test_the_client_reads_sushy_static_without_crash_or_loop(peer: tuple[str, Path], args: tuple[str, ...]) -> None:
    _name, inv = peer
    cli(inv, *args)  # bounded, no traceback, JSON or one-line error


def test_the_client_gets_the_inventory_from_sushy_static(peer: tuple[str, Path]) -> None:
    name, inv = peer
    _inventory_facts(name, cli(inv, "bmc", "inventory"))


def test_the_client_gets_the_bmc_firmware_from_sushy_static(peer: tuple[str, Path]) -> None:
    name, inv = peer
    _bmc_version_seen(name, cli(inv, "firmware", "status"))


def test_the_firmware_stage_observes_sushy_static_without_waiting(peer: tuple[str, Path], tmp_path: Path) -> None:
    """The bring-up's firmware stage reads the whole capture's TaskService (empty in each) and then its
    FirmwareInventory: no task to wait for, the BMC entry as captured."""
    name, inv = peer
    host = load_fleet(inv).select(["node01"])[0]
    stage = FirmwareStage(BringupOptions(inventory=inv, poll_s=0.1))
    with Journal(tmp_path / "journal.db") as jr:
        ctx = StageContext(host=host, journal=jr, run_id=jr.start_run("bringup", host.name))
        started = time.monotonic()
        observed = stage.observe(ctx)
    assert time.monotonic() - started < 30
    assert observed.evidence == Evidence()  # nothing running, nothing staged
    assert observed.firmware.tasks is None or observed.firmware.tasks == frozenset()
    assert FACTS[name].bmc_fw in {e.version for e in observed.firmware.entries}


def test_the_client_gets_the_bios_pending_uri_from_sushy_static(peer: tuple[str, Path]) -> None:
    name, inv = peer
    _bios_pending(name, cli(inv, "bios", "diff"))


# --- the simulator, as captured ------------------------------------------------------------
def test_the_simulator_serves_the_capture_as_captured(sim: tuple[str, Any]) -> None:
    name, lab = sim
    client = lab.client("node01")
    try:
        system = client.get(FACTS[name].system)
        assert system.status == 200 and system.dict.get("Model") == FACTS[name].model
        assert system.dict["ProcessorSummary"]["Count"] == FACTS[name].cpus
        fw = client.get(f"{R}/UpdateService/FirmwareInventory/{FACTS[name].bmc_id}").dict
        assert fw["Version"] == FACTS[name].bmc_fw
    finally:
        client.logout()
    if name == "lenovo":
        assert len(lab.state.warnings) == 2 and all("malformed JSON" in w for w in lab.state.warnings)
        raw = (FULL / name / "redfish/v1/TelemetryService/MetricReports/PowerMetrics/index.json").read_bytes()
        client = lab.client("node01")
        try:
            got = client.get(f"{R}/TelemetryService/MetricReports/PowerMetrics")
            data = got.read if isinstance(got.read, bytes) else str(got.read).encode()
            assert got.status == 200 and data == raw
        finally:
            client.logout()
    else:
        assert lab.state.warnings == []


@pytest.mark.parametrize("args", READS, ids=["-".join(a) for a in READS])
def test_the_client_reads_the_simulator_without_crash_or_loop(sim: tuple[str, Any], args: tuple[str, ...]) -> None:
    _name, lab = sim
    answer = cli(lab.state.inventory, *args)
    assert answer.out.strip(), "an answer, not only an error"
    answer.json()


def test_the_client_gets_the_inventory_from_the_simulator(sim: tuple[str, Any]) -> None:
    name, lab = sim
    _inventory_facts(name, cli(lab.state.inventory, "bmc", "inventory"))


def test_the_client_gets_the_bios_pending_uri_from_the_simulator(sim: tuple[str, Any]) -> None:
    name, lab = sim
    _bios_pending(name, cli(lab.state.inventory, "bios", "diff"))


def test_the_client_finds_the_bmc_firmware_on_the_simulator(sim: tuple[str, Any]) -> None:
    name, lab = sim
    _bmc_version_seen(name, cli(lab.state.inventory, "firmware", "status"))


def test_the_client_finds_gpu_firmware_on_gh200(sim: tuple[str, Any]) -> None:
    name, lab = sim
    if name != "nvidia_gh200":
        pytest.skip("GH200 only")
    comps = {c["component"]: c for c in cli(lab.state.inventory, "firmware", "status").json()["components"]}
    entry = next(e for e in comps["gpu"]["entries"] if e["id"] == "HGX_FW_GPU_0")
    # captured with two trailing spaces: the raw version as the BMC gave it, the parsed one without them
    assert entry["raw_version"] == _captured(name, f"{R}/UpdateService/FirmwareInventory/HGX_FW_GPU_0")["Version"]
    assert entry["version"] == "96.00.A6.00.01"


def test_bios_apply_then_diff_shows_the_pending_value(sim: tuple[str, Any]) -> None:
    name, lab = sim
    diff = cli(lab.state.inventory, "bios", "diff")
    plan = diff.json()["plan"]
    assert sorted(plan["unmapped"]) == sorted(FACTS[name].no_attribute), "never reported as matching"
    if set(FACTS[name].no_attribute) == set(SPEC_BIOS):  # GH200: nothing to write, and it says so (exit 3)
        assert diff.rc == 3 and plan["changes"] == [] and plan["invalid"] == []
        applied = cli(lab.state.inventory, "bios", "apply", "--no-reset")
        assert applied.rc == 3 and applied.json()["applied"] is False
        return
    assert plan["changes"], "the spec's BIOS keys map to this vendor's attributes"
    cli(lab.state.inventory, "bios", "apply", "--no-reset")
    after = cli(lab.state.inventory, "bios", "diff").json()["plan"]
    assert after["changes"] == [] or all(c.get("pending") for c in after["changes"])


def _bios_enum(client: Any, bios_uri: str) -> tuple[str, str]:
    """A writable enumeration of the captured registry: (attribute, a value other than the current one)."""
    current = client.get(bios_uri).dict["Attributes"]
    name = client.get(bios_uri).dict.get("AttributeRegistry")
    for reg_uri in _attribute_registries(client):
        reg = client.get(reg_uri).dict
        if name and name not in (reg.get("Id"), reg_uri.rsplit("/", 1)[-1]):
            continue
        for a in reg.get("RegistryEntries", {}).get("Attributes", []):
            values = [v.get("ValueName") for v in a.get("Value") or []]
            key = a.get("AttributeName")
            if a.get("Type") == "Enumeration" and not a.get("ReadOnly") and not a.get("Immutable") and \
                    key in current and current[key] in values and len(values) > 1:
                return str(key), str(next(v for v in values if v != current[key]))
    raise AssertionError("no writable enumeration in the captured registry")


def _attribute_registries(client: Any) -> list[str]:
    out = []
    for m in client.get(f"{R}/Registries").dict.get("Members", []):
        for loc in client.get(m["@odata.id"]).dict.get("Location", []):
            uri = loc.get("Uri")
            if uri and "ttribute" in uri:
                out.append(str(uri))
    return out


def test_bios_pending_then_a_power_cycle_applies_it(sim: tuple[str, Any]) -> None:
    name, lab = sim
    f = FACTS[name]
    client = lab.client("node01")
    try:
        bios_uri = str(client.get(f.system).dict["Bios"]["@odata.id"])
        attr, want = _bios_enum(client, bios_uri)
        assert client.patch(f.pending, body={"Attributes": {attr: want}}).status in (200, 202, 204)
        assert client.get(f.pending).dict["Attributes"][attr] == want
        assert client.get(bios_uri).dict["Attributes"][attr] != want
    finally:
        client.logout()
    power = subprocess.run([*CLI, "power", "node01", "cycle", "-i", str(lab.state.inventory)], capture_output=True,
                           text=True, timeout=240, check=False, cwd=REPO)
    assert power.returncode == 0 and "Traceback" not in power.stderr, power.stderr[-1000:]
    client = lab.client("node01")
    try:
        deadline = time.monotonic() + 60
        while client.get(bios_uri).dict["Attributes"][attr] != want:
            assert time.monotonic() < deadline, "the pending value was not applied at the power cycle"
            time.sleep(0.5)
        assert client.get(f.system).dict["PowerState"] == "On"
    finally:
        client.logout()


UPDATES = {  # the flow the capture advertises, and the FirmwareInventory entry to update
    "hpe": ("SimpleUpdate", "1"),
    "lenovo": ("MultipartHttpPushUri", "UEFI"),
    "nvidia_gh200": ("MultipartHttpPushUri", "HGX_FW_GPU_0"),
}


def test_a_firmware_update_of_one_component_completes_with_a_task(sim: tuple[str, Any], image_server: Any) -> None:
    name, lab = sim
    flow, fw_id = UPDATES[name]
    target = f"{R}/UpdateService/FirmwareInventory/{fw_id}"
    image = build_image(fw_id, f"{name}-lab-9.9")
    client = lab.client("node01")
    try:
        before = client.get(target).dict["Version"]
        service = client.get(f"{R}/UpdateService").dict
        if flow == "SimpleUpdate":
            (image_server.directory / f"{name}.bin").write_bytes(image)
            action = service["Actions"]["#UpdateService.SimpleUpdate"]["target"]
            reply = client.post(action, body={"ImageURI": image_server.url_for(f"{name}.bin"), "Targets": [target]})
        else:
            params = json.dumps({"Targets": [target]})
            reply = client.post(service["MultipartHttpPushUri"], body={
                "UpdateParameters": ("params.json", params, "application/json"),
                "UpdateFile": ("fw.bin", image, "application/octet-stream")},
                headers={"Content-Type": "multipart/form-data"})
        assert reply.status == 202, reply.text
        task = reply.getheader("Location")
        deadline = time.monotonic() + 60
        while (state := client.get(task).dict["TaskState"]) not in ("Completed", "Exception"):
            assert time.monotonic() < deadline, f"task {task} stuck in {state}"
            time.sleep(0.3)
        assert state == "Completed"
        assert client.get(target).dict["Version"] == f"{name}-lab-9.9" != before
    finally:
        client.logout()


# --- the BMC checks of `provision verify` over sushy-static, on all four captures ------------------------
# The same rows tests/unit/redfish/test_bmc_checks_full_captures.py reads through the project's loopback BMC,
# here through an independent server. READINGS are read from the capture files (checked against them first);
# the outcomes are ML-PROD-V4's (inlet <= 35 C; internal ambient warns above 35 C; 2 PSUs 2N; 6 fans N+1;
# 2 sockets x 8 channels x 2 DIMMs; 8 GPUs).
@dataclass(frozen=True)
class Readings:
    system: str
    intake: tuple[str, ...]  # the Temperatures of PhysicalContext Intake
    inlet: tuple[str, int] | None  # the inlet sensor and its reading (by PhysicalContext, else by name)
    ambient: tuple[str, int] | None  # the internal ambient sensor (Supermicro's plugin: 'System Temp')
    psus: tuple[int, int]  # (healthy, present) of Power.PowerSupplies
    psu_redundancy: str | None  # Power.Redundancy Mode, its Health OK
    fans: tuple[int, int]  # (healthy, listed) of Thermal.Fans; no capture has a fan Redundancy group
    dimms: tuple[int, int, int] | None  # populated: sockets, channels per socket, DIMMs per channel (MemoryLocation)
    gpus: tuple[int, str]  # GPU Processors (model: theirs, else their PCIe device's name), else GPU PCIe devices


READINGS = {
    "hpe": Readings(f"{R}/Systems/1", ("01-Inlet Ambient",), ("01-Inlet Ambient", 20), None, (2, 2), "Failover",
                    (6, 6), (2, 8, 1), (0, "")),
    "lenovo": Readings(f"{R}/Systems/1", ("Ambient Temp",), ("Ambient Temp", 19), None, (4, 4), "N+m", (10, 10),
                       (2, 8, 1), (8, "NVIDIA L40")),
    # GH200: Chassis/*/Sensors only (no Thermal, no Power): its 'InletSensor_N' are PhysicalContext GPUSubsystem
    "nvidia_gh200": Readings(f"{R}/Systems/System_0", (), None, None, (0, 0), None, (0, 0), None,
                             (2, "NVIDIA GH200 96GB HBM3")),
    # Supermicro: no Intake sensor; 'Inlet Temp' (SystemBoard) is the inlet by its name
    "supermicro": Readings(f"{R}/Systems/1", (), ("Inlet Temp", 21), ("System Temp", 37), (8, 8), "Failover",
                           (6, 6), (2, 8, 2), (8, "H100 80GB HBM3")),
}
BMC_CAPTURES = sorted(READINGS)
# check id -> outcome of each capture under ML-PROD-V4
OUTCOMES = {
    "hpe": {"bmc.inlet": P, "bmc.internal_ambient": E, "bmc.psu": P, "bmc.psu_redundancy": P, "bmc.fans": P,
            "bmc.fan_redundancy": P, "bmc.memory_population": F, "bmc.gpu_count": F},
    "lenovo": {"bmc.inlet": P, "bmc.internal_ambient": E, "bmc.psu": P, "bmc.psu_redundancy": P, "bmc.fans": P,
               "bmc.fan_redundancy": P, "bmc.memory_population": F, "bmc.gpu_count": P},
    "nvidia_gh200": {"bmc.inlet": E, "bmc.internal_ambient": E, "bmc.psu": E, "bmc.psu_redundancy": E,
                     "bmc.fans": E, "bmc.fan_redundancy": E, "bmc.memory_population": E, "bmc.gpu_count": F},
    "supermicro": {"bmc.inlet": P, "bmc.internal_ambient": W, "bmc.psu": P, "bmc.psu_redundancy": P, "bmc.fans": P,
                   "bmc.fan_redundancy": P, "bmc.memory_population": P, "bmc.gpu_count": P},
}


def _members(name: str, uri: str) -> list[dict[str, Any]]:
    return [_captured(name, m["@odata.id"]) for m in _captured(name, uri).get("Members", [])]


def _chassis_parts(name: str, part: str) -> list[dict[str, Any]]:
    """Chassis/*/<part> (Thermal, Power) as captured, of every chassis that has one."""
    return [json.loads(f.read_text()) for f in sorted((FULL / name).glob(f"redfish/v1/Chassis/*/{part}/index.json"))]


def _healthy(items: list[dict[str, Any]]) -> tuple[int, int]:
    present = [i for i in items if i.get("Status", {}).get("State") not in ("Absent", None)]
    return sum(1 for i in present if i["Status"].get("Health") == "OK"), len(present)


def _dimm_layout(name: str, system: str) -> tuple[int, int, int] | None:
    dimms = [m for m in _members(name, f"{system}/Memory") if m.get("Status", {}).get("State") == "Enabled"]
    locs = [m.get("MemoryLocation") or {} for m in dimms]
    if any("Socket" not in loc or "Channel" not in loc for loc in locs):
        return None
    channels: dict[tuple[Any, Any, Any], int] = {}
    for loc in locs:
        key = (loc["Socket"], loc.get("MemoryController"), loc["Channel"])
        channels[key] = channels.get(key, 0) + 1
    sockets = {k[0] for k in channels}
    per_socket = {sum(1 for k in channels if k[0] == s) for s in sockets}
    assert len(per_socket) == 1 and len(set(channels.values())) == 1, (name, channels)
    return len(sockets), per_socket.pop(), set(channels.values()).pop()


def _gpus(name: str) -> tuple[int, str]:
    procs = [p for s in _members(name, f"{R}/Systems") if "Processors" in s
             for p in _members(name, s["Processors"]["@odata.id"]) if p.get("ProcessorType") == "GPU"]
    models = [p.get("Model") or _captured(name, p["Links"]["PCIeDevice"]["@odata.id"])["Name"] for p in procs]
    if not procs:
        models = [json.loads(f.read_text())["Model"]
                  for f in (FULL / name).glob("redfish/v1/Chassis/*/PCIeDevices/GPU*/index.json")]
    assert len(set(models)) <= 1, models
    return len(models), models[0] if models else ""


@pytest.mark.parametrize("name", BMC_CAPTURES)
def test_the_bmc_readings_are_the_captures(name: str) -> None:
    r = READINGS[name]
    thermal, power = _chassis_parts(name, "Thermal"), _chassis_parts(name, "Power")
    temps = {t["Name"]: t for th in thermal for t in th.get("Temperatures", [])}
    if name == "nvidia_gh200":  # sensors only in Chassis/*/Sensors
        temps = {s["Name"]: s for f in (FULL / name).glob("redfish/v1/Chassis/*/Sensors/*/index.json")
                 if (s := json.loads(f.read_text())).get("ReadingType") == "Temperature"}
        assert temps and not thermal and not power
    assert tuple(n for n, t in temps.items() if t.get("PhysicalContext") == "Intake") == r.intake
    for sensor in (r.inlet, r.ambient):
        if sensor is not None:
            t = temps[sensor[0]]
            assert t.get("ReadingCelsius", t.get("Reading")) == sensor[1]
    assert _healthy([p for pw in power for p in pw.get("PowerSupplies", [])]) == r.psus
    redundancy = [red for pw in power for red in pw.get("Redundancy", [])]
    assert [red["Mode"] for red in redundancy if red["Status"]["Health"] == "OK"] == (
        [r.psu_redundancy] if r.psu_redundancy else [])
    assert _healthy([f for th in thermal for f in th.get("Fans", [])]) == r.fans
    assert all(not th.get("Redundancy") for th in thermal)
    assert _dimm_layout(name, r.system) == r.dimms
    assert _gpus(name) == r.gpus


def _found(name: str) -> dict[str, str | None]:
    """The `found` of each row, from READINGS (None: an ERROR, whose text is the reason)."""
    r = READINGS[name]
    layout = f"{r.dimms[0]} socket(s) x {r.dimms[1]} channel(s) x {r.dimms[2]} DIMM(s)" if r.dimms else None
    return {
        "bmc.inlet": f"{r.inlet[0]} {r.inlet[1]} C" if r.inlet else None,
        "bmc.internal_ambient": f"{r.ambient[0]} {r.ambient[1]} C (warn above 35)" if r.ambient else None,
        "bmc.psu": f"{r.psus[0]} healthy of {r.psus[1]} present" if r.psus[1] else None,
        "bmc.psu_redundancy": f"{r.psus[0]} healthy PSUs; {r.psu_redundancy} OK" if r.psu_redundancy else None,
        "bmc.fans": f"{r.fans[0]} of {r.fans[1]}" if r.fans[1] else None,
        "bmc.fan_redundancy": f"{r.fans[0]} of {r.fans[1]} fans healthy; no fan Redundancy group" if r.fans[1] else None,
        "bmc.memory_population": layout,
        "bmc.gpu_count": f"{r.gpus[0]} x {r.gpus[1]}" if r.gpus[0] else "0",
    }


@pytest.fixture(scope="module", params=BMC_CAPTURES)
def verified(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    """The BMC checks of `provision verify` (its own session, as `verify` opens it) on sushy-static."""
    from provision.conformance.bmc_source import OwnSession, check_bmc
    from provision.conformance.checks._base import Context
    from provision.conformance.facts import NodeFacts
    from provision.conformance.model import Level
    from provision.spec import load_fleet

    work = tmp_path_factory.mktemp(f"sushy-verify-{request.param}")
    with sushy_static(FULL / request.param, work) as address:
        host = load_fleet(_peer_inventory(work, address)).hosts["node01"]
        ctx = Context(node="node01", spec=host.spec, facts=NodeFacts(node="node01", sections={}), level=Level.FULL)
        check_bmc(ctx, host, OwnSession())
    yield request.param, {r.id: r for r in ctx.results}


def test_the_bmc_checks_from_sushy_static(verified: tuple[str, Any]) -> None:
    name, rows = verified
    for cid, outcome in OUTCOMES[name].items():
        assert rows[cid].outcome is outcome, (cid, rows[cid])
        if outcome is E:  # about what the capture lacks, not about the connection
            assert rows[cid].detail.startswith(("the BMC reports no ", "no MemoryLocation ")), (cid, rows[cid])
        else:
            assert rows[cid].found == _found(name)[cid], (cid, rows[cid])


# --- virtual media: the os stage's drives (provision.redfish.ops.power.media_slots) --------------------------

def _captured_media(name: str) -> list[tuple[str, tuple[str, ...], bool]]:
    """The virtual drives the capture links from its first system and its first manager, each once, in order:
    read from the files, not through the client."""
    root = _captured(name, R)
    first = [str(m["@odata.id"]) for m in _captured(name, str(root["Systems"]["@odata.id"]))["Members"]][:1]
    managers = [str(m["@odata.id"]) for m in _captured(name, str(root["Managers"]["@odata.id"]))["Members"]][:1]
    out: list[tuple[str, tuple[str, ...], bool]] = []
    for owner in first + managers:
        ref = _captured(name, owner).get("VirtualMedia")
        if not isinstance(ref, dict):
            continue
        for member in _captured(name, str(ref["@odata.id"])).get("Members", []):
            uri = str(member["@odata.id"])
            media = _captured(name, uri)
            if uri not in [o[0] for o in out]:
                out.append((uri, tuple(media.get("MediaTypes") or []), bool(media.get("Inserted"))))
    return out


@pytest.mark.parametrize("name", BMC_CAPTURES)
def test_the_media_slots_from_sushy_static(name: str, tmp_path: Path) -> None:
    from provision.redfish.ops.power import media_slots
    from provision.redfish.ops.session import open_node, options_for
    from provision.spec import load_fleet

    expected = _captured_media(name)
    assert expected, f"{name}: the capture links no virtual media"
    with sushy_static(FULL / name, tmp_path) as address:
        host = load_fleet(_peer_inventory(tmp_path, address)).hosts["node01"]
        node = open_node(options_for("node01", host.bmc))
        try:
            slots = media_slots(node)
        finally:
            node.conn.close()
    assert [(s.uri, s.types, s.inserted) for s in slots] == expected
    assert any(s.is_cd for s in slots) == any(t in ("CD", "DVD") for e in expected for t in e[1])


# --- a mixed lab: one tree per node (`--bmc-tree A,B,C`), each served byte for byte ------------------
MIXED = {"node01": ("supermicro", "Systems/1"), "node02": ("hpe", "Systems/1"), "node03": ("lenovo", "Systems/1")}


@pytest.fixture(scope="module")
def mixed_lab(tmp_path_factory: pytest.TempPathFactory, lab_handle: Any) -> Iterator[Any]:
    """`provision lab up --bmc-only --as-captured --bmc-tree <supermicro>,<hpe>,<lenovo>` through the CLI (no
    --nodes: the three trees make three nodes); always `lab down` after."""
    lab_dir = tmp_path_factory.mktemp("mixed-lab")
    trees = ",".join(str(FULL / name) for name, _sys in MIXED.values())
    up = subprocess.run([*CLI, "lab", "up", "--bmc-only", "--as-captured", "--bmc-tree", trees, "--speed", "60",
                         "--lab-dir", str(lab_dir)], capture_output=True, text=True, timeout=180, check=False,
                        cwd=REPO)
    try:
        assert up.returncode == 0, up.stderr[-1000:]
        assert "BMC tree supermicro,hpe,lenovo (as captured)" in " ".join(up.stdout.split()), up.stdout
        yield lab_handle(lab_dir)
    finally:
        subprocess.run([*CLI, "lab", "down", "--lab-dir", str(lab_dir)], capture_output=True, timeout=120,
                       check=False, cwd=REPO)


def _get_bytes(lab: Any, node: str, uri: str) -> tuple[bytes, str]:
    """GET `uri` from `node`'s BMC as the lab's inventory says to reach it (its address, account, the lab CA)."""
    import base64
    import ssl

    hv = lab.host_vars(node)
    auth = base64.b64encode(f"{hv['provision_bmc_username']}:{hv['provision_bmc_password']}".encode()).decode()
    req = urllib.request.Request(f"{hv['provision_bmc_address']}{uri}", headers={"Authorization": f"Basic {auth}"})
    ctx = ssl.create_default_context(cafile=hv["provision_bmc_ca_file"])
    with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
        return resp.read(), resp.headers["ETag"]


def test_a_mixed_lab_serves_each_node_its_own_tree_byte_for_byte(mixed_lab: Any) -> None:
    assert [n.name for n in mixed_lab.state.nodes] == list(MIXED)
    addresses = {mixed_lab.host_vars(node)["provision_bmc_address"] for node in MIXED}
    assert len(addresses) == len(MIXED), "each node reached at its own address"
    for node, (name, system) in MIXED.items():
        file = FULL / name / "redfish" / "v1" / system / "index.json"
        data, etag = _get_bytes(mixed_lab, node, f"{R}/{system}")
        assert data == file.read_bytes(), f"{node}: not {name}'s captured bytes"
        captured = json.loads(file.read_bytes())
        assert etag == captured["@odata.etag"], f"{node}: the ETag header is the body's"
        assert Path(next(n.tree for n in mixed_lab.state.nodes if n.name == node) or "").name == name


def test_the_client_reads_each_node_of_the_mixed_lab_as_its_vendor(mixed_lab: Any) -> None:
    """`bmc inventory` through the lab's inventory: each node's own model and serial, as captured."""
    for node, (name, system) in MIXED.items():
        proc = subprocess.run([*CLI, "bmc", "inventory", node, "-i", str(mixed_lab.state.inventory), "--json"],
                              capture_output=True, text=True, timeout=180, check=False, cwd=REPO)
        assert proc.stdout.strip() and "Traceback" not in proc.stderr, proc.stderr[-1000:]
        got = json.loads(proc.stdout)["inventory"]["system"]
        captured = _captured(name, f"{R}/{system}")
        assert (got["model"], got["serial"]) == (captured["Model"], captured["SerialNumber"]), node
