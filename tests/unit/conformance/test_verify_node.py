"""One verify_node: the inventory's waivers meet every result once (node side, BMC side, the phases across nodes),
a waiver never makes a failure or a check that could not be made read as a pass, and the CLI, the bring-up's
verify stage and `verify --local` all verify a node through it."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from provision.bringup.options import BringupOptions
from provision.bringup.stages.verify import VerifyStage
from provision.cli import main
from provision.conformance import bmc_source, node, runner
from provision.conformance.bmc_source import HeldSession, NoBmc, OwnSession
from provision.conformance.model import CheckResult, Level, NodeReport, Outcome
from provision.errors import ProvisionError
from provision.scheduler.local import BMC_WAIVED, LocalTarget, verify_local
from provision.spec.fleet import BmcEndpoint, HostEntry, LabDeclaration, SshEndpoint, Waiver
from tests.conftest import EXAMPLE_INVENTORY
from tests.unit.conformance.helpers import framed, spec
from tests.unit.parsers._fixtures import H100_590, section

MOUNT = {"name": "ckpt", "server": "10.0.0.5", "export": "/export/ckpt", "mountpoint": "/mnt/ckpt",
         "options": "vers=4.2,hard,nconnect=8", "min_free_gib": 100, "shared": True}
SUPER = "rw,vers=4.2,rsize=1048576,wsize=1048576,namlen=255,hard,proto=tcp,nconnect=8,timeo=600,retrans=2,sec=sys"
NFS_OUT = ("mounted=yes\nfstype=nfs4\nsource=10.0.0.5:/export/ckpt\nmount_options=rw,relatime\n"
           f"super_options={SUPER}\nfree_bytes={1 << 40}\nwritten_sha={'ab' * 32}\nwritten_bytes=1048576\n"
           f"read_sha={'ab' * 32}\nread_bytes=1048576\nread_mode=direct\nkept=keep-abab.bin\n")
ANSWERS = {"nvidia_smi_q": (0, section(H100_590, "nvidia-smi -q", exact=True), ""), "nfs.ckpt": (0, NFS_OUT, "")}
P, W, V, E, F = Outcome.PASS, Outcome.WARN, Outcome.WAIVED, Outcome.ERROR, Outcome.FAIL


def host(waivers: Sequence[Waiver] = ()) -> HostEntry:
    return HostEntry(name="n1", profile="ml_prod_v4", groups=(), spec=spec(nfs_mounts=[MOUNT]),
                     bmc=BmcEndpoint(address="https://10.0.0.9", username="u", password="p"),  # type: ignore[arg-type]
                     ssh=SshEndpoint(host="10.0.1.1"), lab=LabDeclaration(waivers=tuple(waivers)))


def answering(h: object) -> Any:
    """A node that answers the gather from ANSWERS (anything else: command not found) and the NFS read-back."""
    def run(_node: str, script: str) -> bytes:
        return framed({n: ANSWERS.get(n, (127, "", "not found")) for n in re.findall(r"^_run (\S+) ", script, re.M)})
    return run


@pytest.fixture
def unreadable_bmc(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_host: object, insecure: bool = False) -> None:
        raise ProvisionError("https://10.0.0.9: connection refused")

    monkeypatch.setattr(bmc_source, "read_bmc", refuse)


def verified(waivers: Sequence[Waiver] = ()) -> NodeReport:
    return node.verify_node(host(waivers), Level.FULL, node.Reach(runner_for=answering, bmc=OwnSession()))


# (check id, its outcome with no waiver, from where, the waiver's pattern)
CASES = [
    ("gpu.count", F, "node side: a failure", "gpu.count"),
    ("cpu.model", E, "node side: could not be made", "cpu.*"),
    ("bmc.psu", E, "BMC side: the BMC could not be read", "bmc.psu"),
    ("nfs.ckpt.mounted", P, "node side: a pass", "nfs.ckpt.mounted"),
    ("nfs.ckpt.cross_node", V, "across nodes: waived by the phase (one node on the export)", "nfs.ckpt.*"),
]


@pytest.mark.parametrize(("check", "before", "where", "pattern"), CASES, ids=[c[0] for c in CASES])
def test_a_waiver_makes_its_checks_waived_never_passed_and_leaves_the_others(
        check: str, before: Outcome, where: str, pattern: str, unreadable_bmc: None) -> None:
    plain = {r.id: r for r in verified().results}
    assert plain[check].outcome is before, where  # the table describes what the node really gives
    waiver = Waiver(pattern=pattern, reason="a twin has none")
    waived = {r.id: r for r in verified([waiver]).results}
    assert set(waived) == set(plain)
    got = waived[check]
    assert got.outcome is V and got.found == plain[check].found  # what was found is kept, the verdict is waived
    if before is V:  # waived by the run itself: its own reason stands
        assert got.detail == plain[check].detail
    else:
        assert got.detail == f"waived by the inventory (provision_lab_waivers {pattern}): a twin has none"
    matched = {i for i in plain if re.fullmatch(pattern.replace(".", r"\.").replace("*", ".*"), i)}
    assert {i for i, r in waived.items() if r.outcome is not plain[i].outcome} == {
        i for i in matched if plain[i].outcome is not V}
    assert not [i for i, r in waived.items() if r.outcome is P and plain[i].outcome is not P]


def test_each_result_meets_the_waivers_exactly_once(unreadable_bmc: None, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: Counter[str] = Counter()
    apply = runner.apply_waivers

    def counted(results: Sequence[CheckResult], waivers: Sequence[Waiver]) -> list[CheckResult]:
        seen.update(r.id for r in results)
        return apply(results, waivers)

    monkeypatch.setattr(runner, "apply_waivers", counted)
    report = verified([Waiver(pattern="*", reason="all")])
    areas = {r.area for r in report.results}
    assert {"gpu", "bmc", "nfs"} <= areas  # node side, BMC side and the phase across nodes all came through
    assert seen and set(seen) == {r.id for r in report.results} and set(seen.values()) == {1}


def test_a_fleet_applies_the_waivers_once_too(unreadable_bmc: None, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: Counter[str] = Counter()
    apply = runner.apply_waivers

    def counted(results: Sequence[CheckResult], waivers: Sequence[Waiver]) -> list[CheckResult]:
        seen.update(f"{r.node}/{r.id}" for r in results)
        return apply(results, waivers)

    monkeypatch.setattr(runner, "apply_waivers", counted)
    two = [host(), host().model_copy(update={"name": "n2", "ssh": SshEndpoint(host="10.0.1.2")})]
    run = node.verify(two, Level.FULL, node.Reach(runner_for=answering, bmc=OwnSession()))
    assert [r.id for r in run.nodes[0].results if r.id.endswith("cross_node")] == ["nfs.ckpt.cross_node"]
    assert set(seen) == {f"{n.node}/{r.id}" for n in run.nodes for r in n.results} and set(seen.values()) == {1}


# ---- every caller goes through verify_node ----------------------------------------------------------------
@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Level, node.Reach]]:
    """verify_node replaced by a spy answering a passing report; the calls it heard."""
    heard: list[tuple[str, Level, node.Reach]] = []

    def spy(target: Any, level: Level, reach: node.Reach | None = None, **_: Any) -> NodeReport:
        assert reach is not None
        heard.append((target.name, level, reach))
        return NodeReport(node=target.name, profile=target.profile)

    monkeypatch.setattr(node, "verify_node", spy)
    monkeypatch.setattr(node, "ssh_runner_for", lambda level: answering)
    return heard


def test_the_cli_verifies_each_node_through_verify_node(calls: list[tuple[str, Level, node.Reach]]) -> None:
    assert main(["verify", "node01", "node02", "-i", str(EXAMPLE_INVENTORY / "hosts.yml"), "--no-bmc",
                 "--output", "plain"]) == 0
    assert [(name, level) for name, level, _ in calls] == [("node01", Level.FULL), ("node02", Level.FULL)]
    assert all(r.bmc == NoBmc("BMC checks turned off (--no-bmc)") for _, _, r in calls)


def test_the_bringup_verify_stage_verifies_through_verify_node(calls: list[tuple[str, Level, node.Reach]]) -> None:
    stage = VerifyStage(BringupOptions(inventory=Path("inventory/hosts.yml")))
    ctx = SimpleNamespace(host=host(), journal=None, run_id=None, plan_only=True)
    observed = stage.observe(ctx)  # type: ignore[arg-type]
    assert observed.node == "n1" and [(n, lv) for n, lv, _ in calls] == [("n1", Level(stage.opts.verify_level))]
    assert isinstance(calls[0][2].bmc, HeldSession)  # over the bring-up's one session


def test_verify_local_verifies_through_verify_node(calls: list[tuple[str, Level, node.Reach]]) -> None:
    target = LocalTarget(name="n1", profile="ml_prod_v4", spec=spec())
    report = verify_local(target, Level.QUICK, runner=answering(None))
    assert report.node == "n1" and [(n, lv) for n, lv, _ in calls] == [("n1", Level.QUICK)]
    assert calls[0][2].bmc == NoBmc(BMC_WAIVED)
