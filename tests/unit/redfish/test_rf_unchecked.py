"""`bios diff`, `bios apply --plan`, `firmware status` and `firmware update --plan` agree: a spec key with no
BIOS attribute (and no other evidence) or a baseline component absent from FirmwareInventory is an error line
naming it and a non-zero exit, never "matches" / "at baseline". Against a loopback BMC serving the Supermicro
capture (whose BIOS has no boot-mode attribute: boot_mode is proven from ComputerSystem.Boot)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rf_fakebmc import FakeBmc, Served
from rf_support import point_at, tree

from provision.cli import bios as bios_cli
from provision.cli import firmware as fw_cli
from provision.cli import main as cli_main
from provision.errors import ChecksIncomplete
from provision.redfish.ops import bios as bios_ops
from provision.redfish.ops import converge
from provision.redfish.ops import firmware as fw
from provision.redfish.resources import AttributeRegistry, Bios, ComputerSystem
from provision.redfish.vendors import by_name
from provision.spec.firmware import Bios as BiosSpec

SYSTEM = "/redfish/v1/Systems/1"
INVENTORY = "/redfish/v1/UpdateService/FirmwareInventory"


def without_sriov(t: dict[str, Any]) -> dict[str, Any]:
    """The capture with the BIOS attribute(s) the Supermicro plugin maps sriov to removed."""
    vendor = by_name("supermicro")
    for uri in (f"{SYSTEM}/Bios", f"{SYSTEM}/Bios/SD"):
        if uri in t and "Attributes" in t[uri]:
            attrs = dict(t[uri]["Attributes"])
            while (name := vendor.bios_attribute("sriov", sorted(attrs))) is not None:
                attrs.pop(name)
            t[uri] = {**t[uri], "Attributes": attrs}
    t.pop("/redfish/v1/Registries/BiosAttributeRegistry", None)
    for uri in [u for u in t if u.startswith("/redfish/v1/Registries/BiosAttributeRegistry")]:
        t.pop(uri)
    return t


def without_nvswitch(t: dict[str, Any]) -> dict[str, Any]:
    """The capture with every NVSwitch firmware entry gone from FirmwareInventory."""
    coll = t[INVENTORY]
    members = [m for m in coll["Members"] if "nvswitch" not in m["@odata.id"].lower()]
    t[INVENTORY] = {**coll, "Members": members, "Members@odata.count": len(members)}
    return t


def _errors(err: str) -> list[str]:
    """stderr's lines but the plain-HTTP warning (said once per BMC by every command: the FakeBmc is http://)."""
    return [line for line in err.strip().splitlines() if "plain HTTP" not in line]


def test_bios_diff_and_apply_plan_name_an_unmapped_key(inventory_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Served(FakeBmc(tree=without_sriov(tree("supermicro")))) as srv:
        point_at(inventory_copy, srv.address)
        diff = cli_main(["bios", "diff", "node01", "-i", str(inventory_copy)])
        out = capsys.readouterr()
        plan = cli_main(["bios", "apply", "node01", "-i", str(inventory_copy), "--plan"])
        planned = capsys.readouterr()
    assert diff != 0 and plan == 3
    for o in (out, planned):
        text = " ".join(o.out.split())
        assert "matches the spec" not in text
        assert "error: node01: BIOS sriov: no attribute on this supermicro BIOS and no other evidence" in text
        assert "boot_mode: holds (no BIOS attribute; ComputerSystem.Boot.BootSourceOverrideMode is UEFI)" in text
    assert "sriov" in planned.err and len(_errors(planned.err)) == 1 and "Traceback" not in planned.err
    assert srv.bmc.patches == []


def test_bios_boot_mode_unproven_without_boot_source_mode(inventory_copy: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    t = tree("supermicro")
    boot = {k: v for k, v in t[SYSTEM]["Boot"].items() if k != "BootSourceOverrideMode"}
    t[SYSTEM] = {**t[SYSTEM], "Boot": boot}
    with Served(FakeBmc(tree=t)) as srv:
        point_at(inventory_copy, srv.address)
        code = cli_main(["bios", "apply", "node01", "-i", str(inventory_copy), "--plan", "--json"])
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert code == 3 and data["plan"]["unmapped"] == ["boot_mode"] and "boot_mode" in out.err


def test_firmware_status_and_update_plan_name_an_absent_component(
    inventory_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Served(FakeBmc(tree=without_nvswitch(tree("supermicro")))) as srv:
        point_at(inventory_copy, srv.address)
        status = cli_main(["firmware", "status", "node01", "-i", str(inventory_copy)])
        shown = capsys.readouterr()
        plan = cli_main(["firmware", "update", "node01", "-i", str(inventory_copy), "--plan"])
        planned = capsys.readouterr()
        as_json = cli_main(["firmware", "plan", "node01", "-i", str(inventory_copy), "--json"])
        data = json.loads(capsys.readouterr().out)
    assert status == 1  # bios is older in the capture: a failure, and nvswitch could not be checked
    assert "error: node01: firmware nvswitch: not in FirmwareInventory: could not check" in shown.out
    assert "1 more could not be checked" in shown.err
    assert plan == 3 and "firmware at baseline" not in planned.out
    assert "error: node01: firmware nvswitch: not in FirmwareInventory: could not check" in " ".join(
        planned.out.split())
    assert len(_errors(planned.err)) == 1 and "nvswitch" in planned.err
    assert as_json == 3 and data["plan"]["firmware"]["absent"] == ["nvswitch"]


# ---- the renderers and the pure plans -------------------------------------------------------------------
def _bios_state(system: dict[str, Any] | None) -> bios_ops.BiosState:
    t = tree("supermicro")
    return bios_ops.BiosState(current=Bios.parse(t[f"{SYSTEM}/Bios"]), pending={}, pending_uri="x",
                              registry=AttributeRegistry.model_validate({}),
                              system=None if system is None else ComputerSystem.parse(system))


@pytest.mark.parametrize(("mode", "wanted", "holds"), [("UEFI", "uefi", True), ("Legacy", "uefi", False),
                                                       ("Legacy", "legacy", True)])
def test_boot_mode_proven_from_the_system(mode: str, wanted: str, holds: bool) -> None:
    system = {**tree("supermicro")[SYSTEM], "Boot": {"BootSourceOverrideMode": mode}}
    plan = bios_ops.plan(BiosSpec(settings={"boot_mode": wanted}), _bios_state(system), by_name("supermicro"))
    assert plan.unmapped == [] and [(p.key, p.holds) for p in plan.proven] == [("boot_mode", holds)]
    assert plan.differs is not holds and plan.problems() == []
    no_system = bios_ops.plan(BiosSpec(settings={"boot_mode": wanted}), _bios_state(None), by_name("supermicro"))
    assert no_system.unmapped == ["boot_mode"] and no_system.proven == [] and len(no_system.problems()) == 1


def test_generic_prove_bios_only_for_boot_mode() -> None:
    system = ComputerSystem.parse({"Boot": {"BootSourceOverrideMode": "UEFI"}})
    vendor = by_name("generic")
    assert vendor.prove_bios("sriov", "enabled", system) is None
    assert vendor.prove_bios("boot_mode", "uefi", ComputerSystem.parse({})) is None
    proof = vendor.prove_bios("boot_mode", "uefi", system)
    assert proof is not None and proof.holds and "BootSourceOverrideMode is UEFI" in proof.evidence


def test_render_never_says_at_baseline_with_an_absent_component(capsys: pytest.CaptureFixture[str]) -> None:
    cplan = converge.ConvergePlan(firmware=fw.FirmwarePlan(absent=["nvswitch"]))
    fw_cli.render("node01", cplan)
    out = capsys.readouterr().out
    assert "at baseline" not in out and "firmware nvswitch: not in FirmwareInventory" in out
    with pytest.raises(ChecksIncomplete, match="node01: could not be checked: nvswitch"):
        fw_cli.raise_unchecked("node01", cplan)
    fw_cli.render("node01", converge.ConvergePlan(firmware=fw.FirmwarePlan()))
    assert "node01: firmware at baseline" in capsys.readouterr().out
    fw_cli.raise_unchecked("node01", converge.ConvergePlan(firmware=fw.FirmwarePlan()))


def test_bios_render_never_says_matches_with_an_unmapped_key(capsys: pytest.CaptureFixture[str]) -> None:
    plan = bios_ops.BiosPlan(vendor="supermicro", pending_uri="x", unmapped=["sriov", "numa"])
    bios_cli.render("node01", plan)
    out = capsys.readouterr().out
    assert "matches" not in out and out.count("error: node01: BIOS ") == 2
    with pytest.raises(ChecksIncomplete, match="2 BIOS key"):
        bios_cli.raise_unchecked("node01", plan)
    bios_cli.render("node01", bios_ops.BiosPlan(vendor="supermicro", pending_uri="x"))
    assert "node01: BIOS matches the spec" in capsys.readouterr().out

