"""The configure stage end to end over fakes (no node, no Ansible): when check mode runs, what is recorded.

Apply forgets the record before site.yml runs and writes it only after a successful run whose node
fingerprint could be read; observe takes the shortcut only when that record, the digest and the probe agree."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from provision.ansible.models import Managed, PlayResult, RunOptions
from provision.ansible.runner import PlayFailed
from provision.bringup.engine import run_bringup
from provision.bringup.model import Outcome
from provision.bringup.options import BringupOptions
from provision.bringup.stages import configure as stage_mod
from provision.bringup.stages.configure import ConfigureStage
from provision.conformance.facts import GatherError, NodeFacts, Probe, Section
from provision.journal import Journal
from provision.journal.configured import configured, record_configured
from provision.spec import HostEntry


class FakeNode:
    """What gather and ansible-runner would meet: sections by probe name, check-mode results, failures."""

    def __init__(self) -> None:
        self.files = "/etc/x file 644 root:root\nabc  /etc/x\n"
        self.unreachable = False
        self.gathers: list[list[str]] = []
        self.runs: list[RunOptions] = []
        self.fail_apply = False
        self.inputs = {"a": 1}

    def gather(self, node: str, probes: list[Probe], runner: Any) -> NodeFacts:
        self.gathers.append([p.name for p in probes])
        if self.unreachable:
            raise GatherError(f"{node}: ssh root@10.0.0.1:22 failed: Connection refused")
        out = {"configure.packages": "mdadm 4.2 hi\n", "configure.system": "6.1.0\n",
               "configure.files": self.files, "configure.services": "chrony enabled active\n"}
        return NodeFacts(node=node, sections={
            p.name: Section(name=p.name, rc=0, stdout=out.get(p.name, ""), stderr="") for p in probes})

    def run_playbook(self, options: RunOptions) -> PlayResult:
        self.runs.append(options)
        if not options.check and self.fail_apply:
            result = PlayResult(status="failed", rc=2)
            raise PlayFailed("ansible run of site.yml failed on 1 host(s)", result)
        managed = [Managed(host="node01", kind="file", name="/etc/x"),
                   Managed(host="node01", kind="service", name="chrony")]
        return PlayResult(status="successful", rc=0, check=options.check, managed=[] if options.check else managed)


@pytest.fixture
def node(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeNode]:
    fake = FakeNode()
    monkeypatch.setattr(stage_mod, "gather", fake.gather)
    monkeypatch.setattr(stage_mod, "run_playbook", fake.run_playbook)
    monkeypatch.setattr(stage_mod, "ssh_runner_for", lambda level: lambda host: None)
    monkeypatch.setattr(stage_mod, "quick_failing", lambda host, facts: ((), 9))
    monkeypatch.setattr(stage_mod, "content_digest", lambda root: "content")
    monkeypatch.setattr(stage_mod.HostVariables, "of", lambda self, host: fake.inputs)
    yield fake


def _run(host: HostEntry, journal: Journal, recheck: bool = False) -> tuple[Outcome, str]:
    opts = BringupOptions(inventory=Path("inventory/hosts.yml"), recheck=recheck)
    result = run_bringup([host], [ConfigureStage(opts)], journal=journal)
    stage = result.nodes[0].stages[0]
    return stage.outcome, stage.error or stage.plan.note


def _checks(fake: FakeNode) -> int:
    return sum(1 for r in fake.runs if r.check)


def test_first_run_applies_and_records_then_rerun_skips_check_mode(
        make_host: Callable[..., HostEntry], node: FakeNode, tmp_path: Path) -> None:
    host = make_host()
    with Journal(tmp_path / "j.db") as journal:
        assert _run(host, journal)[0] is Outcome.APPLIED  # never configured: a full run, no check mode
        record = configured(journal, host.name)
        assert record is not None and record.manifest == {"file": ["/etc/x"], "service": ["chrony"]}
        assert _checks(node) == 0
        outcome, note = _run(host, journal)
        assert (outcome, _checks(node)) == (Outcome.CONVERGED, 0) and "unchanged since run" in note
        assert any("configure.files" in names for names in node.gathers)


@pytest.mark.parametrize(("change", "why"), [
    (lambda fake: setattr(fake, "files", "/etc/x file 600 root:root\nabc  /etc/x\n"), "the node changed"),
    (lambda fake: setattr(fake, "unreachable", True), "could not be made: node01: ssh"),
    (lambda fake: setattr(fake, "inputs", {"a": 2}), "inputs changed"),
])
def test_any_doubt_runs_check_mode(make_host: Callable[..., HostEntry], node: FakeNode, tmp_path: Path,
                                   change: Callable[[FakeNode], None], why: str) -> None:
    host = make_host()
    with Journal(tmp_path / "j.db") as journal:
        _run(host, journal)
        change(node)
        outcome, note = _run(host, journal)
        assert (outcome, _checks(node)) == (Outcome.CONVERGED, 1) and why in note
        node.unreachable = False
        # check mode found nothing to change: its evidence was recorded, so the next run needs none
        outcome, note = _run(host, journal)
        assert (outcome, _checks(node)) == (Outcome.CONVERGED, 1) and "unchanged since run" in note


def test_recheck_runs_check_mode_without_probing(make_host: Callable[..., HostEntry], node: FakeNode,
                                                 tmp_path: Path) -> None:
    host = make_host()
    with Journal(tmp_path / "j.db") as journal:
        _run(host, journal)
        probes = len(node.gathers)
        outcome, note = _run(host, journal, recheck=True)
        assert (outcome, _checks(node)) == (Outcome.CONVERGED, 1) and "--recheck" in note
        # no shortcut probe: only the fingerprint taken after check mode, to refresh the record
        assert [all(n.startswith("configure.") for n in names) for names in node.gathers[probes:]] == [True]
        record = configured(journal, host.name)
        assert record is not None and record.run_id == 2


def test_a_failed_apply_leaves_no_record(make_host: Callable[..., HostEntry], node: FakeNode, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    host = make_host()
    with Journal(tmp_path / "j.db") as journal:
        record_configured(journal, host.name, 1, "stale", {"file": []}, "f")  # from an earlier apply
        journal.action_finished(journal.action_started(journal.start_run("bringup", "node01"), "node01",
                                                       "configure", "ansible", "site.yml"), "ok")
        node.inputs = {"a": 3}  # inputs changed: check mode plans, apply runs and fails
        node.fail_apply = True
        monkeypatch.setattr(stage_mod, "run_playbook", _with_a_change(node.run_playbook))
        outcome, error = _run(host, journal)
        assert outcome is Outcome.FAILED and "failed on 1 host" in error
        assert configured(journal, host.name) is None


def _with_a_change(run: Callable[[RunOptions], PlayResult]) -> Callable[[RunOptions], PlayResult]:
    from provision.ansible.models import Change

    def wrapped(options: RunOptions) -> PlayResult:
        result = run(options)
        if options.check:
            return result.model_copy(update={"changes": [Change(host="node01", task="base : Write the sysctls")]})
        return result

    return wrapped


def test_no_record_when_the_fingerprint_after_apply_cannot_be_read(
        make_host: Callable[..., HostEntry], node: FakeNode, tmp_path: Path) -> None:
    host = make_host()
    with Journal(tmp_path / "j.db") as journal:
        node.unreachable = True
        assert _run(host, journal)[0] is Outcome.APPLIED
        assert configured(journal, host.name) is None
        node.unreachable = False
        outcome, note = _run(host, journal)  # no record: check mode, never the shortcut
        assert (outcome, _checks(node)) == (Outcome.CONVERGED, 1) and "no record" in note
