"""provision retire / unretire: the retire and drain plans as tables, Slurm partitions read through scontrol (a
stand-in script), the journal's retired mark, and a campaign plan that lists a retired node and never reads it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from provision.campaign.updater import FirmwareState
from provision.clean import records
from provision.clean.bmc_stages import BmcStateObserved, DefaultsObserved, plan_bmc_state, plan_defaults
from provision.clean.retire import RetireObserved, Scheduler, SlurmView, expand, plan_drain, plan_retire
from provision.cli import main
from provision.journal import Journal
from provision.redfish.ops.power import MediaSlot
from provision.redfish.resources import LogEntry
from provision.scheduler.slurm import Scontrol
from provision.spec import HostEntry, load_fleet
from provision.spec.platforms import Board, PlatformIdentity
from tests.conftest import EXAMPLE_INVENTORY

INV = str(EXAMPLE_INVENTORY / "hosts.yml")
CAMPAIGN = str(EXAMPLE_INVENTORY.parent / "campaigns" / "ml_prod_v4_2026q4.yml")
IDENT = PlatformIdentity(system=Board(serial_number="S1", uuid="U1"))


@pytest.fixture(scope="module")
def host() -> HostEntry:
    return load_fleet(EXAMPLE_INVENTORY / "hosts.yml").select(["node01"])[0]


def _kinds(plan: Any) -> list[str]:
    return [f"{a.kind} {a.target}" for a in plan.actions]


@pytest.mark.parametrize(("slurm", "power", "retired", "kinds"), [
    (SlurmView(name="gpu-a01", drained=True, partitions={"gpu": ("gpu-a01", "gpu-a02"), "all": ("gpu-a02",)}), "On",
     False, ["slurm-partition-leave gpu", "power-off host", "mark-retired node01"]),
    (None, "Off", False, ["mark-retired node01"]),
    (None, "Off", True, []),  # retired, off: nothing to do
    (SlurmView(name="gpu-a01", drained=True, partitions={}), None, True, ["power-off host"]),
])
def test_retire_plan(host: HostEntry, slurm: SlurmView | None, power: str | None, retired: bool,
                     kinds: list[str]) -> None:
    plan = plan_retire(host, RetireObserved(identity=IDENT, power_state=power, slurm=slurm, retired=retired))
    assert _kinds(plan) == kinds
    leave = [a for a in plan.actions if a.kind == "slurm-partition-leave"]
    assert all(a.keep == ("gpu-a02",) for a in leave)  # type: ignore[attr-defined]
    mark = [a for a in plan.actions if a.kind == "mark-retired"]
    assert all((a.serial, a.uuid) == ("S1", "U1") for a in mark)  # type: ignore[attr-defined]


@pytest.mark.parametrize(("view", "kinds"), [
    (None, []), (SlurmView(name="g1", drained=True, partitions={}), []),
    (SlurmView(name="g1", drained=False, partitions={}), ["slurm-drain g1"]),
])
def test_drain_plan(host: HostEntry, view: SlurmView | None, kinds: list[str]) -> None:
    assert _kinds(plan_drain(host, view)) == kinds


def test_defaults_plan_once_per_clean(host: HostEntry) -> None:
    assert _kinds(plan_defaults(host, DefaultsObserved(done=False, action_uri="/b/Actions/Bios.ResetBios"))) == [
        "bios-defaults host"]
    assert plan_defaults(host, DefaultsObserved(done=True, action_uri="x")).actions == ()


def test_bmc_state_plan(host: HostEntry) -> None:
    slots = (MediaSlot(uri="/m/CD1", types=("CD",), image="http://x/os.iso", inserted=True),
             MediaSlot(uri="/m/USB1", types=("USBStick",)))
    entries = (LogEntry.parse({"@odata.id": "/e/1", "Id": "1", "Message": "x"}),)
    seen = BmcStateObserved(override="Once", media=slots, sel_entries=entries, sel_cleared=False)
    plan = plan_bmc_state(host, seen)
    assert _kinds(plan) == ["boot-override-clear host", "media-eject /m/CD1", "sel-clear SEL"]
    assert "1 entries saved" in plan.actions[-1].after
    quiet = seen.model_copy(update={"override": "Disabled", "media": (), "sel_cleared": True})
    assert plan_bmc_state(host, quiet).actions == ()


def test_hostlists_expand() -> None:
    assert expand("gpu[01-03],login1,r[1-2]n[1-2]") == ["gpu01", "gpu02", "gpu03", "login1", "r1n1", "r1n2", "r2n1",
                                                      "r2n2"]


def test_scheduler_reads_partitions_and_sets_their_nodes(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    tool = tmp_path / "scontrol"
    tool.write_text(f"""#!/bin/sh
echo "$*" >> {log}
case "$*" in
  "-o show node gpu02") echo "NodeName=gpu02 Arch=x86_64 State=IDLE+DRAIN Partitions=gpu,all Reason=provision: retired";;
  "-o show partition gpu") echo "PartitionName=gpu AllowGroups=ALL Nodes=gpu[01-03] State=UP";;
  "-o show partition all") echo "PartitionName=all Nodes=gpu[01-03],login1 State=UP";;
  update*) ;;
  *) exit 1;;
esac
""")
    tool.chmod(0o755)
    sched = Scheduler(Scontrol(str(tool)))
    view = sched.view("gpu02")
    assert view.drained and view.partitions == {"gpu": ("gpu01", "gpu02", "gpu03"),
                                                "all": ("gpu01", "gpu02", "gpu03", "login1")}
    sched.set_nodes("gpu", ("gpu01", "gpu03"))
    assert log.read_text().splitlines()[-1] == "update partitionname=gpu nodes=gpu01,gpu03"


def test_retired_mark_and_its_reversal(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.db") as jr:
        records.mark(jr, "node02", True, "S2", "U2")
        records.mark(jr, "node03", True, "S3", "U3")
        records.mark(jr, "node03", False)
        marks = records.retired(jr)
    assert list(marks) == ["node02"] and (marks["node02"].serial, marks["node02"].uuid) == ("S2", "U2")


def test_a_campaign_plan_lists_a_retired_node_and_never_reads_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    journal = tmp_path / "j.db"
    with Journal(journal) as jr:
        records.mark(jr, "node02", True, "S2", "U2")
    seen: list[list[str]] = []

    def observe_all(targets: list[Any], *args: Any) -> dict[str, FirmwareState | str]:
        seen.append([t.name for t in targets])
        return {t.name: "not read in this test" for t in targets}

    monkeypatch.setattr("provision.cli.campaign.observe_all", observe_all)
    args = ["campaign", "plan", CAMPAIGN, "-i", INV, "--journal", str(journal), "--limit", "node[01-03]", "--json"]
    main(args)
    plan = json.loads(capsys.readouterr().out)
    assert plan["retired"] == ["node02"] and "node02" not in [n["node"] for n in plan["nodes"]]
    assert not any("node02" in w for w in plan["waves"])
    assert main(["unretire", "node02", "-i", INV, "--journal", str(journal)]) == 0
    capsys.readouterr()
    main(args)
    assert json.loads(capsys.readouterr().out)["retired"] == []
    assert seen == [["node01", "node03"], ["node01", "node02", "node03"]]


def test_status_shows_cleaned_and_retired(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = tmp_path / "j.db"
    with Journal(journal) as jr:
        run_id = jr.start_run(records.CLEAN, "node01", {"by": "ops@ctl", "level": "sanitize"})
        jr.stage_finished(jr.stage_started(run_id, "node01", records.DONE_STAGE), "converged")
        failed = jr.start_run(records.CLEAN, "node02", {"by": "ops@ctl", "level": "erase"})
        jr.stage_finished(jr.stage_started(failed, "node02", "disks"), "failed")
        records.mark(jr, "node02", True, "S2", "U2")
    assert main(["status", "--journal", str(journal), "-i", INV, "--json"]) == 0
    rows = {r["node"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["node01"]["cleaned"].startswith("cleaned at ") and rows["node01"]["cleaned"].endswith(
        " by ops@ctl (sanitize)")
    assert rows["node01"]["retired"] is None
    assert rows["node02"]["cleaned"] is None and rows["node02"]["retired"].startswith("retired at ")


def test_clean_and_retire_refuse_without_a_terminal_or_yes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    journal = str(tmp_path / "j.db")
    for verb in ("clean", "retire"):
        assert main([verb, "node01", "-i", INV, "--journal", journal]) == 2
        err = " ".join(capsys.readouterr().err.split())
        assert "no terminal to confirm on; pass --yes" in err and "Traceback" not in err
    assert not (tmp_path / "j.db").exists()  # refused before anything was opened


def test_a_node_another_run_holds_is_refused_before_anything(host: HostEntry, tmp_path: Path) -> None:
    from provision.bringup.options import BringupOptions
    from provision.clean.options import CleanOptions
    from provision.clean.run import run_clean
    from provision.journal.locks import NodeLocked, NodeLocks

    opts = CleanOptions(bringup=BringupOptions(inventory=Path(INV)))
    with Journal(tmp_path / "j.db") as jr, NodeLocks(jr).hold(["node01"], owner="bringup"):
        with pytest.raises(NodeLocked, match="bringup"):
            run_clean([host], opts, jr)
        assert jr.runs(records.CLEAN) == []


def test_the_guard_reads_the_journal_the_inventory_and_slurm(host: HostEntry, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from contextlib import contextmanager

    from provision.bringup.options import BringupOptions
    from provision.bringup.stage import StageContext
    from provision.clean import bmc_stages
    from provision.clean.options import CleanOptions
    from provision.errors import CheckFailed
    from provision.journal.identities import record_identity
    from provision.spec.fleet import RecordedIdentity
    from provision.spec.slurm import SlurmSettings

    @contextmanager
    def no_bmc(ctx: Any, opts: Any):  # type: ignore[no-untyped-def]
        yield None

    monkeypatch.setattr(bmc_stages, "bmc", no_bmc)
    monkeypatch.setattr(bmc_stages.platform_identity, "of_node", lambda node: IDENT)
    scontrol = tmp_path / "scontrol"
    scontrol.write_text("#!/bin/sh\necho 'NodeName=gpu-a01 Arch=x86_64 State=MIXED Partitions=gpu Reason=(null)'\n")
    scontrol.chmod(0o755)
    stage = bmc_stages.GuardStage(CleanOptions(bringup=BringupOptions(inventory=Path(INV))))
    with Journal(tmp_path / "j.db") as jr:
        ctx = StageContext(host=host, journal=jr, run_id=None)
        with pytest.raises(CheckFailed, match="no serial or UUID recorded"):
            stage.plan(host, stage.observe(ctx))
        record_identity(jr, "node01", PlatformIdentity(system=Board(serial_number="S1", uuid="U1")), "preflight")
        assert "serial S1" in stage.plan(host, stage.observe(ctx)).note
        moved = host.model_copy(update={"identity": RecordedIdentity(serial="S0")})
        with pytest.raises(CheckFailed, match=r"inventory \(provision_bmc_identity\) holds S0"):
            stage.plan(moved, stage.observe(StageContext(host=moved, journal=jr, run_id=None)))
        busy = host.model_copy(update={"slurm": SlurmSettings(scontrol=str(scontrol), node_name="gpu-a01")})
        with pytest.raises(CheckFailed, match="gpu-a01 is not drained"):
            stage.plan(busy, stage.observe(StageContext(host=busy, journal=jr, run_id=None)))
