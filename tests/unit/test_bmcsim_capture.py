"""The simulator serves any Mockup-Creator capture as captured: the loader's layout rules on small
trees written here, then the four whole captures under tests/fixtures/redfish/full, read and written."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from provision.errors import InputError
from provision.lab.bmcsim import capture
from provision.lab.bmcsim.bmc import Bmc
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.config import BmcConfig, Parts, SimConfig
from provision.lab.bmcsim.images import build_image
from provision.lab.bmcsim.reply import Reply
from provision.lab.bmcsim.request import Request
from provision.lab.bmcsim.seed import build, get_seed

FULL = Path(__file__).resolve().parents[1] / "fixtures" / "redfish" / "full"
R = "/redfish/v1"
BASIC = {"Authorization": "Basic " + base64.b64encode(b"admin:pw").decode()}
TRUNCATED = b'{"@odata.id": "/redfish/v1/TelemetryService/MetricReports/X", "MetricValues": [{"Metric'


def _write(path: Path, data: object) -> None:
    path.mkdir(parents=True, exist_ok=True)
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    (path / "index.json").write_bytes(raw)


@pytest.fixture
def tall(tmp_path: Path) -> Path:
    """A tall mockup with one of each thing the layout allows."""
    top = tmp_path / "capture"
    v1 = top / "redfish" / "v1"
    _write(v1, {"@odata.id": f"{R}/", "Systems": {"@odata.id": f"{R}/Systems"}})
    _write(v1 / "Systems", {"@odata.id": f"{R}/Systems", "Members": []})
    _write(v1 / "JsonSchemas" / "Triggers" / "Triggers.json", {"title": "#Triggers.Triggers"})
    _write(v1 / "TelemetryService" / "MetricReports" / "X", TRUNCATED)
    _write(v1 / "Odd", b"[1, 2]")
    _write(v1 / "Log" / "Entries", {"@odata.id": f"{R}/Log/Entries", "Members": [{"Id": "first"}]})
    _write(v1 / "Log" / "Entries?$skip=1", {"@odata.id": f"{R}/Log/Entries", "Members": [{"Id": "second"}]})
    (v1 / "$metadata").mkdir()
    (v1 / "$metadata" / "index.xml").write_bytes(b"<edmx:Edmx Version='4.0'/>")
    err = v1 / "Certificates"
    err.mkdir()
    (err / "error.txt").write_text("HTTP 405\nAllow: \nContent-Length: 0\nX-Frame-Options: sameorigin\n\n")
    (v1 / "Systems" / "headers.json").write_text(json.dumps({"GET": {"Allow": "GET, HEAD", "Content-Length": "9",
                                                                     "Link": "</x>; rel=describedby"}}))
    (v1 / "Systems" / "time.json").write_text(json.dumps({"GET_Time": "0.25"}))
    _write(top / "registries" / "Base.1.10.3.json", {"Id": "Base.1.10.3", "RegistryPrefix": "Base"})
    return top


def test_the_layout_of_a_whole_capture_loads(tall: Path) -> None:
    cap = capture.load(tall)
    assert cap.resources[f"{R}/JsonSchemas/Triggers/Triggers.json"] == {"title": "#Triggers.Triggers"}
    assert cap.resources["/registries/Base.1.10.3.json"]["RegistryPrefix"] == "Base"  # beside redfish/
    assert cap.resources[f"{R}/Log/Entries?$skip=1"]["Members"] == [{"Id": "second"}]
    assert cap.raw[f"{R}/$metadata"].body == b"<edmx:Edmx Version='4.0'/>"
    assert cap.headers[f"{R}/Systems"] == {"Allow": "GET, HEAD", "Link": "</x>; rel=describedby"}
    assert not any("time.json" in u or "headers.json" in u for u in cap.resources)


def test_malformed_json_is_served_as_its_bytes_with_a_warning_naming_the_file(tall: Path) -> None:
    cap = capture.load(tall)
    uri = f"{R}/TelemetryService/MetricReports/X"
    assert uri not in cap.resources and cap.raw[uri].status == 200 and cap.raw[uri].body == TRUNCATED
    bad = tall / "redfish" / "v1" / "TelemetryService" / "MetricReports" / "X" / "index.json"
    odd = tall / "redfish" / "v1" / "Odd" / "index.json"
    assert len(cap.warnings) == 2
    assert any(str(bad) in w and "malformed JSON" in w for w in cap.warnings)
    assert any(str(odd) in w and "list" in w for w in cap.warnings)


def test_a_captured_error_keeps_its_status_and_headers(tall: Path) -> None:
    err = capture.load(tall).raw[f"{R}/Certificates"]
    assert err.status == 405 and err.body == b""
    assert ("X-Frame-Options", "sameorigin") in err.headers
    assert all(k.lower() != "content-length" for k, _v in err.headers)


def test_an_error_file_without_a_status_line_is_a_500_with_a_warning(tall: Path) -> None:
    (tall / "redfish" / "v1" / "Certificates" / "error.txt").write_text("garbage\n")
    cap = capture.load(tall)
    assert cap.raw[f"{R}/Certificates"].status == 500
    assert any("error.txt" in w for w in cap.warnings)


def test_a_folder_without_a_service_root_is_still_refused(tmp_path: Path) -> None:
    _write(tmp_path / "redfish" / "v1" / "Systems", {"Members": []})
    with pytest.raises(InputError, match="not a Redfish mockup"):
        capture.load(tmp_path)


# --- served by one BMC, in process -----------------------------------------------------------
def call(bmc: Bmc, method: str, path: str, data: Any = None, headers: dict[str, str] | None = None) -> Reply:
    raw = json.dumps(data).encode() if data is not None else b""
    return bmc.handle(Request(method, path, headers if headers is not None else BASIC, raw))


def body(reply: Reply) -> dict[str, Any]:
    return json.loads(reply.raw) if reply.raw is not None else dict(reply.body or {})


async def until(pred: Callable[[], bool], timeout: float = 3.0) -> None:
    for _ in range(int(timeout / 0.01)):
        if pred():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def _bmc(tmp: Path, tree: Path) -> Bmc:
    node = BmcConfig(name="node01", index=1, password=SecretStr("pw"), tree=tree, as_captured=True)
    cfg = SimConfig(lab_dir=tmp, nodes=[node], speed=600, control_token=SecretStr("t"),
                    ready_file=tmp / "r.json", log_file=tmp / "log")
    return Bmc(node, cfg, get_seed(node.tree, True, cfg.parts), SimClock(cfg.speed))


def _get(bmc: Bmc, path: str, query: str = "") -> Reply:
    return bmc.handle(Request("GET", path, BASIC, b"", query))


def test_served_as_captured_bytes_statuses_headers_and_pages(tmp_path: Path, tall: Path) -> None:
    bmc = _bmc(tmp_path, tall)
    bad = _get(bmc, f"{R}/TelemetryService/MetricReports/X")
    assert (bad.status, bad.raw, bad.content_type.split(";")[0]) == (200, TRUNCATED, "application/json")
    assert call(bmc, "PATCH", f"{R}/TelemetryService/MetricReports/X", {"A": 1}).status == 405
    err = _get(bmc, f"{R}/Certificates")
    assert err.status == 405 and err.headers["X-Frame-Options"] == "sameorigin"
    meta = bmc.handle(Request("GET", f"{R}/$metadata", {}))  # public, and the captured document
    assert meta.status == 200 and meta.raw == b"<edmx:Edmx Version='4.0'/>"
    assert _get(bmc, f"{R}/Systems").headers["Allow"] == "GET, HEAD"
    assert body(_get(bmc, f"{R}/Log/Entries", "$skip=1"))["Members"] == [{"Id": "second"}]
    assert body(_get(bmc, f"{R}/Log/Entries", "%24skip=1"))["Members"] == [{"Id": "second"}]
    assert body(_get(bmc, f"{R}/Log/Entries"))["Members"] == [{"Id": "first"}]
    assert body(_get(bmc, f"{R}/JsonSchemas/Triggers/Triggers.json"))["title"] == "#Triggers.Triggers"


# --- the four whole captures -----------------------------------------------------------------
CAPTURES = ["hpe", "lenovo", "nvidia_gh200", "supermicro"]
LENOVO_TRUNCATED = ["PowerMetrics", "PowerSupplyStats"]


@pytest.mark.parametrize("name", CAPTURES)
def test_each_whole_capture_builds_as_captured(name: str) -> None:
    seed = build(FULL / name, as_captured=True, parts=Parts())
    files = sum(1 for _ in (FULL / name).rglob("index.json"))
    assert len(seed.tree) + len(seed.tree.raw) >= files
    bad = [w for w in seed.warnings if "malformed JSON" in w]
    if name == "lenovo":
        assert sorted(w.split("/MetricReports/")[1].split("/")[0] for w in bad) == LENOVO_TRUNCATED
    else:
        assert bad == []
    assert seed.systems and seed.bios, "systems and a BIOS with its pending resource"


# vendor, system, pending URI as captured (@Redfish.Settings), firmware push URI, FirmwareInventory target
WRITES = [
    ("hpe", f"{R}/Systems/1", f"{R}/systems/1/bios/settings", "/cgi-bin/uploadFile", "3"),
    ("lenovo", f"{R}/Systems/1", f"{R}/Systems/1/Bios/Pending", "/mfwupdate", "UEFI"),
    ("nvidia_gh200", f"{R}/Systems/System_0", f"{R}/Systems/System_0/Bios/Settings",
     f"{R}/UpdateService/update-multipart", "HGX_FW_GPU_0"),
    ("supermicro", f"{R}/Systems/1", f"{R}/Systems/1/Bios/SD", f"{R}/UpdateService/upload", "BIOS"),
]


def _writable_enum(bmc: Bmc, system: str) -> tuple[str, Any, str]:
    """An attribute the captured registry lets us change: (name, current value, another allowed value)."""
    lay = bmc.bios[system].layout
    current = (bmc.res.get(lay.bios) or {}).get("Attributes") or {}
    for name, attr in sorted(lay.registry.items()):
        if attr.kind == "Enumeration" and not attr.read_only and attr.values and name in current:
            other = sorted(v for v in attr.values if v != current[name])
            if other and current[name] in attr.values:
                return name, current[name], other[0]
    raise AssertionError("no writable enumeration in the captured registry")


def _multipart(image: bytes, target: str) -> tuple[str, bytes]:
    b = "CaPtUrEd"
    params = json.dumps({"Targets": [target]})
    raw = (f"--{b}\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\n"
           f"Content-Type: application/json\r\n\r\n{params}\r\n--{b}\r\n"
           "Content-Disposition: form-data; name=\"UpdateFile\"; filename=\"fw.bin\"\r\n"
           "Content-Type: application/octet-stream\r\n\r\n").encode() + image + f"\r\n--{b}--\r\n".encode()
    return f"multipart/form-data; boundary={b}", raw


@pytest.mark.parametrize(("name", "system", "pending", "push", "fw_id"), WRITES, ids=[w[0] for w in WRITES])
def test_writes_on_a_whole_capture(tmp_path: Path, name: str, system: str, pending: str, push: str,
                                   fw_id: str) -> None:
    async def go() -> None:
        bmc = _bmc(tmp_path, FULL / name)
        login = call(bmc, "POST", f"{R}/SessionService/Sessions", {"UserName": "admin", "Password": "pw"}, {})
        assert login.status == 201
        auth = {"X-Auth-Token": login.headers["X-Auth-Token"]}
        # BIOS: PATCH the pending resource the capture names; the value shows there, not yet current
        attr, was, want = _writable_enum(bmc, system)
        assert call(bmc, "PATCH", pending, {"Attributes": {attr: want}}, auth).status == 200
        assert body(call(bmc, "GET", pending, None, auth))["Attributes"][attr] == want
        assert bmc.bios[system].pending() == {attr: want}
        # firmware: push to the advertised URI; a Task, then the inventory entry's Version changes
        target = f"{R}/UpdateService/FirmwareInventory/{fw_id}"
        image = build_image(fw_id, "9.99.test")
        if push.startswith("/cgi-bin") or push.endswith("/update"):
            reply = bmc.handle(Request("POST", push, {**auth, "Content-Type": "application/octet-stream"}, image))
        else:
            ctype, raw = _multipart(image, target)
            reply = bmc.handle(Request("POST", push, {**auth, "Content-Type": ctype}, raw))
        assert reply.status == 202, reply.body
        task = reply.headers["Location"]
        await until(lambda: body(call(bmc, "GET", task, None, auth))["TaskState"] == "Completed", 10)
        assert body(call(bmc, "GET", target, None, auth))["Version"] == "9.99.test"
        # power: the advertised Reset; off, then on, and the pending BIOS value is applied at the boot
        reset = f"{system}/Actions/ComputerSystem.Reset"
        assert call(bmc, "POST", reset, {"ResetType": "ForceOff"}, auth).status in (200, 204)
        await until(lambda: body(call(bmc, "GET", system, None, auth))["PowerState"] == "Off", 10)
        assert call(bmc, "POST", reset, {"ResetType": "On"}, auth).status in (200, 204)
        await until(lambda: body(call(bmc, "GET", system, None, auth))["PowerState"] == "On", 10)
        bios = str((bmc.res.get(system) or {})["Bios"]["@odata.id"]).rstrip("/")
        await until(lambda: body(call(bmc, "GET", bios, None, auth))["Attributes"][attr] == want, 10)
        assert was != want
    asyncio.run(go())


def test_a_reset_type_outside_the_captured_action_info_is_refused(tmp_path: Path) -> None:
    bmc = _bmc(tmp_path, FULL / "nvidia_gh200")  # ResetActionInfo lists no Nmi
    reply = call(bmc, "POST", f"{R}/Systems/System_0/Actions/ComputerSystem.Reset", {"ResetType": "Nmi"})
    assert reply.status == 400 and "ActionParameterValueNotInList" in json.dumps(reply.body)


def test_the_truncated_lenovo_report_is_served_byte_for_byte(tmp_path: Path) -> None:
    bmc = _bmc(tmp_path, FULL / "lenovo")
    path = "TelemetryService/MetricReports/PowerMetrics"
    reply = _get(bmc, f"{R}/{path}")
    assert reply.status == 200
    assert reply.raw == (FULL / "lenovo" / "redfish" / "v1" / path / "index.json").read_bytes()


# --- as captured means byte for byte: no node gets its own SerialNumber or UUID -----------------
SYSTEMS = [("hpe", "Systems/1"), ("lenovo", "Systems/1"), ("nvidia_gh200", "Systems/System_0"),
           ("supermicro", "Systems/1")]


def _node(tmp: Path, tree: Path, index: int) -> Bmc:
    """Lab node `index` of an as-captured lab (the filled lab's nodes each get their own identity)."""
    node = BmcConfig(name=f"node{index:02d}", index=index, password=SecretStr("pw"), tree=tree, as_captured=True)
    cfg = SimConfig(lab_dir=tmp, nodes=[node], speed=600, control_token=SecretStr("t"),
                    ready_file=tmp / "r.json", log_file=tmp / "log")
    return Bmc(node, cfg, get_seed(node.tree, True, cfg.parts), SimClock(cfg.speed))


@pytest.mark.parametrize(("name", "system"), SYSTEMS, ids=[s[0] for s in SYSTEMS])
def test_a_system_is_served_byte_for_byte_on_every_node(tmp_path: Path, name: str, system: str) -> None:
    file = FULL / name / "redfish" / "v1" / system / "index.json"
    captured = json.loads(file.read_bytes())
    for index in (1, 7):
        reply = _get(_node(tmp_path, FULL / name, index), f"{R}/{system}")
        assert reply.status == 200 and reply.raw == file.read_bytes(), f"node{index:02d}: not the captured bytes"
        served = json.loads(reply.raw or b"")
        assert [served.get(k) for k in ("SerialNumber", "UUID")] == [captured.get(k) for k in ("SerialNumber", "UUID")]
        assert reply.headers["ETag"] == captured.get("@odata.etag", reply.headers["ETag"]), "body and header agree"


def test_a_written_resource_leaves_the_captured_bytes_and_their_etag(tmp_path: Path) -> None:
    bmc = _node(tmp_path, FULL / "lenovo", 1)
    system = f"{R}/Systems/1"
    before = _get(bmc, system)
    tag = before.headers["ETag"]
    boot = {"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}}
    assert call(bmc, "PATCH", system, boot, {**BASIC, "If-Match": f"W/{tag}"}).status == 200, "weak form matches"
    after = _get(bmc, system)
    assert after.raw != before.raw and body(after)["Boot"]["BootSourceOverrideTarget"] == "Pxe"
    assert after.headers["ETag"] != tag
    assert call(bmc, "PATCH", system, boot, {**BASIC, "If-Match": tag}).status == 412, "the old tag is stale"


def test_an_hpe_weak_etag_from_the_body_matches(tmp_path: Path) -> None:
    bmc = _node(tmp_path, FULL / "hpe", 1)
    tag = body(_get(bmc, f"{R}/Systems/1"))["@odata.etag"]
    assert tag.startswith("W/")
    boot = {"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}}
    assert call(bmc, "PATCH", f"{R}/Systems/1", boot, {**BASIC, "If-Match": tag}).status == 200
