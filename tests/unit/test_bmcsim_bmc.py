"""One simulated BMC driven in-process (no sockets): auth, BIOS, power, boot, updates, faults."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from provision.lab.bmcsim.bmc import Bmc
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.config import TREES_DIR, BmcConfig, SimConfig, Timings
from provision.lab.bmcsim.images import build_image
from provision.lab.bmcsim.reply import Reply
from provision.lab.bmcsim.request import Request
from provision.lab.bmcsim.seed import get_seed

SYS = "/redfish/v1/Systems/1"
BASIC = {"Authorization": "Basic " + base64.b64encode(b"admin:pw").decode()}


def make_bmc(tmp: Path, tree: str = "supermicro", as_captured: bool = False, **timings: float) -> Bmc:
    node = BmcConfig(name="node01", index=1, password=SecretStr("pw"), tree=TREES_DIR / tree,
                     as_captured=as_captured)
    cfg = SimConfig(lab_dir=tmp, nodes=[node], speed=600, control_token=SecretStr("t"),
                    ready_file=tmp / "r.json", log_file=tmp / "log", timings=Timings(**timings))
    return Bmc(node, cfg, get_seed(node.tree, as_captured, cfg.parts), SimClock(cfg.speed))


def call(bmc: Bmc, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Reply:
    raw = json.dumps(body).encode() if body is not None else b""
    return bmc.handle(Request(method, path, headers if headers is not None else BASIC, raw))


def body(reply: Reply) -> dict[str, Any]:
    return json.loads(reply.raw) if reply.raw is not None else dict(reply.body or {})


def run(coro: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(coro())


async def until(pred: Callable[[], bool], timeout: float = 3.0) -> None:
    for _ in range(int(timeout / 0.01)):
        if pred():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def ids(reply: Reply) -> list[str]:
    return [m["MessageId"].rsplit(".", 1)[1] for m in body(reply)["error"]["@Message.ExtendedInfo"]]


# --- auth ----------------------------------------------------------------------------------
def test_service_root_is_public_the_rest_needs_credentials(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    assert call(bmc, "GET", "/redfish/v1/", headers={}).status == 200
    assert call(bmc, "GET", SYS, headers={}).status == 401
    bad = {"Authorization": "Basic " + base64.b64encode(b"admin:nope").decode()}
    assert call(bmc, "GET", SYS, headers=bad).status == 401
    assert call(bmc, "GET", SYS).status == 200


def test_session_login_use_logout_and_expiry(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path, session_timeout=30)  # 30 simulated s = 0.05 s real
        login = call(bmc, "POST", "/redfish/v1/SessionService/Sessions", {"UserName": "admin", "Password": "pw"},
                     headers={})
        assert login.status == 201
        token, where = login.headers["X-Auth-Token"], login.headers["Location"]
        assert call(bmc, "GET", SYS, headers={"X-Auth-Token": token}).status == 200
        assert call(bmc, "GET", where, headers={"X-Auth-Token": token}).status == 200
        await asyncio.sleep(0.1)
        assert call(bmc, "GET", SYS, headers={"X-Auth-Token": token}).status == 401
        assert call(bmc, "GET", where).status == 404
    run(go)


def test_wrong_password_gets_no_session(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    reply = call(bmc, "POST", "/redfish/v1/SessionService/Sessions", {"UserName": "admin", "Password": "x"},
                 headers={})
    assert reply.status == 401 and "X-Auth-Token" not in reply.headers


def test_session_expiry_fault_ends_every_session(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    login = call(bmc, "POST", "/redfish/v1/SessionService/Sessions", {"UserName": "admin", "Password": "pw"})
    token = login.headers["X-Auth-Token"]
    bmc.faults.set("session-expiry")
    assert call(bmc, "DELETE", login.headers["Location"], headers={"X-Auth-Token": token}).status == 401


# --- BIOS ----------------------------------------------------------------------------------
def test_bios_bad_patch_400_good_patch_applies_only_after_reset(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path, "dell", as_captured=True)
        system = "/redfish/v1/Systems/System.Embedded.1"
        settings = f"{system}/Bios/Settings"
        bad = call(bmc, "PATCH", settings, {"Attributes": {"LogicalProc": "Sometimes", "Nope": 1}})
        assert bad.status == 400 and ids(bad) == ["PropertyValueNotInList", "PropertyUnknown"]
        assert body(call(bmc, "GET", settings))["Attributes"] == {}
        before = body(call(bmc, "GET", f"{system}/Bios"))["Attributes"]["LogicalProc"]
        want = "Disabled" if before == "Enabled" else "Enabled"
        assert call(bmc, "PATCH", settings, {"Attributes": {"LogicalProc": want}}).status == 200
        assert body(call(bmc, "GET", f"{system}/Bios"))["Attributes"]["LogicalProc"] == before
        assert call(bmc, "POST", f"{system}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"}).status == 200
        await until(lambda: body(call(bmc, "GET", f"{system}/Bios"))["Attributes"]["LogicalProc"] == want)
        assert body(call(bmc, "GET", settings))["Attributes"] == {}
    run(go)


def test_bios_stuck_pending_fault_keeps_settings_pending(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        bmc.faults.set("bios-stuck-pending")
        assert call(bmc, "PATCH", f"{SYS}/Bios/SD", {"Attributes": {"AES_NI_3C75": "Disable"}}).status == 200
        call(bmc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
        await until(lambda: bmc.power[SYS].state == "On" and bool(bmc.sel_messages()))
        assert body(call(bmc, "GET", f"{SYS}/Bios"))["Attributes"]["AES_NI_3C75"] == "Enable"
        assert bmc.bios[SYS].pending() == {"AES_NI_3C75": "Disable"}
        assert any("bios-stuck-pending" in m for m in bmc.sel_messages())
    run(go)


def test_if_match_mismatch_is_412(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    etag = call(bmc, "GET", f"{SYS}/Bios/SD").headers["ETag"]
    patch = {"Attributes": {"AES_NI_3C75": "Disable"}}
    assert call(bmc, "PATCH", f"{SYS}/Bios/SD", patch, {**BASIC, "If-Match": '"stale"'}).status == 412
    assert call(bmc, "PATCH", f"{SYS}/Bios/SD", patch, {**BASIC, "If-Match": etag}).status == 200
    assert call(bmc, "GET", f"{SYS}/Bios/SD").headers["ETag"] != etag


# --- power and boot ------------------------------------------------------------------------
def test_reset_types_are_checked_and_power_moves_over_time(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        assert ids(call(bmc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "Explode"})) == [
            "ActionParameterValueNotInList"]
        assert ids(call(bmc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {})) == ["ActionParameterMissing"]
        call(bmc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "GracefulShutdown"})
        assert body(call(bmc, "GET", SYS))["PowerState"] == "PoweringOff"
        await until(lambda: body(call(bmc, "GET", SYS))["PowerState"] == "Off")
        call(bmc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "On"})
        await until(lambda: body(call(bmc, "GET", SYS))["PowerState"] == "On")
    run(go)


def test_boot_override_once_is_consumed_by_the_next_boot(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        bad = call(bmc, "PATCH", SYS, {"Boot": {"BootSourceOverrideTarget": "Tape"}})
        assert ids(bad) == ["PropertyValueNotInList"]
        ok = call(bmc, "PATCH", SYS, {"Boot": {"BootSourceOverrideEnabled": "Once",
                                               "BootSourceOverrideTarget": "Pxe"}})
        assert ok.status == 200 and body(ok)["Boot"]["BootSourceOverrideEnabled"] == "Once"
        call(bmc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
        await until(lambda: body(call(bmc, "GET", SYS))["Boot"]["BootSourceOverrideEnabled"] == "Disabled")
        assert body(call(bmc, "GET", SYS))["Boot"]["BootSourceOverrideTarget"] == "Pxe"
    run(go)


def test_read_only_system_property_is_refused(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    assert ids(call(bmc, "PATCH", SYS, {"Model": "X"})) == ["PropertyNotWritable"]
    assert ids(call(bmc, "PATCH", SYS, {"Frobnicate": 1})) == ["PropertyUnknown"]


# --- firmware ------------------------------------------------------------------------------
def _task(bmc: Bmc, reply: Reply) -> dict[str, Any]:
    return body(call(bmc, "GET", reply.headers["Location"]))


def _bios_fw(bmc: Bmc) -> str:
    return str(body(call(bmc, "GET", "/redfish/v1/UpdateService/FirmwareInventory/BIOS"))["Version"])


def test_push_update_immediate_changes_version_after_the_task(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        reply = bmc.updater.push(build_image("BIOS", "2.1"), {})
        assert reply.status == 202 and _task(bmc, reply)["TaskState"] == "Running"
        assert _bios_fw(bmc) != "2.1"
        await until(lambda: _task(bmc, reply)["TaskState"] == "Completed")
        assert _bios_fw(bmc) == "2.1" and body(call(bmc, "GET", SYS))["BiosVersion"] == "2.1"
    run(go)


def test_on_reset_update_is_staged_until_the_host_resets(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        reply = bmc.updater.push(build_image("BIOS", "2.2"), {"@Redfish.OperationApplyTime": "OnReset"})
        await until(lambda: _task(bmc, reply)["TaskState"] == "Completed")
        assert "AwaitToActivate" in json.dumps(_task(bmc, reply)["Messages"])
        assert _bios_fw(bmc) != "2.2"
        call(bmc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
        await until(lambda: _bios_fw(bmc) == "2.2")
    run(go)


def test_multipart_push_with_targets(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        boundary = "XyZ"
        params = json.dumps({"Targets": ["/redfish/v1/UpdateService/FirmwareInventory/GPU3"]})
        raw = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"UpdateParameters\"\r\n"
               f"Content-Type: application/json\r\n\r\n{params}\r\n--{boundary}\r\n"
               "Content-Disposition: form-data; name=\"UpdateFile\"; filename=\"gpu.bin\"\r\n"
               "Content-Type: application/octet-stream\r\n\r\n").encode() + build_image("GPU", "97.0") + \
            f"\r\n--{boundary}--\r\n".encode()
        reply = bmc.handle(Request("POST", "/redfish/v1/UpdateService/upload",
                                   {**BASIC, "Content-Type": f"multipart/form-data; boundary={boundary}"}, raw))
        assert reply.status == 202
        await until(lambda: _task(bmc, reply)["TaskState"] == "Completed")
        gpu3 = body(call(bmc, "GET", "/redfish/v1/UpdateService/FirmwareInventory/GPU3"))
        gpu4 = body(call(bmc, "GET", "/redfish/v1/UpdateService/FirmwareInventory/GPU4"))
        assert gpu3["Version"] == "97.0" and gpu4["Version"] != "97.0"
        payload = _task(bmc, reply)["Payload"]  # what the task updates, for whoever reads it later (Task v1_4)
        assert payload["TargetUri"] == "/redfish/v1/UpdateService/upload" and payload["HttpOperation"] == "POST"
        assert json.loads(payload["JsonBody"]) == {"Targets": ["/redfish/v1/UpdateService/FirmwareInventory/GPU3"]}
    run(go)


def test_bmc_update_reboots_the_bmc(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path, bmc_reboot=120)
        reply = bmc.updater.push(build_image("BMC", "11.02.05"), {})
        await until(lambda: _task(bmc, reply)["TaskState"] == "Completed")
        assert bmc.is_down()
        assert body(call(bmc, "GET", "/redfish/v1/Managers/1"))["FirmwareVersion"] == "11.02.05"
        await until(lambda: not bmc.is_down())
    run(go)


@pytest.mark.parametrize(("fault", "state", "changed"), [
    ("update-noop", "Completed", False),
    ("task-fail", "Exception", False),
    ("bmc-reset-mid-update", "Exception", False),
])
def test_update_faults(tmp_path: Path, fault: str, state: str, changed: bool) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        bmc.faults.set(fault)
        reply = bmc.updater.push(build_image("BIOS", "3.0"), {})
        await until(lambda: _task(bmc, reply)["TaskState"] != "Running")
        assert _task(bmc, reply)["TaskState"] == state
        assert (_bios_fw(bmc) == "3.0") is changed
        assert any(fault in m for m in bmc.sel_messages())
    run(go)


def test_task_stall_holds_until_cleared(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        bmc.faults.set("task-stall")
        reply = bmc.updater.push(build_image("BIOS", "3.1"), {})
        await until(lambda: _task(bmc, reply)["PercentComplete"] == 50)
        await asyncio.sleep(0.2)
        assert _task(bmc, reply)["TaskState"] == "Running"
        bmc.faults.clear("task-stall")
        await until(lambda: _task(bmc, reply)["TaskState"] == "Completed")
        assert _bios_fw(bmc) == "3.1"
    run(go)


def test_image_for_an_unknown_component_fails_the_task(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        reply = bmc.updater.push(build_image("FLUX_CAPACITOR", "1"), {})
        assert _task(bmc, reply)["TaskState"] == "Exception"
        reply = bmc.updater.push(b"garbage", {})
        assert _task(bmc, reply)["TaskState"] == "Exception"
    run(go)


def test_simple_update_refuses_non_loopback_image_hosts(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    reply = call(bmc, "POST", "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate",
                 {"ImageURI": "http://192.0.2.7/bios.bin"})
    assert reply.status == 400 and ids(reply) == ["ActionParameterValueNotInList"]


# --- media, metadata, misc ----------------------------------------------------------------------
def test_virtual_media_insert_and_eject(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    cd = "/redfish/v1/Managers/1/VirtualMedia/CD1"
    assert call(bmc, "POST", f"{cd}/Actions/VirtualMedia.InsertMedia",
                {"Image": "http://127.0.0.1:1/boot.iso"}).status == 204
    media = body(call(bmc, "GET", cd))
    assert media["Inserted"] is True and media["ImageName"] == "boot.iso"
    refused = call(bmc, "POST", f"{cd}/Actions/VirtualMedia.InsertMedia", {"Image": "http://127.0.0.1:1/new.iso"})
    assert refused.status == 409 and ids(refused) == ["ResourceInUse"]
    assert body(call(bmc, "GET", cd))["ImageName"] == "boot.iso", "a refused insert changes nothing"
    assert call(bmc, "POST", f"{cd}/Actions/VirtualMedia.EjectMedia", {}).status == 204
    assert body(call(bmc, "GET", cd))["Inserted"] is False
    assert call(bmc, "POST", f"{cd}/Actions/VirtualMedia.InsertMedia",
                {"Image": "http://127.0.0.1:1/new.iso"}).status == 204
    assert call(bmc, "PATCH", cd, {"Image": "http://127.0.0.1:1/swap.iso"}).status in (200, 204)
    assert body(call(bmc, "GET", cd))["ImageName"] == "swap.iso", "a PATCH of Image swaps in place"


def test_metadata_references_dmtf_schemas_only(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    reply = call(bmc, "GET", "/redfish/v1/$metadata", headers={})
    xml = (reply.raw or b"").decode()
    assert reply.status == 200 and reply.content_type == "application/xml"
    assert 'Namespace="ComputerSystem.v1_14_0"' in xml and "Smc" not in xml


def test_missing_resource_is_404_with_a_base_message(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path, as_captured=True)
    reply = call(bmc, "GET", f"{SYS}/Memory/17")
    assert reply.status == 404 and ids(reply) == ["ResourceMissingAtURI"]


def test_each_node_has_its_own_identity(tmp_path: Path) -> None:
    a = make_bmc(tmp_path)
    node = BmcConfig(name="node02", index=2, password=SecretStr("pw"))
    cfg = SimConfig(lab_dir=tmp_path, nodes=[node], control_token=SecretStr("t"), ready_file=tmp_path / "r",
                    log_file=tmp_path / "l")
    b = Bmc(node, cfg, get_seed(node.tree, False, cfg.parts), SimClock(1))
    sa, sb = body(call(a, "GET", SYS)), body(call(b, "GET", SYS))
    assert sa["UUID"] != sb["UUID"] and sa["SerialNumber"] != sb["SerialNumber"]


def test_expand_collections_as_advertised(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    plain = body(call(bmc, "GET", f"{SYS}/Memory"))
    assert set(plain["Members"][0]) == {"@odata.id"}
    reply = bmc.handle(Request("GET", f"{SYS}/Memory", BASIC, b"", "$expand=.($levels=1)"))
    members = body(reply)["Members"]
    assert len(members) == 32 and members[0]["CapacityMiB"] == 65536
    two = body(bmc.handle(Request("GET", "/redfish/v1/Systems", BASIC, b"", "$expand=*($levels=2)")))
    assert two["Members"][0]["Processors"]["Members@odata.count"] == 2, "level 2: the system's collections"
    assert set(two["Members"][0]["Processors"]["Members"][0]) == {"@odata.id"}, "level 3 not expanded"
    links = body(bmc.handle(Request("GET", SYS, BASIC, b"", "$expand=.")))
    assert set(links["Links"]["Chassis"][0]) == {"@odata.id"}, "'.' leaves Links alone"
    assert "Members" in links["Processors"]


@pytest.mark.parametrize(("query", "want"), [("$expand=*", ("*", 1)), ("$expand=.($levels=5)", (".", 2)),
                                             ("$expand=~($levels=2)", ("~", 2)), ("$expand=bogus", None),
                                             ("$select=Id", None)])
def test_expand_query_parsing(query: str, want: object) -> None:
    from provision.lab.bmcsim.expand import parse

    assert parse(query, max_levels=2) == want
    assert parse(query, max_levels=0) is None


def test_power_draw_follows_the_host_and_psus_match_the_spec(tmp_path: Path) -> None:
    async def go() -> None:
        bmc = make_bmc(tmp_path)
        power = "/redfish/v1/Chassis/1/Power"
        on = body(call(bmc, "GET", power))
        psus = on["PowerSupplies"]
        assert [p["Status"]["State"] for p in psus[:3]] == ["Enabled", "Enabled", "Absent"]
        assert sum(p["Status"]["State"] != "Absent" for p in psus) == 2 and psus[0]["PowerCapacityWatts"] == 3200
        call(bmc, "POST", f"{SYS}/Actions/ComputerSystem.Reset", {"ResetType": "ForceOff"})
        await until(lambda: body(call(bmc, "GET", SYS))["PowerState"] == "Off")
        off = body(call(bmc, "GET", power))["PowerControl"][0]["PowerConsumedWatts"]
        assert off < on["PowerControl"][0]["PowerConsumedWatts"] / 10
    run(go)


# ---- hardware faults: what the BMC reports changes, and is restored on clear -----------------------------------
def _inlet(bmc: Bmc) -> list[float]:
    temps = body(call(bmc, "GET", "/redfish/v1/Chassis/1/Thermal"))["Temperatures"]
    return [t["ReadingCelsius"] for t in temps if t["Name"] == "Inlet Temp"]


def _psu_states(bmc: Bmc) -> list[str]:
    return [p["Status"]["State"] for p in body(call(bmc, "GET", "/redfish/v1/Chassis/1/Power"))["PowerSupplies"]]


def _fan_health(bmc: Bmc) -> list[str]:
    return [f["Status"]["Health"] for f in body(call(bmc, "GET", "/redfish/v1/Chassis/1/Thermal"))["Fans"]]


def _dimms(bmc: Bmc) -> int:
    members = body(call(bmc, "GET", f"{SYS}/Memory"))["Members"]
    return sum(1 for m in members if body(call(bmc, "GET", m["@odata.id"])).get("CapacityMiB"))


@pytest.mark.parametrize(("kind", "value", "read", "before", "during"), [
    ("inlet-hot", 41.0, _inlet, [21], [41.0]),  # 'Inlet Temp' (SystemBoard); 'GPU Inlet Temp' (GPU) is left alone
    ("psu-lost", None, lambda b: _psu_states(b).count("UnavailableOffline"), 0, 1),
    ("fan-failed", None, lambda b: _fan_health(b).count("Critical"), 0, 1),
    ("dimm-missing", None, _dimms, 32, 31),
])
def test_hardware_faults_change_what_the_bmc_reports_until_cleared(tmp_path: Path, kind: str, value: float | None,
                                                                   read: Callable[[Bmc], Any], before: Any,
                                                                   during: Any) -> None:
    bmc = make_bmc(tmp_path)
    assert read(bmc) == before
    etag = call(bmc, "GET", "/redfish/v1/Chassis/1/Thermal").headers.get("ETag")
    bmc.faults.set(kind, value)
    assert read(bmc) == during
    bmc.faults.set(kind, value)  # set again: applied once, not twice
    assert read(bmc) == during
    bmc.faults.clear(kind)
    assert read(bmc) == before
    assert call(bmc, "GET", "/redfish/v1/Chassis/1/Thermal").headers.get("ETag") == etag
    gpu_inlet = [t for t in body(call(bmc, "GET", "/redfish/v1/Chassis/1/Thermal"))["Temperatures"]
                 if t["Name"] == "GPU Inlet Temp"]
    assert [t["ReadingCelsius"] for t in gpu_inlet] == [34]
