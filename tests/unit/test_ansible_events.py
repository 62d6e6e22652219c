"""Pure mapping of ansible-runner events to typed changes, failures and progress (tables)."""

from __future__ import annotations

from typing import Any

import pytest

from provision.ansible import events
from provision.ansible.models import HostStats, PlayResult
from provision.ansible.runner import _host_stats, failure_message


def _ev(name: str, **data: Any) -> dict[str, Any]:
    return {"event": name, "event_data": {"host": "node01", "task": "Do it", **data}}


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        (_ev("runner_on_ok", res={"changed": False}), "ok"),
        (_ev("runner_on_ok", res={"changed": True}), "changed"),
        (_ev("runner_on_failed", res={}), "failed"),
        (_ev("runner_on_failed", res={}, ignore_errors=True), "ok"),
        (_ev("runner_on_unreachable", res={}), "unreachable"),
        (_ev("runner_on_skipped"), "skipped"),
        ({"event": "playbook_on_task_start", "event_data": {"task": "Do it"}}, "task"),
        ({"event": "playbook_on_play_start", "event_data": {"play": "Play"}}, "play"),
    ],
)
def test_progress_kind(event: dict[str, Any], kind: str) -> None:
    step = events.progress(event)
    assert step is not None and step.kind == kind


def test_progress_ignores_other_events() -> None:
    assert events.progress({"event": "verbose", "event_data": {}}) is None


def test_change_only_for_changed_ok_results() -> None:
    assert events.change(_ev("runner_on_ok", res={"changed": False})) is None
    assert events.change(_ev("runner_on_failed", res={"changed": True})) is None
    found = events.change(_ev("runner_on_ok", res={"changed": True}))
    assert found is not None and (found.host, found.task, found.diff) == ("node01", "Do it", "")


def test_change_of_a_report_task_carries_its_message() -> None:
    found = events.change(_ev("runner_on_ok", task_action="ansible.builtin.debug",
                              res={"changed": True, "msg": "would run: zpool create scratch"}))
    assert found is not None and found.diff == "would run: zpool create scratch\n"
    other = events.change(_ev("runner_on_ok", task_action="ansible.builtin.command", res={"changed": True, "msg": "x"}))
    assert other is not None and other.diff == ""


@pytest.mark.parametrize(
    ("diff", "expected"),
    [
        ({"before": "a\n", "after": "b\n", "before_header": "/etc/x", "after_header": "/etc/x"},
         ["--- /etc/x", "+++ /etc/x", "-a", "+b"]),
        ([{"before": "", "after": "new\n"}], ["+new"]),
        ({"prepared": "would run: zpool create scratch"}, ["would run: zpool create scratch"]),
        ({"before": {"state": "absent"}, "after": {"state": "directory"}}, ["-state: absent", "+state: directory"]),
    ],
)
def test_render_diff(diff: Any, expected: list[str]) -> None:
    lines = events.render_diff(diff).splitlines()
    for line in expected:
        assert line in lines


def test_change_collects_loop_item_diffs() -> None:
    res = {"changed": True, "results": [
        {"changed": True, "diff": {"before": "", "after": "one\n"}},
        {"changed": False, "diff": {"before": "", "after": "unchanged\n"}},
    ]}
    found = events.change(_ev("runner_on_ok", res=res))
    assert found is not None and "+one" in found.diff and "unchanged" not in found.diff


@pytest.mark.parametrize(
    ("res", "message"),
    [
        ({"msg": "plain"}, "plain"),
        ({"msg": "One or more items failed", "results": [{"failed": False}, {"failed": True, "msg": "item 2"}]},
         "item 2"),
        ({"stderr": "E: Version '9.9' for 'x' was not found"}, "E: Version '9.9' for 'x' was not found"),
        ({"_ansible_no_log": True, "msg": "secret"}, "(output hidden by no_log)"),
        ({}, "failed without a message"),
        ({"msg": "multi\n  line\tmessage"}, "multi line message"),
    ],
)
def test_result_message(res: dict[str, Any], message: str) -> None:
    assert events.result_message(res) == message


def test_long_messages_are_cut() -> None:
    assert len(events.result_message({"msg": "x" * 5000})) == 400


def test_failure_is_redacted_and_skips_ignored_errors() -> None:
    failed = events.failure(_ev("runner_on_failed", res={"msg": "pw hunter2 rejected"}), ("hunter2",))
    assert failed is not None and failed.msg == "pw <redacted> rejected" and not failed.unreachable
    assert events.failure(_ev("runner_on_failed", res={"msg": "x"}, ignore_errors=True)) is None
    gone = events.failure(_ev("runner_on_unreachable", res={"msg": "ssh: connect refused"}))
    assert gone is not None and gone.unreachable


def test_host_stats_from_recap() -> None:
    recap = {"ok": {"a": 5, "b": 3}, "changed": {"a": 2}, "failures": {"b": 1}, "dark": {}, "skipped": {"a": 1},
             "processed": {"a": 1, "b": 1, "c": 1}}
    stats = _host_stats(recap)
    assert stats == {
        "a": HostStats(ok=5, changed=2, skipped=1),
        "b": HostStats(ok=3, failed=1),
        "c": HostStats(),
    }


def test_failure_message_names_first_failure_per_host() -> None:
    result = PlayResult.model_validate({
        "status": "failed", "rc": 2,
        "failures": [
            {"host": "n1", "task": "T1", "msg": "first"},
            {"host": "n1", "task": "T2", "msg": "second"},
            {"host": "n2", "task": "T0", "msg": "down", "unreachable": True},
        ],
    })
    text = failure_message("site", result)
    assert text == ("ansible run of site failed on 2 host(s): n1 failed in task 'T1': first; "
                    "n2 unreachable in task 'T0': down")
    assert failure_message("site", PlayResult(status="timeout", rc=-1)) == "ansible run of site timed out"
