"""Plans that could not look (issue 38 item 7): `firmware plan|status|update --plan`, `bios diff|apply --plan` and
`campaign plan` exit 3 (as verify) when a node's BMC could not be read, never "at baseline" or "matches"; a cause every node shares (no
credentials given) is said once, not once per node; the counts say "could not read N"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from rf_fakebmc import FakeBmc, Served
from rf_support import point_at, tree

from provision.cli import main
from tests.unit.campaign.fakes import ROOT

CAUSE = "provision_bmc_username and provision_bmc_password not set"
BIOS = "/redfish/v1/UpdateService/FirmwareInventory/BIOS"
BUILD = "buildbrain-gcid-38635631"


@pytest.fixture(autouse=True)
def no_env_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("PROVISION_BMC_USERNAME", "PROVISION_BMC_PASSWORD"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def campaign(inventory_copy: Path) -> Path:
    """The example campaign beside the copied inventory (its images are ../firmware/, copied too)."""
    (inventory_copy.parent.parent / "campaigns").mkdir()
    return Path(shutil.copy(ROOT / "campaigns" / "ml_prod_v4_2026q4.yml", inventory_copy.parent.parent / "campaigns"))


def _lines(text: str) -> list[str]:
    return [line for line in text.strip().splitlines() if line and "plain HTTP" not in line]


@pytest.mark.parametrize("argv", [["firmware", "plan"], ["bios", "diff"], ["firmware", "plan", "--json"],
                                  ["bios", "diff", "--json"], ["firmware", "status"], ["firmware", "update", "--plan"],
                                  ["bios", "apply", "--plan"]])
def test_a_single_node_plan_without_credentials_exits_3(inventory_copy: Path, capsys: pytest.CaptureFixture[str],
                                                        argv: list[str]) -> None:
    code = main([*argv[:2], "node01", *argv[2:], "-i", str(inventory_copy)])
    out = capsys.readouterr()
    assert code == 3 and out.out == ""  # no plan printed, not even an empty one
    assert _lines(out.err) == [f"error: host node01: {CAUSE}: give them as host or group vars (the password "
                               "vaulted), or set PROVISION_BMC_USERNAME and PROVISION_BMC_PASSWORD"]


@pytest.mark.parametrize("argv", [["firmware", "plan"], ["bios", "diff"], ["firmware", "status"],
                                  ["firmware", "update", "--plan"], ["bios", "apply", "--plan"]])
def test_a_single_node_plan_whose_credentials_are_refused_exits_3(inventory_copy: Path,
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  argv: list[str]) -> None:
    with Served(FakeBmc(tree=tree("supermicro"), password="another")) as srv:
        point_at(inventory_copy, srv.address)
        code = main([*argv[:2], "node01", *argv[2:], "-i", str(inventory_copy)])
    out = capsys.readouterr()
    err = _lines(out.err)
    assert code == 3 and len(err) == 1 and "node01 BMC" in err[0] and "Traceback" not in err[0]
    assert "at baseline" not in out.out and "matches the spec" not in out.out


def test_campaign_plan_over_nodes_without_credentials(inventory_copy: Path, campaign: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["campaign", "plan", str(campaign), "-i", str(inventory_copy),
                 "--journal", str(inventory_copy.parent / "j.db")])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 3
    assert text.count(CAUSE) == 1  # the shared cause, once for the eight nodes
    assert "could not read 8 node(s) (node01, node02, node03, node04, node05 and 3 more)" in text
    assert "could not read: 8" in text and "already at baseline" not in text
    assert _lines(out.err)[-1] == ("error: campaign ml_prod_v4_2026q4: could not read 8 of 8 node(s): "
                                   "no plan for them")
    assert "node0" not in out.out and len(_lines(out.out)) == 1  # the header only: no row per node repeating it


def test_campaign_plan_json_groups_the_unread_nodes(inventory_copy: Path, campaign: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["campaign", "plan", str(campaign), "-i", str(inventory_copy), "--limit", "node0[1-3]",
                 "--journal", str(inventory_copy.parent / "j.db"), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 3 and data["at_baseline"] == []
    assert [(u["nodes"], CAUSE in u["cause"], "node01" in u["cause"]) for u in data["unread"]] == [
        (["node01", "node02", "node03"], True, False)]


def test_campaign_plan_with_a_version_it_cannot_compare_and_unreadable_nodes(
    inventory_copy: Path, campaign: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """node01's BIOS reports a build id (its row names both strings, no bios update); node02 and node03 have
    no credentials (one cause, said once); exit 3; never "already at baseline"."""
    t = tree("supermicro")
    t[BIOS] = {**t[BIOS], "Version": BUILD}
    with Served(FakeBmc(tree=t)) as srv:
        point_at(inventory_copy, srv.address)
        code = main(["campaign", "plan", str(campaign), "-i", str(inventory_copy), "--limit", "node0[1-3]",
                     "--journal", str(inventory_copy.parent / "j.db")])
    out = capsys.readouterr()
    text = " ".join((out.out + out.err).split())
    rows = [line.split("\t") for line in _lines(out.out)[1:]]
    assert code == 3 and [r[0] for r in rows] == ["node01"]
    assert f"not planned: bios (BIOS): cannot compare '{BUILD}' with catalog '2.1'" in rows[0][2]
    assert "bios " + BUILD not in rows[0][2] and "bmc 11.01.01 -> 11.02.05" in rows[0][2]
    assert text.count(CAUSE) == 1 and "could not read 2 node(s) (node02, node03)" in text
    assert "could not read: 2; versions not comparable: 1" in text and "already at baseline" not in text
    assert "versions not comparable with the catalog's on 1 node(s)" in _lines(out.err)[-1]


@pytest.mark.parametrize("argv", [["firmware", "update"], ["bios", "apply"]])
def test_an_update_that_cannot_read_the_bmc_is_a_failure_not_could_not_check(
        inventory_copy: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """Without --plan a write whose BMC refuses the credentials failed (exit 1), as any update that fails."""
    with Served(FakeBmc(tree=tree("supermicro"), password="another")) as srv:
        point_at(inventory_copy, srv.address)
        code = main([*argv, "node01", "-i", str(inventory_copy)])
    err = _lines(capsys.readouterr().err)
    assert code == 1 and len(err) == 1 and "node01 BMC" in err[0]
