"""Slurm drain/resume: scontrol's node view parsed from real 22.05 output, the plan as a table, the command
lines and environment scontrol gets (a fake scontrol records them), and the hooks of bring-up and verify."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml

from provision.conformance.model import CheckResult, NodeReport, Outcome
from provision.scheduler.hooks import tell_slurm
from provision.scheduler.slurm import (
    MAX_REASON,
    ActionKind,
    Scontrol,
    SlurmError,
    SlurmNode,
    drain_reason,
    parse_node,
    plan,
    scontrol_env,
    sync,
)
from provision.spec import load_fleet
from provision.spec.slurm import SlurmSettings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slurm"
ROOT = Path(__file__).resolve().parents[2]
P, W, V, E, F = Outcome.PASS, Outcome.WARN, Outcome.WAIVED, Outcome.ERROR, Outcome.FAIL


def report(*rows: tuple[str, Outcome], error: str | None = None) -> NodeReport:
    results = tuple(CheckResult(node="node01", id=cid, area="a", description="d", expected="e", found="f",
                                outcome=o) for cid, o in rows)
    return NodeReport(node="node01", profile="p", results=results, error=error)


def node(*states: str, reason: str = "") -> SlurmNode:
    return SlurmNode(name="node01", states=frozenset(states), reason=reason)


# --- scontrol's view ---------------------------------------------------------------------------------------

def test_parse_real_scontrol_output() -> None:
    idle = parse_node("node01", (FIXTURES / "show_node_unknown.txt").read_text())
    assert idle.states == {"UNKNOWN"} and not idle.drained and idle.reason == ""
    drained = parse_node("node01", (FIXTURES / "show_node_drained.txt").read_text())
    assert drained.states == {"UNKNOWN", "DRAIN"} and drained.drained and drained.by_provision
    assert drained.reason == "provision: gpu.count,gpu.3.model"  # the [root@time] stamp is not the reason
    gone = parse_node("node01", (FIXTURES / "show_node_not_responding.txt").read_text())
    assert gone.states == {"UNKNOWN", "NOT_RESPONDING"}


@pytest.mark.parametrize(("text", "states", "reason"), [
    ("NodeName=node01 Arch=x86_64 State=IDLE*+DRAIN OS=Linux 6.1 #1 SMP Reason=fan swap by ops [alice@2026-01-01]",
     {"IDLE", "DRAIN"}, "fan swap by ops"),
    ("NodeName=node01 State=MIXED+DRAIN Reason=provision: gpu.2.xid [root@2026-12-01T10:00:00]",
     {"MIXED", "DRAIN"}, "provision: gpu.2.xid"),
    ("NodeName=node01 State=DOWN+NOT_RESPONDING Reason=Not responding [slurm@2026-12-01T10:00:00]",
     {"DOWN", "NOT_RESPONDING"}, "Not responding"),
])
def test_parse_states_and_reason(text: str, states: set[str], reason: str) -> None:
    parsed = parse_node("node01", text)
    assert parsed.states == states and parsed.reason == reason


@pytest.mark.parametrize("text", ["", "Node node01 not found", "NodeName=node011 State=IDLE", "NodeName=node01 X=1"])
def test_parse_refuses_other_output(text: str) -> None:
    with pytest.raises(SlurmError, match="node01"):
        parse_node("node01", text)


# --- the plan (pure) ---------------------------------------------------------------------------------------

ON = SlurmSettings(drain_on_fail=True)
FAILING = report(("gpu.count", F), ("gpu.0.model", P), ("nvme.count", E))
HEALTHY = report(("gpu.count", P), ("t", W), ("w", V))


@pytest.mark.parametrize(("verdict", "state", "settings", "kind"), [
    (FAILING, node("IDLE"), ON, ActionKind.DRAIN),
    (FAILING, node("IDLE"), SlurmSettings(drain_on_fail=False), ActionKind.NONE),
    (FAILING, node("IDLE", "DRAIN", reason="operator: fan swap"), ON, ActionKind.NONE),  # not ours: kept
    (FAILING, node("IDLE", "DRAIN", reason="provision: gpu.count,nvme.count"), ON, ActionKind.NONE),  # same
    (FAILING, node("IDLE", "DRAIN", reason="provision: gpu.1.nvlink"), ON, ActionKind.DRAIN),  # new reason
    (report(error="node01: ssh failed"), node("IDLE"), ON, ActionKind.DRAIN),  # no facts: never healthy
    (report(("x", E)), node("ALLOCATED"), ON, ActionKind.DRAIN),  # could not be made: drains as a failure
    (HEALTHY, node("IDLE", "DRAIN", reason="provision: gpu.count"), ON, ActionKind.RESUME),
    (HEALTHY, node("IDLE", "DRAIN", reason="provision: gpu.count"), SlurmSettings(drain_on_fail=True,
                                                                                   resume_on_pass=False),
     ActionKind.NONE),
    (HEALTHY, node("IDLE", "DRAIN", reason="NHC: check_fs_mount"), ON, ActionKind.NONE),  # NHC's: kept
    (HEALTHY, node("IDLE"), ON, ActionKind.NONE),
])
def test_plan_table(verdict: NodeReport, state: SlurmNode, settings: SlurmSettings, kind: ActionKind) -> None:
    assert plan(verdict, state, settings).kind is kind


def test_drain_reason_names_failed_then_unmade_checks() -> None:
    assert drain_reason(FAILING) == "provision: gpu.count,nvme.count"
    assert drain_reason(report(error="unreachable")) == "provision: gather"


def test_drain_reason_is_cut_to_the_limit_with_a_count() -> None:
    many = report(*((f"gpu.{i}.nvlink_link_{j}", F) for i in range(8) for j in range(18)))
    reason = drain_reason(many)
    assert len(reason) <= MAX_REASON and reason.startswith("provision: gpu.0.nvlink_link_0,")
    shown = reason.removeprefix("provision: ").rsplit(" +", 1)[0].split(",")
    assert reason.endswith(f" +{144 - len(shown)} more") and len(shown) > 5
    assert drain_reason(many, limit=20) == "provision: +144 more"


# --- scontrol itself (a fake that records what it was given) ----------------------------------------------

FAKE = """#!/bin/sh
printf '%s\\n' "$*" >> "$(dirname "$0")/calls"
env > "$(dirname "$0")/env"
case "$*" in
  "-o show node "*) cat "$(dirname "$0")/state" ;;
  *update*state=resume*) [ -f "$(dirname "$0")/refuse" ] && { echo "slurm_update error: Invalid node state specified" >&2; exit 1; }
     sed -i 's/+DRAIN//; s/ Reason=.*//' "$(dirname "$0")/state" ;;
  *update*state=drain*) r=$(printf '%s' "$*" | sed 's/.*reason=//'); sed -i "s/State=\\([A-Z]*\\)/State=\\1+DRAIN/; s/\\$/ Reason=$r [root@now]/" "$(dirname "$0")/state" ;;
esac
"""


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    tool = tmp_path / "scontrol"
    tool.write_text(FAKE)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "state").write_text("NodeName=node01 Arch=x86_64 State=IDLE ThreadsPerCore=1\n")
    return tool


def calls(fake: Path) -> list[str]:
    return (fake.parent / "calls").read_text().splitlines()


def test_sync_drains_then_resumes_with_scontrol_argv(fake: Path) -> None:
    settings = SlurmSettings(drain_on_fail=True, scontrol=str(fake))
    assert sync(FAILING, settings).kind is ActionKind.DRAIN
    assert calls(fake)[-1] == "update nodename=node01 state=drain reason=provision: gpu.count,nvme.count"
    assert parse_node("node01", (fake.parent / "state").read_text()).reason == "provision: gpu.count,nvme.count"
    assert sync(FAILING, settings).kind is ActionKind.NONE  # already drained for these checks
    assert sync(HEALTHY, settings).kind is ActionKind.RESUME
    assert calls(fake)[-1] == "update nodename=node01 state=resume"
    assert not parse_node("node01", (fake.parent / "state").read_text()).drained


def test_refused_resume_already_in_effect_is_done_else_raised(fake: Path) -> None:
    settings = SlurmSettings(drain_on_fail=True, scontrol=str(fake))
    sync(FAILING, settings)
    (fake.parent / "refuse").write_text("")
    with pytest.raises(SlurmError, match="Invalid node state"):  # refused and still drained: an error
        sync(HEALTHY, settings)
    (fake.parent / "state").write_text("NodeName=node01 State=IDLE+DRAIN Reason=provision: x [root@now]\n")
    original = Scontrol.apply

    def resumed_meanwhile(self: Scontrol, action: object) -> None:
        (fake.parent / "state").write_text("NodeName=node01 State=IDLE\n")  # the node's own check was first
        original(self, action)  # type: ignore[arg-type]

    Scontrol.apply = resumed_meanwhile  # type: ignore[method-assign]
    try:
        assert sync(HEALTHY, settings).kind is ActionKind.RESUME
    finally:
        Scontrol.apply = original  # type: ignore[method-assign]


def test_scontrol_gets_slurm_variables_and_never_a_secret(fake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVISION_BMC_PASSWORD", "hunter2-secret")
    monkeypatch.setenv("ANSIBLE_VAULT_PASSWORD_FILE", "/root/vault")
    monkeypatch.setenv("SLURM_CONF", "/tmp/lab/slurm.conf")
    assert "PROVISION_BMC_PASSWORD" not in scontrol_env()
    Scontrol(str(fake)).show("node01")
    env = (fake.parent / "env").read_text()
    assert "SLURM_CONF=/tmp/lab/slurm.conf" in env
    assert "hunter2-secret" not in env and "ANSIBLE_VAULT" not in env


def test_missing_scontrol_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(SlurmError, match=r"cannot run .*/nope.*provision_slurm\.scontrol"):
        Scontrol(str(tmp_path / "nope")).show("node01")


# --- the controller hook, from the inventory ------------------------------------------------------------

def _inventory(tmp_path: Path, slurm: object) -> Path:
    """The project's inventory with `provision_slurm: slurm` added to node01's host_vars."""
    inv = tmp_path / "inv"
    (inv / "host_vars").mkdir(parents=True)
    (inv / "group_vars").symlink_to(ROOT / "inventory" / "group_vars")
    (tmp_path / "firmware").symlink_to(ROOT / "firmware")  # the profiles' images, relative to the inventory
    for src in (ROOT / "inventory" / "host_vars").iterdir():
        text = src.read_text()
        if src.stem == "node01":
            text = text.rstrip("\n") + "\n" + yaml.safe_dump({"provision_slurm": slurm})
        (inv / "host_vars" / src.name).write_text(text)
    (inv / "hosts.yml").write_text((ROOT / "inventory" / "hosts.yml").read_text())
    return inv / "hosts.yml"


def test_inventory_settings_drive_the_hook(tmp_path: Path, fake: Path) -> None:
    inventory = _inventory(tmp_path, {"drain_on_fail": True, "scontrol": str(fake), "node_name": "gpu-a01"})
    (fake.parent / "state").write_text("NodeName=gpu-a01 State=IDLE\n")
    host = load_fleet(inventory).select(["node01"])[0]
    assert host.slurm == SlurmSettings(drain_on_fail=True, scontrol=str(fake), node_name="gpu-a01")
    done: list[str] = []
    note = tell_slurm(host, FAILING, lambda action, do: (done.append(action.kind.value), do()))
    assert done == ["drain"] and not note.failed and "gpu-a01 drain" in note.text
    assert calls(fake)[-1].startswith("update nodename=gpu-a01 state=drain reason=provision: gpu.count")


def test_hook_off_or_unreachable(tmp_path: Path) -> None:
    host = load_fleet(_inventory(tmp_path, {"drain_on_fail": False})).select(["node01"])[0]
    assert tell_slurm(host, FAILING).text == ""
    broken = host.model_copy(update={"slurm": SlurmSettings(drain_on_fail=True, scontrol=str(tmp_path / "none"))})
    note = tell_slurm(broken, HEALTHY)
    assert note.failed and "could not be told" in note.text


@pytest.mark.parametrize(("value", "needle"), [
    ("yes", "provision_slurm: must be a mapping"),
    ({"drain_on_fial": True}, "provision_slurm.drain_on_fial: unknown key"),
    ({"timeout_s": 0}, "provision_slurm.timeout_s"),
])
def test_bad_settings_are_one_line_naming_host_and_key(tmp_path: Path, value: object, needle: str) -> None:
    from provision.errors import InventoryError

    with pytest.raises(InventoryError) as exc:
        load_fleet(_inventory(tmp_path, value))
    assert needle in str(exc.value) and "host node01" in str(exc.value) and "\n" not in str(exc.value)



# --- the bring-up verify stage --------------------------------------------------------------------------

def _stage_ctx(host: object, plan_only: bool) -> object:
    from provision.bringup.stage import StageContext

    return StageContext(host=host, journal=None, run_id=None, plan_only=plan_only)  # type: ignore[arg-type]


@pytest.mark.parametrize("plan_only", [True, False])
def test_verify_stage_tells_slurm_except_in_plan(tmp_path: Path, fake: Path, plan_only: bool,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from provision.bringup.options import BringupOptions
    from provision.bringup.stages.verify import VerifyStage
    from provision.errors import CheckFailed

    host = load_fleet(_inventory(tmp_path, {"drain_on_fail": True, "scontrol": str(fake)})).select(["node01"])[0]
    stage = VerifyStage(BringupOptions(inventory=tmp_path))
    monkeypatch.setattr(VerifyStage, "_verify", lambda self, ctx: FAILING)
    observed = stage.observe(_stage_ctx(host, plan_only))  # type: ignore[arg-type]
    with pytest.raises(CheckFailed) as exc:
        stage.plan(host, observed)
    drained = (fake.parent / "calls").exists() and any("state=drain" in c for c in calls(fake))
    assert drained is not plan_only
    assert ("slurm: node01 drain (unhealthy)" in str(exc.value)) is not plan_only


def test_verify_stage_fails_a_conformant_node_slurm_could_not_resume(tmp_path: Path) -> None:
    from provision.bringup.options import BringupOptions
    from provision.bringup.stages.verify import Verified, VerifyStage
    from provision.errors import CheckFailed
    from provision.scheduler.hooks import SlurmNote

    stage = VerifyStage(BringupOptions(inventory=tmp_path))
    host = load_fleet(_inventory(tmp_path, {"drain_on_fail": True})).select(["node01"])[0]
    assert "slurm: node01 resume" in stage.plan(host, Verified.of(HEALTHY, SlurmNote(text="slurm: node01 resume (x)"))).note
    with pytest.raises(CheckFailed, match="conformant; slurm: node01 could not be told"):
        stage.plan(host, Verified.of(HEALTHY, SlurmNote(text="slurm: node01 could not be told: boom", failed=True)))


def test_controller_verify_drains_a_node_it_could_not_check(tmp_path: Path, fake: Path) -> None:
    """`provision verify NODE` (what a campaign's gate.full_verify runs) with provision_slurm: a node whose
    facts could not be gathered is drained (`provision: gather`), never left healthy; exit stays 3."""
    import subprocess
    import sys

    inventory = _inventory(tmp_path, {"drain_on_fail": True, "scontrol": str(fake)})
    host_vars = inventory.parent / "host_vars" / "node01.yml"
    host_vars.write_text(host_vars.read_text().replace("node01.cluster.example.net", "127.0.0.1")
                         + "ansible_port: 1\n")  # nothing listens: ssh is refused at once
    proc = subprocess.run([sys.executable, "-c", "from provision.cli import run; run()", "verify", "node01",
                           "-i", str(inventory), "--level", "quick", "--no-bmc"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 3, proc.stderr
    assert calls(fake)[-1] == "update nodename=node01 state=drain reason=provision: gather"
    assert "slurm: node01 drain (unhealthy)" in proc.stderr
