"""`provision configure`: plan output, exit codes, one-line errors (tiny local project, no twins)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from provision.cli import main

PLAY = """---
- name: Tiny play
  hosts: all
  gather_facts: false
  tasks:
    - name: Write the marker file
      ansible.builtin.copy:
        dest: "{{ marker_dir }}/{{ inventory_hostname }}.txt"
        content: "configured\\n"
        mode: "0644"
    - name: Fail where asked
      ansible.builtin.fail:
        msg: "this node refuses: {{ inventory_hostname }}"
      when: refuse | default(false)
"""


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    root = tmp_path / "project"
    (root / "playbooks").mkdir(parents=True)
    (root / "roles").mkdir()
    (root / "ansible.cfg").write_text("[defaults]\n")
    (root / "playbooks" / "tiny.yml").write_text(PLAY)
    monkeypatch.setenv("PROVISION_PROJECT_DIR", str(root))
    marker_dir = tmp_path / "markers"
    marker_dir.mkdir()
    inv = tmp_path / "hosts.yml"
    common = f"ansible_connection: local, ansible_python_interpreter: {sys.executable}, marker_dir: {marker_dir}"
    inv.write_text(f"all:\n  hosts:\n    good: {{{common}}}\n    bad: {{{common}, refuse: true}}\n")
    return inv, marker_dir


def test_plan_changes_nothing_and_prints_the_change(setup: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    inv, markers = setup
    rc = main(["configure", "good", "-i", str(inv), "--playbook", "tiny", "--plan"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "1 change(s) would be made" in out and "good: Write the marker file" in out and "+configured" in out
    assert not (markers / "good.txt").exists()


def test_apply_then_converged(setup: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    inv, markers = setup
    assert main(["configure", "good", "-i", str(inv), "--playbook", "tiny", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["hosts"]["good"]["changed"] == 1 and (markers / "good.txt").read_text() == "configured\n"
    assert main(["configure", "good", "-i", str(inv), "--playbook", "tiny", "--plan"]) == 0
    assert "nothing to change (converged)" in capsys.readouterr().out


def test_failed_node_exits_1_with_one_line(setup: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    inv, markers = setup
    rc = main(["configure", "good", "bad", "-i", str(inv), "--playbook", "tiny"])
    err = capsys.readouterr().err
    assert rc == 1
    error_lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1
    assert "bad failed in task 'Fail where asked': this node refuses: bad" in error_lines[0]
    assert "Traceback" not in err
    assert (markers / "good.txt").exists()  # the healthy node was still configured


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nodeX"], "host pattern 'nodeX': 'nodeX' matches no host; known: good, bad"),
        (["good", "--limit", "!good"], "--limit '!good' leaves no host of 'good'"),
        (["good", "--strategy", "fast"], "--strategy: 'fast' is not one of linear, mitogen"),
        (["good", "--playbook", "nope"], "playbook 'nope' not found"),
    ],
)
def test_bad_input_exits_2(setup: tuple[Path, Path], capsys: pytest.CaptureFixture[str], args: list[str],
                           message: str) -> None:
    inv, _ = setup
    rc = main(["configure", *args, "-i", str(inv)])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err


def test_missing_inventory_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["configure", "node01", "-i", str(tmp_path / "none.yml")]) == 2
    assert "inventory path does not exist" in capsys.readouterr().err


def test_in_a_pipe_each_host_and_failing_task_is_a_line_on_stderr(setup: tuple[Path, Path],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    inv, _ = setup
    rc = main(["configure", "good", "bad", "-i", str(inv), "--playbook", "tiny"])
    err = capsys.readouterr().err.splitlines()
    assert rc == 1
    assert any(line.startswith("bad configure failed: Fail where asked") for line in err), err
    assert any(re.fullmatch(r"good configure ok \d+\.\ds: 1 changed, \d+ ok", line) for line in err), err
    assert any(re.fullmatch(r"bad configure failed \d+\.\ds: .*", line) for line in err), err


def test_the_recap_in_a_pipe_is_tab_separated_and_output_json_is_json(setup: tuple[Path, Path],
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    inv, _ = setup
    assert main(["configure", "good", "-i", str(inv), "--playbook", "tiny", "--plan"]) == 0
    lines = capsys.readouterr().out.splitlines()
    recap = lines.index("host\tok\twould change\tfailed\tunreachable\tskipped")
    assert re.fullmatch(r"good\t\d+\t1\t0\t0\t\d+", lines[recap + 1]) and lines[recap + 2:] == []
    assert "plan: 1 change(s) would be made" in lines[:recap]
    assert main(["configure", "good", "-i", str(inv), "--playbook", "tiny", "--plan", "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["hosts"]["good"]["changed"] == 1
