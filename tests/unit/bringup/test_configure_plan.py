"""The configure stage's decision and plan as tables: when check mode runs, and what is planned.

The shortcut (no check mode) needs all of: a record of a successful apply, the same inputs' digest, a node
probe that answered, a matching fingerprint and no failing quick check; and no --recheck."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from provision.ansible.models import Change, Managed, PlayResult
from provision.bringup.options import BringupOptions
from provision.bringup.stages.configure import (
    ConfigureObserved,
    ConfigureStage,
    NodeProbe,
    RecordAction,
    refused_before_probe,
    shortcut_refused,
)
from provision.errors import ProvisionError
from provision.journal.configured import ConfiguredRecord
from provision.spec import HostEntry

OPTS = BringupOptions(inventory=Path("inventory/hosts.yml"))
RECORD = ConfiguredRecord(node="node01", run_id=7, digest="d1", manifest={"file": ["/etc/x"], "service": []},
                          fingerprint="f1", recorded_at=0.0)
GOOD = NodeProbe(fingerprint="f1", passed=12)


def _seen(**kw: object) -> ConfigureObserved:
    base: dict[str, object] = {"digest": "d1", "record": RECORD, "probe": GOOD}
    return ConfigureObserved.model_validate(base | kw)


@pytest.mark.parametrize(("seen", "before", "why"), [
    (_seen(), None, None),  # everything matches: converged without check mode
    (_seen(recheck=True), "--recheck", "--recheck"),
    (_seen(digest="d2"), "inputs changed", "inputs changed"),  # digest different
    (_seen(digest="", digest_error="inventory: host node01: bad"), "could not be digested", "could not be digested"),
    (_seen(record=None), "no record", "no record"),  # digest missing from the journal
    (_seen(probe=None), None, "not probed"),
    (_seen(probe=NodeProbe(error="ssh failed: Connection refused")), None, "could not be made: ssh failed"),
    # an error never counts as converged, whatever fingerprint it carries
    (_seen(probe=NodeProbe(fingerprint="f1", error="configure.files: exit 1")), None, "could not be made"),
    (_seen(probe=NodeProbe(fingerprint="f2")), None, "node changed since run 7"),
    (_seen(probe=NodeProbe(fingerprint="f1", failing=("zfs.pool", "nvidia.driver"))), None,
     "2 quick check(s) do not pass: zfs.pool, nvidia.driver"),
])
def test_shortcut_decision(seen: ConfigureObserved, before: str | None, why: str | None) -> None:
    found_before = refused_before_probe(seen)
    found = shortcut_refused(seen)
    assert (found_before is None) == (before is None) and (before is None or before in str(found_before))
    assert (found is None) == (why is None) and (why is None or why in str(found))


def _host(make_host: Callable[..., HostEntry]) -> HostEntry:
    return make_host()


CHANGED = PlayResult(status="successful", rc=0, check=True, changes=[
    Change(host="node01", task="base : Write the sysctls"), Change(host="node02", task="other node's change")])
QUIET = PlayResult(status="successful", rc=0, check=True)
RECORDED = "record site.yml: the inputs' digest and the node's fingerprint, for the next run"


@pytest.mark.parametrize(("seen", "actions", "note"), [
    (ConfigureObserved(configured_before=False), ["ansible site.yml: full run"], "never configured"),
    (_seen(), [], "unchanged since run 7: same inputs, node fingerprint matches, 12 quick checks without a failure"),
    # converged by check mode: only bookkeeping, the evidence recorded for the next run
    (_seen(recheck=True, check=QUIET), [RECORDED], "check mode (--recheck given): OS matches site.yml"),
    (_seen(probe=NodeProbe(error="x"), check=QUIET), [RECORDED], "check mode (the node probe could not be made: x)"),
    (_seen(digest="", digest_error="bad", check=QUIET), [], "check mode (inputs could not be digested: bad)"),
    (_seen(digest="d2", check=CHANGED), ["ansible base : Write the sysctls"], "inputs changed"),
    (_seen(record=None, check_error="ansible run failed"), ["ansible site.yml: full run"],
     "check mode could not predict the run: ansible run failed"),
])
def test_configure_plan(make_host: Callable[..., HostEntry], seen: ConfigureObserved, actions: list[str],
                        note: str) -> None:
    stage = ConfigureStage(OPTS)
    plan = stage.plan(_host(make_host), seen)
    assert [a.describe() for a in plan.actions] == actions
    assert note in plan.note
    assert stage.plan(_host(make_host), seen) == plan  # pure: same observation, same plan
    assert plan.converged == (not actions or actions == [RECORDED])


def test_a_recorded_check_keeps_what_the_last_apply_managed(make_host: Callable[..., HostEntry]) -> None:
    seen = _seen(digest="d2", check=QUIET.model_copy(update={"managed": [
        Managed(host="node01", kind="file", name="/etc/y"), Managed(host="node02", kind="file", name="/etc/z")]}))
    (action,) = ConfigureStage(OPTS).plan(_host(make_host), seen).actions
    assert isinstance(action, RecordAction) and action.digest == "d2" and not action.changes_node
    assert action.manifest == {"file": ["/etc/x", "/etc/y"], "service": []}


def test_plan_refuses_a_state_where_check_mode_was_needed_and_not_run(make_host: Callable[..., HostEntry]) -> None:
    with pytest.raises(ProvisionError, match=r"check mode is needed .*inputs changed"):
        ConfigureStage(OPTS).plan(_host(make_host), _seen(digest="d2"))


def test_quick_checks_on_a_node_that_answered_nothing_never_pass(make_host: Callable[..., HostEntry]) -> None:
    from provision.bringup.stages.configure import quick_failing
    from provision.conformance.facts import NodeFacts

    failing, passed = quick_failing(_host(make_host), NodeFacts(node="node01", sections={}))
    assert failing and passed == 0
