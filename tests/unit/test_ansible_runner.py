"""The ansible-runner wrapper against localhost (ansible_connection=local): result mapping, errors."""

from __future__ import annotations

import signal
import socket
import sys
import uuid
from pathlib import Path

import pytest

from provision.ansible import ProgressEvent, RunOptions, run_playbook
from provision.ansible.runner import PlayFailed
from provision.errors import AnsibleRunError, InputError

TINY = """---
- name: Tiny play
  hosts: all
  gather_facts: false
  tasks:
    - name: Write the marker file
      ansible.builtin.copy:
        dest: "{{ marker }}"
        content: "hello {{ inventory_hostname }}\\n"
        mode: "0644"
    - name: Read something without changing it
      ansible.builtin.command: "true"
      changed_when: false
    - name: Skip this one
      ansible.builtin.debug:
        msg: never
      when: false
    - name: Fail on request
      ansible.builtin.fail:
        msg: "asked to fail: {{ fail_reason }} {{ bmc_password | default('') }}"
      when: fail_reason is defined
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A throwaway project (ansible.cfg, playbooks/, roles/) the wrapper is pointed at."""
    root = tmp_path / "project"
    (root / "playbooks").mkdir(parents=True)
    (root / "roles").mkdir()
    (root / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = false\n")
    (root / "playbooks" / "tiny.yml").write_text(TINY)
    (root / "playbooks" / "broken.yml").write_text("---\n- name: Broken\n  hosts: all\n  tasks: [{{{\n")
    monkeypatch.setenv("PROVISION_PROJECT_DIR", str(root))
    return root


def _inventory(tmp_path: Path, hosts: dict[str, str]) -> Path:
    lines = ["all:", "  hosts:"]
    for name, extra in hosts.items():
        lines += [f"    {name}:", "      ansible_connection: local", f"      ansible_python_interpreter: {sys.executable}"]
        lines += [f"      {extra}"] if extra else []
    path = tmp_path / "inventory.yml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _options(inventory: Path, marker: Path, **kw: object) -> RunOptions:
    extravars = {"marker": str(marker), **kw.pop("extravars", {})}  # type: ignore[dict-item]
    return RunOptions(playbook="tiny", inventory=inventory, extravars=extravars, **kw)  # type: ignore[arg-type]


def test_success_maps_stats_and_changes(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "marker.txt"
    inv = _inventory(tmp_path, {"local1": ""})
    events: list[ProgressEvent] = []
    result = run_playbook(_options(inv, marker, diff=True), on_event=events.append)
    assert result.ok and result.status == "successful" and result.rc == 0
    stats = result.hosts["local1"]
    assert (stats.changed, stats.failed, stats.unreachable, stats.skipped) == (1, 0, 0, 2)
    assert stats.ok >= 2
    assert [c.task for c in result.changes] == ["Write the marker file"]
    assert "+hello local1" in result.changes[0].diff
    assert marker.read_text() == "hello local1\n"
    kinds = {(e.kind, e.name) for e in events}
    assert ("changed", "Write the marker file") in kinds and ("play", "Tiny play") in kinds


def test_the_process_signal_handlers_are_left_alone(project: Path, tmp_path: Path) -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    run_playbook(_options(_inventory(tmp_path, {"h1": ""}), tmp_path / "m"))
    assert {sig: signal.getsignal(sig) for sig in before} == before  # Ctrl-C still raises KeyboardInterrupt


def test_second_run_changes_nothing(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "marker.txt"
    inv = _inventory(tmp_path, {"local1": ""})
    run_playbook(_options(inv, marker))
    again = run_playbook(_options(inv, marker))
    assert again.hosts["local1"].changed == 0 and again.changes == []


def test_check_mode_reports_without_changing(project: Path, tmp_path: Path) -> None:
    marker = tmp_path / "marker.txt"
    inv = _inventory(tmp_path, {"local1": ""})
    result = run_playbook(_options(inv, marker, check=True))
    assert result.check and not marker.exists()
    assert [c.task for c in result.changes] == ["Write the marker file"]
    assert "+hello local1" in result.changes[0].diff  # check implies diff


def test_failure_raises_with_host_task_and_message(project: Path, tmp_path: Path) -> None:
    reason = f"reason-{uuid.uuid4().hex[:8]}"
    inv = _inventory(tmp_path, {"local1": "", "local2": ""})
    with pytest.raises(PlayFailed) as caught:
        run_playbook(_options(inv, tmp_path / "m-{{ inventory_hostname }}", extravars={"fail_reason": reason}))
    err = caught.value
    assert isinstance(err, AnsibleRunError) and err.exit_code == 1
    text = str(err)
    assert "local1 failed in task 'Fail on request'" in text and "local2 failed" in text and reason in text
    assert err.result.hosts["local1"].failed == 1 and err.result.status == "failed"
    assert {f.host for f in err.result.failures} == {"local1", "local2"}


def test_secrets_are_redacted_from_errors(project: Path, tmp_path: Path) -> None:
    secret = f"s3cr3t-{uuid.uuid4().hex}"
    inv = _inventory(tmp_path, {"local1": ""})
    with pytest.raises(PlayFailed) as caught:
        run_playbook(_options(inv, tmp_path / "m", extravars={"fail_reason": "x", "bmc_password": secret}))
    assert secret not in str(caught.value) and "<redacted>" in str(caught.value)
    assert all(secret not in f.msg for f in caught.value.result.failures)


def test_unreachable_host_is_named(project: Path, tmp_path: Path) -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    inv = tmp_path / "inventory.yml"
    inv.write_text(
        "all:\n  hosts:\n    gone:\n      ansible_host: 127.0.0.1\n"
        f"      ansible_port: {port}\n      ansible_ssh_common_args: -o ConnectTimeout=3\n"
    )
    with pytest.raises(PlayFailed) as caught:
        run_playbook(_options(inv, tmp_path / "m"))
    assert "gone unreachable" in str(caught.value)
    assert caught.value.result.hosts["gone"].unreachable == 1
    assert caught.value.result.failures[0].unreachable


def test_broken_playbook_fails_with_one_line(project: Path, tmp_path: Path) -> None:
    inv = _inventory(tmp_path, {"local1": ""})
    with pytest.raises(PlayFailed) as caught:
        run_playbook(RunOptions(playbook="broken", inventory=inv))
    assert "ansible run of broken failed" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_unknown_playbook_and_inventory_are_input_errors(project: Path, tmp_path: Path) -> None:
    inv = _inventory(tmp_path, {"local1": ""})
    with pytest.raises(InputError, match=r"playbook 'nope' not found.*known: broken, tiny"):
        run_playbook(RunOptions(playbook="nope", inventory=inv))
    with pytest.raises(InputError, match="inventory path does not exist"):
        run_playbook(RunOptions(playbook="tiny", inventory=tmp_path / "missing.yml"))


def test_mitogen_strategy_gives_the_same_result(project: Path, tmp_path: Path) -> None:
    pytest.importorskip("ansible_mitogen")
    marker = tmp_path / "marker.txt"
    inv = _inventory(tmp_path, {"local1": ""})
    first = run_playbook(_options(inv, marker, strategy="mitogen"))
    second = run_playbook(_options(inv, marker, strategy="mitogen"))
    assert first.hosts["local1"].changed == 1 and second.hosts["local1"].changed == 0
    assert marker.read_text() == "hello local1\n"


def test_mitogen_missing_is_a_clear_input_error(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ansible_mitogen", None)
    inv = _inventory(tmp_path, {"local1": ""})
    with pytest.raises(InputError, match=r"provision\[fast\]"):
        run_playbook(_options(inv, tmp_path / "m", strategy="mitogen"))
