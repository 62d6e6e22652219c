"""Platform identity and firmware bound to platforms: the identity each whole capture gives (expected values read
from the capture files here, not through the product's parsers), the pure fit and firmware plan as a table
(image x identity -> step or refusal), and `firmware plan` of the ML-PROD-V4 baseline over the loopback BMC on
every capture that is not a SYS-821GE-TNHR: refused in one line, nothing sent."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from full_captures import FULL, firmware_entries, full_tree, get
from rf_fakebmc import FakeBmc, Served
from rf_support import point_at

from provision.cli import main
from provision.errors import NotApplicable
from provision.redfish.ops import firmware as fw
from provision.redfish.ops.identity import device_kind, from_tree
from provision.redfish.resources import UpdateService
from provision.redfish.vendors import by_name
from provision.spec.firmware import FirmwareComponent
from provision.spec.platforms import (
    AppliesTo,
    Board,
    DeviceKind,
    PlatformIdentity,
    Platforms,
    a_platform,
    check_glob,
    refuse_profile,
)

US = "/redfish/v1/UpdateService"
ALL = ("hpe", "lenovo", "nvidia_gh200", "supermicro", "nvidia_dpu", "nvidia_gbswitch")


def _raw(capture: str, uri: str) -> dict[str, Any]:
    """A resource read straight from the capture's files (no product code)."""
    return json.loads((FULL / capture / uri.strip("/") / "index.json").read_text())


def _members(capture: str, coll: str) -> list[dict[str, Any]]:
    tree = full_tree(capture)
    return [tree[m["@odata.id"].rstrip("/")] for m in tree[coll]["Members"] if m["@odata.id"].rstrip("/") in tree]


def _fabrics(capture: str) -> int:
    tree = full_tree(capture)
    return len(tree.get("/redfish/v1/Fabrics", {}).get("Members", []))


def identity_of(capture: str) -> PlatformIdentity:
    return from_tree(_members(capture, "/redfish/v1/Systems"), _members(capture, "/redfish/v1/Chassis"),
                     _members(capture, "/redfish/v1/Managers"), _fabrics(capture))


# capture: (host system, its chassis, its manager), as the capture's own Links name them
HOSTS = {
    "hpe": ("/redfish/v1/Systems/1", "/redfish/v1/Chassis/1", "/redfish/v1/Managers/1"),
    "lenovo": ("/redfish/v1/Systems/1", "/redfish/v1/Chassis/1", "/redfish/v1/Managers/1"),
    "nvidia_gh200": ("/redfish/v1/Systems/System_0", "/redfish/v1/Chassis/BMC_0", "/redfish/v1/Managers/BMC_0"),
    "supermicro": ("/redfish/v1/Systems/1", "/redfish/v1/Chassis/1", "/redfish/v1/Managers/1"),
    "nvidia_dpu": ("/redfish/v1/Systems/Bluefield", "/redfish/v1/Chassis/Bluefield_BMC",
                   "/redfish/v1/Managers/Bluefield_BMC"),
    "nvidia_gbswitch": ("/redfish/v1/Systems/System_0", "/redfish/v1/Chassis/BMC_eeprom", "/redfish/v1/Managers/BMC_0"),
}


NOT_COMPUTE = {"nvidia_dpu": DeviceKind.DPU, "nvidia_gbswitch": DeviceKind.SWITCH}


@pytest.mark.parametrize("capture", ALL)
def test_what_answers_as_the_node(capture: str) -> None:
    """A DPU's BMC and a switch tray are named for what they are; the servers are compute nodes. Expected: the
    host system's ProcessorSummary.Count as the capture says it (0 on both devices)."""
    system = _raw(capture, HOSTS[capture][0])
    got = identity_of(capture)
    assert got.kind is NOT_COMPUTE.get(capture, DeviceKind.COMPUTE)
    assert got.host_cpus == system["ProcessorSummary"]["Count"]
    assert (got.host_cpus == 0) is (capture in NOT_COMPUTE)


def test_device_names_and_the_compute_profile_refused() -> None:
    dpu, switch = identity_of("nvidia_dpu"), identity_of("nvidia_gbswitch")
    assert switch.described == "NVIDIA N5110_LD, a switch tray with no host CPUs"
    assert dpu.described == "https://www.mellanox.com BlueField-3 SmartNIC Main Card, a DPU with no host CPUs"
    for ident in (dpu, switch):  # even a profile for any platform describes a compute node
        with pytest.raises(NotApplicable, match=r"describes compute nodes \(any platform\): refused"):
            refuse_profile("node01", "CAT-EPYC-9454P", Platforms.model_validate("any"), ident)
    # a profile written for the switch's own platform is still a compute spec: refused
    with pytest.raises(NotApplicable, match=r"^node01 is an NVIDIA N5110_LD, a switch tray with no host CPUs"):
        refuse_profile("node01", "X", Platforms.model_validate([{"manufacturer": "NVIDIA", "model": "N5110*"}]),
                       switch)


@pytest.mark.parametrize(("system", "chassis", "fabrics", "kind"), [
    ({"SystemType": "DPU", "ProcessorSummary": {"Count": 8}}, [], 0, DeviceKind.DPU),
    ({"ProcessorSummary": {"Count": 2}}, [], 3, DeviceKind.COMPUTE),  # an HGX host lists NVLink fabrics too
    ({}, [], 1, DeviceKind.COMPUTE),  # not stated: not taken for a device
    ({"ProcessorSummary": {"Count": 0}}, [], 1, DeviceKind.SWITCH),
    ({"ProcessorSummary": {"Count": 0}, "Model": "BF3"}, [{"ChassisType": "Card", "Model": "BF3"}], 0, DeviceKind.DPU),
    ({"ProcessorSummary": {"Count": 0}, "Model": "BF3"}, [{"ChassisType": "Card", "Model": "X"}], 0,
     DeviceKind.DEVICE),
    ({"ProcessorSummary": {"Count": 0}}, [], None, DeviceKind.DEVICE),
])
def test_device_kind_table(system: dict[str, Any], chassis: list[dict[str, Any]], fabrics: int | None,
                           kind: DeviceKind) -> None:
    assert device_kind(system, chassis, fabrics) is kind


def _or_none(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


@pytest.mark.parametrize("capture", ALL)
def test_identity_of_each_whole_capture(capture: str) -> None:
    sys_uri, chassis_uri, mgr_uri = HOSTS[capture]
    system, chassis, mgr = _raw(capture, sys_uri), _raw(capture, chassis_uri), _raw(capture, mgr_uri)
    got = identity_of(capture)
    for field, key in (("manufacturer", "Manufacturer"), ("model", "Model"), ("sku", "SKU"),
                       ("part_number", "PartNumber"), ("serial_number", "SerialNumber"), ("uuid", "UUID")):
        assert getattr(got.system, field) == _or_none(system.get(key)), (field, capture)
        assert getattr(got.chassis, field) == _or_none(chassis.get(key)), (field, capture)
    assert got.system.uri == sys_uri and got.chassis is not None and got.chassis.uri == chassis_uri
    assert got.bmc is not None and got.bmc.uri == mgr_uri
    assert (got.bmc.model, got.bmc.firmware_version) == (mgr.get("Model"), mgr.get("FirmwareVersion"))


@pytest.mark.parametrize(("capture", "name"), [
    ("hpe", "HPE ProLiant DL385 Gen10 Plus v2"),
    ("lenovo", "Lenovo ThinkSystem SR670 V2"),
    ("supermicro", "Supermicro SYS-821GE-TNHR"),
    ("nvidia_gh200", "NVIDIA P3809"),  # System_0 names neither: its chassis' (the BMC board's) are taken
    ("nvidia_dpu", "https://www.mellanox.com BlueField-3 SmartNIC Main Card"),
    ("nvidia_gbswitch", "NVIDIA N5110_LD"),
])
def test_identity_names_the_platform(capture: str, name: str) -> None:
    assert identity_of(capture).name == name


def _ident(manufacturer: str | None, model: str | None, sku: str | None = None) -> PlatformIdentity:
    return PlatformIdentity(system=Board(manufacturer=manufacturer, model=model, sku=sku))


SMC = {"manufacturer": "Supermicro", "model": "SYS-821GE-TNHR"}


def test_blank_padded_names_from_a_bmc_or_a_spec_fit_as_their_words() -> None:
    """BMCs pad fixed-width fields ("SYS-821GE-TNHR  "); a spec may too: both are read without the padding, so
    a padded board is neither refused as another platform nor taken for one whose name merely contains it."""
    padded = _ident(" Supermicro ", "SYS-821GE-TNHR   ")
    assert padded.system.model == "SYS-821GE-TNHR"
    assert Platforms.model_validate([SMC]).fits(padded)
    assert Platforms.model_validate([{"manufacturer": "Supermicro ", "model": " SYS-821GE-TNHR"}]).fits(
        _ident("Supermicro", "SYS-821GE-TNHR"))
    assert not Platforms.model_validate([SMC]).fits(_ident("Supermicro", "SYS-821GE-TNHR2"))


@pytest.mark.parametrize(("name", "said"), [
    ("HPE ProLiant DL385", "an HPE ProLiant DL385"), ("HP Z8", "an HP Z8"), ("NVIDIA DGXH100", "an NVIDIA DGXH100"),
    ("Supermicro SYS-821GE-TNHR", "a Supermicro SYS-821GE-TNHR"), ("Lenovo SR670", "a Lenovo SR670"),
    ("Intel M50CYP", "an Intel M50CYP"), ("Dell PowerEdge", "a Dell PowerEdge"),
])
def test_a_platform_is_named_with_its_article(name: str, said: str) -> None:
    assert a_platform(name) == said


@pytest.mark.parametrize(("patterns", "identity", "fits"), [
    ([SMC], _ident("Supermicro", "SYS-821GE-TNHR"), True),
    ([{"manufacturer": "supermicro", "model": "sys-821ge-tnhr"}], _ident("Supermicro", "SYS-821GE-TNHR"), True),
    ([{"manufacturer": "Supermicro", "model": "SYS-821GE-*"}], _ident("Supermicro", "SYS-821GE-TNHR"), True),
    ([SMC], _ident("Supermicro", "SYS-821GE-TNHR2"), False),  # whole-string: no prefix match
    ([SMC], _ident("Supermicro", "XSYS-821GE-TNHR"), False),
    ([SMC], _ident("NVIDIA", "SYS-821GE-TNHR"), False),  # the model alone is not the platform
    ([SMC], _ident(None, "SYS-821GE-TNHR"), False),  # a manufacturer not given never fits
    ([SMC], _ident("Supermicro", None), False),
    ([{"manufacturer": "Lenovo", "sku": "7Z23*"}], _ident("Lenovo", "ThinkSystem SR670 V2", "7Z23CTO1WW"), True),
    ([{"manufacturer": "Lenovo", "sku": "7Z23*"}], _ident("Lenovo", "ThinkSystem SR670 V2", None), False),
    ([{"manufacturer": "Lenovo", "model": "ThinkSystem SR670 V2", "sku": "7Z22*"}],
     _ident("Lenovo", "ThinkSystem SR670 V2", "7Z23CTO1WW"), False),  # every field given must match
    ([{"manufacturer": "HPE", "model": "x"}, SMC], _ident("Supermicro", "SYS-821GE-TNHR"), True),  # any pattern
    ([SMC], None, False),  # an identity not read fits nothing named
    ("any", None, True),
    ("any", _ident("NVIDIA", "DGXH100"), True),
])
def test_platform_fit_table(patterns: Any, identity: PlatformIdentity | None, fits: bool) -> None:
    assert Platforms.model_validate(patterns).fits(identity) is fits
    assert AppliesTo.model_validate(patterns if patterns == "any" else {"platforms": patterns}).fits(identity) is fits


def test_a_chassis_value_stands_in_only_where_the_system_gives_none() -> None:
    ident = PlatformIdentity(system=Board(manufacturer="Supermicro", model=""),
                             chassis=Board(manufacturer="Other", model="SYS-821GE-TNHR"))
    assert (ident.manufacturer, ident.model) == ("Supermicro", "SYS-821GE-TNHR")
    assert Platforms.model_validate([SMC]).fits(ident)
    assert not Platforms.model_validate([SMC]).fits(ident.model_copy(update={"chassis": None}))


def test_profile_refusal_names_node_platform_and_profile() -> None:
    with pytest.raises(NotApplicable) as err:
        refuse_profile("node07", "ML-PROD-V4", Platforms.model_validate([SMC]), _ident("NVIDIA", "DGXH100"))
    assert str(err.value) == ("node07 is an NVIDIA DGXH100; profile ML-PROD-V4 describes Supermicro SYS-821GE-TNHR: "
                              "refused, nothing written")
    with pytest.raises(NotApplicable, match=r"^node07 could not be identified; profile ML-PROD-V4 describes"):
        refuse_profile("node07", "ML-PROD-V4", Platforms.model_validate([SMC]), None)
    refuse_profile("node07", "ML-PROD-V4", Platforms.model_validate([SMC]), _ident("Supermicro", "SYS-821GE-TNHR"))


# ---- the firmware plan, image x identity ------------------------------------------------------
SMC_ENTRIES = {
    "bmc": [{"id": "BMC", "manufacturer": "Supermicro", "related_item": "/redfish/v1/Managers/*"}],
    "bios": [{"id": "BIOS", "related_item": "/redfish/v1/Systems/*/Bios"}],
    "gpu": [{"id": "HGX_FW_GPU_SXM_*", "software_id": "0x0020", "manufacturer": "NVIDIA"}],
}


def _image(tmp_path: Path, component: str, applies_to: Any) -> FirmwareComponent:
    image = tmp_path / f"{component}.bin"
    image.write_bytes(b"image")
    import hashlib

    return FirmwareComponent.model_validate({
        "component": component, "version": "999.0.0", "image": str(image),
        "sha256": hashlib.sha256(b"image").hexdigest(), "apply_time": "OnReset", "applies_to": applies_to})


def _state(capture: str, identity: PlatformIdentity | None) -> fw.FirmwareState:
    return fw.FirmwareState(entries=firmware_entries(capture), service=UpdateService.parse(get(capture, US)),
                            where="node01", identity=identity)


def _smc(component: str) -> dict[str, Any]:
    return {"platforms": [SMC], "entries": SMC_ENTRIES[component]}


@pytest.mark.parametrize(("component", "applies_to", "capture", "identity", "entries"), [
    # the SMC image on the SMC board: its named entries only (not GPU1..8, the BMC's read-only views, nor the
    # Golden_/Backup_/Staging_ copies whose RelatedItem also names Systems/1/Bios)
    ("bmc", "smc", "supermicro", "supermicro", ["BMC"]),
    ("bios", "smc", "supermicro", "supermicro", ["BIOS"]),
    ("gpu", "smc", "supermicro", "supermicro", [f"HGX_FW_GPU_SXM_{i}" for i in range(1, 9)]),
    # the same image anywhere else: refused
    ("bios", "smc", "hpe", "hpe", None),
    ("bios", "smc", "lenovo", "lenovo", None),
    ("gpu", "smc", "nvidia_gh200", "nvidia_gh200", None),
    ("bmc", "smc", "nvidia_dpu", "nvidia_dpu", None),
    ("bmc", "smc", "nvidia_gbswitch", "nvidia_gbswitch", None),
    ("bios", "smc", "supermicro", None, None),  # an identity that could not be read: refused, never a pass
    # `any`: the operator's word; the vendor plugin's rules find the entries
    ("bios", "any", "supermicro", "supermicro", ["BIOS"]),
    ("bios", "any", "supermicro", None, ["BIOS"]),
])
def test_firmware_plan_table(tmp_path: Path, component: str, applies_to: str, capture: str, identity: str | None,
                             entries: list[str] | None) -> None:
    comp = _image(tmp_path, component, _smc(component) if applies_to == "smc" else "any")
    state = _state(capture, identity_of(identity) if identity else None)
    vendor = by_name("supermicro" if capture == "supermicro" else "generic")
    if entries is None:
        with pytest.raises(NotApplicable) as err:
            fw.plan((comp,), state, vendor)
        line = str(err.value)
        assert "\n" not in line and line.startswith("node01 is ")
        assert f"firmware {component} ({component}.bin, for Supermicro SYS-821GE-TNHR) does not fit it" in line
        assert (identity_of(identity).name if identity else "a platform that could not be read") in line
        return
    plan = fw.plan((comp,), state, vendor)
    [step] = plan.steps
    assert step.entries == entries


def test_one_unfit_image_refuses_the_whole_baseline(tmp_path: Path) -> None:
    """Nothing is planned for a node when any of its images is not for it (no half-applied baseline)."""
    fit = _image(tmp_path, "bios", "any")
    unfit = _image(tmp_path, "bmc", _smc("bmc"))
    with pytest.raises(NotApplicable, match=r"firmware bmc \(bmc\.bin"):
        fw.plan((fit, unfit), _state("hpe", identity_of("hpe")), by_name("hpe"))


@pytest.mark.parametrize(("selector", "found"), [
    ({"id": "BIOS"}, ["BIOS"]),
    ({"id": "bios"}, ["BIOS"]),  # case-insensitive
    ({"id": "BIOS", "manufacturer": "Dell"}, []),  # given by the BMC and different: not this entry
    ({"id": "BIOS", "related_item": "/redfish/v1/Managers/*"}, []),
    ({"id": "*BIOS"}, ["BIOS"]),  # Golden_/Backup_/Staging_/Capsule_ copies are not running: never selected
    ({"id": "HGX_FW_GPU_SXM_1", "software_id": "0x0070"}, []),
    ({"id": "HGX_FW_BMC_0", "manufacturer": "Supermicro"}, ["HGX_FW_BMC_0"]),  # no Manufacturer given: not held
])
def test_entry_selectors(tmp_path: Path, selector: dict[str, str], found: list[str]) -> None:
    comp = _image(tmp_path, "bios", {"platforms": [SMC], "entries": [selector]})
    got = fw.select_entries(comp, firmware_entries("supermicro"), by_name("supermicro"))
    assert [e.id for e in got] == found


# ---- `firmware plan` over the loopback BMC: the whole captures --------------------------------
@pytest.mark.parametrize("capture", ["hpe", "lenovo", "nvidia_gh200", "nvidia_dpu", "nvidia_gbswitch"])
def test_ml_prod_v4_firmware_plan_is_refused_on_every_other_platform(
        inventory_copy: Path, capsys: pytest.CaptureFixture[str], capture: str) -> None:
    bmc = FakeBmc(tree=full_tree(capture))
    with Served(bmc) as srv:
        point_at(inventory_copy, srv.address)
        rc = main(["firmware", "plan", "node01", "-i", str(inventory_copy)])
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    errors = [line for line in err.splitlines() if "plain HTTP" not in line]  # the loopback BMC's own warning
    assert len(errors) == 1 and "Traceback" not in err
    described = "compute nodes (Supermicro SYS-821GE-TNHR)" if capture in NOT_COMPUTE else "Supermicro SYS-821GE-TNHR"
    assert re.search(rf"node01 is an? {re.escape(identity_of(capture).described)}; profile ML-PROD-V4 describes "
                     rf"{re.escape(described)}: refused", err), err
    changes = [s for s in bmc.seen if s.method not in ("GET", "HEAD")
               and not (s.method in ("POST", "DELETE") and "/SessionService/Sessions" in s.path)]
    assert changes == []
    assert not any("UpdateService" in s.path for s in bmc.seen)  # refused before the firmware was even read


def test_ml_prod_v4_firmware_plan_on_the_supermicro_capture_plans(
        inventory_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The control: the same command on the board the baseline is for plans its images."""
    bmc = FakeBmc(tree=full_tree("supermicro"))
    with Served(bmc) as srv:
        point_at(inventory_copy, srv.address)
        rc = main(["firmware", "plan", "node01", "-i", str(inventory_copy), "--json", "--no-bios"])
    out = capsys.readouterr().out
    assert rc == 0, out
    steps = json.loads(out)["plan"]["firmware"]["steps"]
    assert {s["component"]: len(s["entries"]) for s in steps} == {"bmc": 1, "bios": 1, "gpu": 8, "nvswitch": 4}
    # the identity is read from the Systems the node facts already hold: each system is fetched once
    gets = [s.path.rstrip("/") for s in bmc.seen if s.method == "GET"]
    assert gets.count("/redfish/v1/Systems") == 1 and gets.count("/redfish/v1/Systems/1") <= 1, gets


# ---- `bmc inventory`: the identity shown (table, json), kept in the journal, a misfit named --------------
def test_bmc_inventory_shows_and_keeps_the_identity(inventory_copy: Path, capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.journal import Journal
    from provision.journal.identities import identities

    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    Journal(None).close()  # the journal bring-up would have made
    system = _raw("supermicro", "/redfish/v1/Systems/1")
    with Served(FakeBmc(tree=full_tree("supermicro"))) as srv:
        point_at(inventory_copy, srv.address)
        main(["bmc", "inventory", "node01", "-i", str(inventory_copy), "--json"])
        data = json.loads(capsys.readouterr().out)
        main(["bmc", "inventory", "node01", "-i", str(inventory_copy), "--output", "table"])
        table = capsys.readouterr().out
    ident = data["identity"]
    assert data["profile_fits"] is True
    assert (ident["system"]["manufacturer"], ident["system"]["model"], ident["system"]["serial_number"],
            ident["system"]["uuid"]) == (system["Manufacturer"], system["Model"], system["SerialNumber"], system["UUID"])
    assert (ident["bmc"]["model"], ident["bmc"]["firmware_version"]) == ("ASPEED", "11.01.01")
    assert f"platform: Supermicro SYS-821GE-TNHR (SKU {system['SKU']}, part {system['PartNumber']}" in table
    assert "BMC ASPEED firmware 11.01.01" in " ".join(table.split())
    with Journal(None) as j:
        assert [r.source for r in identities(j, "node01")] == ["bmc inventory", "bmc inventory"]


def test_bmc_inventory_names_a_node_its_profile_does_not_describe(
        inventory_copy: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    with Served(FakeBmc(tree=full_tree("lenovo"))) as srv:
        point_at(inventory_copy, srv.address)
        rc = main(["bmc", "inventory", "node01", "-i", str(inventory_copy), "--json"])
    captured = capsys.readouterr()
    assert rc == 2
    assert json.loads(captured.out)["profile_fits"] is False  # the inventory is still shown
    assert ("node01 is a Lenovo ThinkSystem SR670 V2; profile ML-PROD-V4 describes Supermicro SYS-821GE-TNHR"
            in captured.err)


# ---- Targets: named where the BMC offers them ----------------------------------------------------
FI = "/redfish/v1/UpdateService/FirmwareInventory"


@pytest.mark.parametrize(("planned", "ids", "offered", "targets"), [
    ([], ["BIOS"], (), []),  # the BMC does not say: the plugin's choice (HPE, Lenovo: the image picks)
    ([f"{FI}/BIOS"], ["BIOS"], (), [f"{FI}/BIOS"]),
    ([], ["BIOS"], (f"{FI}/BMC", f"{FI}/BIOS"), [f"{FI}/BIOS"]),  # offered: named, whatever the plugin says
    ([], ["BIOS"], (f"{FI}/bios/",), [f"{FI}/BIOS"]),  # the BMC's spelling aside
    ([], ["BIOS"], (f"{FI}/BMC-Backup",), []),  # Lenovo offers only its backup slot: not this entry
    ([], ["CPLD_Backplane_1"], (f"{FI}/CPLD_Backplane_(\\d+)",), [f"{FI}/CPLD_Backplane_1"]),  # a pattern
    ([], ["CPLD_Backplane_x"], (f"{FI}/CPLD_Backplane_(\\d+)",), []),
])
def test_targets_named_where_offered(planned: list[str], ids: list[str], offered: tuple[str, ...],
                                     targets: list[str]) -> None:
    matched = [e for e in firmware_entries("supermicro") if e.id in ids] or [
        e.model_copy(update={"id": i, "uri": f"{FI}/{i}"}) for i in ids
        for e in firmware_entries("supermicro")[:1]]
    assert fw.name_targets(planned, matched, offered) == targets


def test_supermicro_simple_update_action_info_is_read_and_the_plan_names_its_entries(tmp_path: Path) -> None:
    """The whole capture's SimpleUpdateActionInfo lists the HGX GPU entries: the plan's targets are those."""
    with Served(FakeBmc(tree=full_tree("supermicro"))) as srv:
        from rf_support import connect

        state = fw.observe(connect(srv))
    assert f"{FI}/HGX_FW_GPU_SXM_1" in state.offered_targets and len(state.offered_targets) == 49
    comp = _image(tmp_path, "gpu", _smc("gpu"))
    [step] = fw.plan((comp,), state, by_name("supermicro")).steps
    assert step.targets == [f"{FI}/HGX_FW_GPU_SXM_{i}" for i in range(1, 9)]


def test_bmc_inventory_names_a_switch_tray_for_what_it_is(inventory_copy: Path, capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No GPUs, no host CPUs, its own Model; and the compute profile refused on it."""
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    with Served(FakeBmc(tree=full_tree("nvidia_gbswitch"))) as srv:
        point_at(inventory_copy, srv.address)
        rc = main(["bmc", "inventory", "node01", "-i", str(inventory_copy), "--json"])
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert rc == 2 and data["profile_fits"] is False
    assert (data["identity"]["kind"], data["identity"]["host_cpus"]) == ("switch", 0)
    assert data["inventory"]["cpus"] == [] and data["inventory"]["gpus"] == []
    assert data["inventory"]["system"]["model"] == _raw("nvidia_gbswitch", "/redfish/v1/Systems/System_0")["Model"]
    assert "node01 is an NVIDIA N5110_LD, a switch tray with no host CPUs; profile ML-PROD-V4 describes compute" \
        in captured.err


def test_firmware_status_names_a_node_its_profile_does_not_describe(
        inventory_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Not "absent: could not check" for images that were never for this board: the node is named."""
    with Served(FakeBmc(tree=full_tree("hpe"))) as srv:
        point_at(inventory_copy, srv.address)
        rc = main(["firmware", "status", "node01", "-i", str(inventory_copy)])
    assert rc == 2
    assert ("node01 is an HPE ProLiant DL385 Gen10 Plus v2; profile ML-PROD-V4 describes Supermicro "
            "SYS-821GE-TNHR: refused, nothing written") in capsys.readouterr().err


def test_a_refused_plan_still_keeps_the_identity_it_read(inventory_copy: Path, capsys: pytest.CaptureFixture[str],
                                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.journal import Journal
    from provision.journal.identities import identities

    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    Journal(None).close()
    with Served(FakeBmc(tree=full_tree("lenovo"))) as srv:
        point_at(inventory_copy, srv.address)
        assert main(["firmware", "plan", "node01", "-i", str(inventory_copy)]) == 2
        assert main(["bios", "apply", "node01", "-i", str(inventory_copy)]) == 2
    capsys.readouterr()
    with Journal(None) as j:
        kept = identities(j, "node01")
    assert [r.source for r in kept] == ["firmware plan", "bios apply"]
    assert {r.identity.system.serial_number for r in kept} == {_raw("lenovo", "/redfish/v1/Systems/1")["SerialNumber"]}


@pytest.mark.parametrize("placeholder", ["N/A", "Unknown", "", "  ", "Not Specified", "None"])
def test_a_placeholder_serial_or_uuid_names_no_board(placeholder: str) -> None:
    """Two boards that both report serial "N/A" are not the same board: a placeholder reads as not stated."""
    system = {"@odata.id": "/redfish/v1/Systems/1", "Manufacturer": "Supermicro", "Model": "SYS-821GE-TNHR",
              "SerialNumber": placeholder, "UUID": placeholder, "SKU": placeholder, "Bios": {}}
    chassis = {"@odata.id": "/redfish/v1/Chassis/1", "Manufacturer": "Supermicro", "SerialNumber": placeholder}
    got = from_tree([system], [chassis], [])
    assert (got.system.serial_number, got.system.uuid, got.system.sku) == (None, None, None)
    assert got.chassis is not None and got.chassis.serial_number is None
    assert got.system.model == "SYS-821GE-TNHR"


def test_the_node_is_the_host_system_and_its_own_manager_whatever_the_listing_order() -> None:
    """A BMC that lists the HGX baseboard before the host (the GH200 capture's two systems, reversed): the node's
    system is the one with a Bios, and its Manager the one that system names in Links.ManagedBy."""
    from provision.redfish.connector import ConnectorOptions
    from provision.redfish.ops.session import open_node
    from tests.unit.redfish.rf_fakebmc import FakeBmc, Served

    tree = full_tree("nvidia_gh200")
    systems = tree["/redfish/v1/Systems"]
    tree["/redfish/v1/Systems"] = {**systems, "Members": list(reversed(systems["Members"]))}
    assert tree["/redfish/v1/Systems"]["Members"][0]["@odata.id"].endswith("HGX_Baseboard_0")
    host = tree["/redfish/v1/Systems/System_0"]
    managed_by = [m["@odata.id"] for m in host["Links"]["ManagedBy"]]
    with Served(FakeBmc(tree=tree)) as srv:
        opts = ConnectorOptions(address=srv.address, username="admin", password="s3cret-Pa55", name="n1",
                                insecure_http=True)
        with open_node(opts) as node:
            assert node.system.uri == "/redfish/v1/Systems/System_0"
            assert node.manager_uri == managed_by[0]


@pytest.mark.parametrize(("pattern", "error"), [
    ("SYS-821GE-[TN]NHR", None), ("SYS-[89]2*-TNHR", None), ("SYS-[!7]21GE-*", None), ("*", None),
    ("SYS-[82", "'[' is never closed"), ("SYS-[8[2]", "'[' inside a [...] set"), ("", "empty pattern"),
    ("SYS\t821", "control character"), ("SYS-[89]2[", "'[' is never closed"),
])
def test_a_platform_pattern_is_a_well_formed_glob(pattern: str, error: str | None) -> None:
    if error is None:
        assert check_glob(pattern) == pattern
        return
    with pytest.raises(ValueError, match=re.escape(error)):
        check_glob(pattern)
