"""A running firmware version that cannot be ordered against the baseline's (a BIOS build id, a date against a
dotted baseline) is an error outcome naming both strings, through status, plan, update and the CLI: never
"newer"/"downgrade refused", "older" (flashed) or "at baseline"; the component is not flashed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from rf_fakebmc import FakeBmc, Served
from rf_support import point_at, tree

from provision.cli import main as cli_main
from provision.redfish.ops import firmware as fw
from provision.redfish.resources import SoftwareInventory, UpdateService
from provision.redfish.vendors import by_name
from provision.spec.firmware import FirmwareComponent

BIOS = "/redfish/v1/UpdateService/FirmwareInventory/BIOS"
BUILD = "buildbrain-gcid-38635631"
SHA = hashlib.sha256(b"x").hexdigest()


def with_bios(version: str) -> dict[str, Any]:
    t = tree("supermicro")
    t[BIOS] = {**t[BIOS], "Version": version}
    return t


def state_of(t: dict[str, Any]) -> fw.FirmwareState:
    entries = [SoftwareInventory.parse(v) for k, v in t.items()
               if k.startswith("/redfish/v1/UpdateService/FirmwareInventory/") and k.count("/") == 5]
    return fw.FirmwareState(entries=entries, service=UpdateService.parse(t["/redfish/v1/UpdateService"]))


def bios(version: str, **kw: object) -> FirmwareComponent:
    return FirmwareComponent.model_validate(
        {"component": "bios", "version": version, "image": "bios.bin", "sha256": SHA, "applies_to": "any", **kw})


@pytest.mark.parametrize(("running", "baseline", "scheme"), [
    (BUILD, "2.1", None),                   # the build id of issue 38: was "newer", downgrade refused
    (BUILD, "9", None),                      # ... and would have been "older" (flashed) against a bigger number
    ("2023-08-04", "2.1", None),             # a date and a dotted version
    ("BIOS Date: 08/04/2023", "2.1", None),  # the date token of an AMI string
    ("96.00.9F.00.04", "2.1", None),         # hex-dotted and dotted
    ("1.4", "2.1", "date"),                  # both dotted, but the baseline says its versions are dates
])
def test_plan_names_both_versions_and_flashes_nothing(tmp_path: Path, running: str, baseline: str,
                                                      scheme: str | None) -> None:
    extra = {"version_scheme": scheme} if scheme else {}
    if scheme == "date":  # a date baseline, and a running version that is no date
        baseline = "2023-08-04"
    comps = (bios(baseline, **extra),)
    state = state_of(with_bios(running))
    rows = fw.status(comps, state, by_name("supermicro"))
    assert rows[0].verdict == "incomparable"
    for allow in (False, True):  # --allow-downgrade does not make an unordered version flashable
        plan = fw.plan(comps, state, by_name("supermicro"), tmp_path, allow_downgrade=allow)
        assert plan.steps == [] and plan.refused == [] and list(plan.incomparable) == ["bios"]
        parsed = fw.status(comps, state, by_name("supermicro"))[0].entries
        shown = next(e.version for e in parsed if e.id == "BIOS")
        assert f"cannot compare {shown!r} with baseline {baseline!r}" in plan.incomparable["bios"]
        assert plan.problems() == [plan.incomparable["bios"]]
        assert "newer" not in plan.incomparable["bios"] and "downgrade" not in plan.incomparable["bios"]


def test_same_scheme_still_orders(tmp_path: Path) -> None:
    state = state_of(with_bios("2023-08-04"))
    assert fw.plan((bios("2023-09-01"),), state, by_name("supermicro"), tmp_path).steps[0].component == "bios"
    assert fw.plan((bios("2023-08-04"),), state, by_name("supermicro"), tmp_path).steps == []
    equal = state_of(with_bios(BUILD))  # an opaque version equal to the baseline's is at baseline
    assert fw.status((bios("2.1"),), equal, by_name("supermicro"))[0].verdict == "incomparable"


def test_update_sends_nothing_when_a_version_cannot_be_compared(inventory_copy: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`firmware update` refuses the whole plan (as for a refused downgrade): the BMC image, which alone would be
    an upgrade, is not sent either; the one line names both versions."""
    bmc = FakeBmc(tree=with_bios(BUILD))
    with Served(bmc) as srv:
        point_at(inventory_copy, srv.address)
        code = cli_main(["firmware", "update", "node01", "-i", str(inventory_copy)])
    err = _errors(capsys.readouterr().err)
    assert code == 1 and len(err) == 1 and "nothing sent" in err[0]
    assert f"cannot compare '{BUILD}' with baseline '2.1'" in err[0]
    assert [s.path for s in bmc.seen if s.method == "POST" and "UpdateService" in s.path] == []
    assert bmc.patches == []


def _errors(err: str) -> list[str]:
    return [line for line in err.strip().splitlines() if "plain HTTP" not in line]


def test_cli_status_plan_and_update_plan_exit_3_naming_both(inventory_copy: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    bmc = FakeBmc(tree=with_bios(BUILD))
    with Served(bmc) as srv:
        point_at(inventory_copy, srv.address)
        planned = cli_main(["firmware", "plan", "node01", "-i", str(inventory_copy)])
        out = capsys.readouterr()
        as_json = cli_main(["firmware", "plan", "node01", "-i", str(inventory_copy), "--json"])
        data = json.loads(capsys.readouterr().out)
        status = cli_main(["firmware", "status", "node01", "-i", str(inventory_copy)])
        shown = capsys.readouterr()
    line = f"cannot compare '{BUILD}' with baseline '2.1'"
    assert planned == 3 and line in " ".join(out.out.split()) and "bios" in out.err
    assert "newer" not in out.out and "downgrade refused" not in out.out and "at baseline" not in out.out
    assert len(_errors(out.err)) == 1 and "Traceback" not in out.err
    assert as_json == 3 and line in data["plan"]["firmware"]["incomparable"]["bios"]
    assert all(s["component"] != "bios" for s in data["plan"]["firmware"]["steps"])
    assert status != 0 and line in " ".join(shown.out.split())
    assert [s.path for s in bmc.seen if s.method != "GET" and "UpdateService" in s.path] == []
