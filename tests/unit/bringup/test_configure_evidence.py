"""The configure shortcut's evidence: the inputs' digest, the run's manifest, the node fingerprint, the record.

The fingerprint's shell runs here for real (`sh -s` on this machine stands in for the node's)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from provision.ansible import events
from provision.ansible import fingerprint as fp
from provision.ansible.inputs import LOCATION_VARS, HostVariables, content_digest, inputs_digest
from provision.ansible.project import project_dir
from provision.conformance.facts import NodeFacts, Section, gather
from provision.journal import Journal
from provision.journal.configured import configured, forget_configured, record_configured
from tests.conftest import EXAMPLE_INVENTORY


def _local(node: str, script: str) -> bytes:
    return subprocess.run(["sh", "-s"], input=script.encode(), capture_output=True, check=True, timeout=60).stdout


def _print(paths: list[Path], services: tuple[str, ...] = ()) -> str:
    manifest = {"file": [str(p) for p in paths], "service": list(services)}
    return fp.fingerprint(gather("node01", fp.probes(manifest), _local), manifest)


@pytest.mark.skipif(not Path("/usr/bin/dpkg-query").exists(), reason="needs dpkg-query (Debian)")
def test_fingerprint_follows_content_mode_type_and_absence(tmp_path: Path) -> None:
    conf, gone, odd = tmp_path / "a.conf", tmp_path / "gone", tmp_path / "it's here"
    conf.write_text("x = 1\n")
    odd.write_text("quoted\n")
    first = _print([conf, gone, odd])
    assert _print([conf, gone, odd]) == first  # nothing changed: the same
    conf.write_text("x = 2\n")
    assert _print([conf, gone, odd]) != first  # content
    conf.write_text("x = 1\n")
    assert _print([conf, gone, odd]) == first
    mode = conf.stat().st_mode & 0o777
    conf.chmod(0o600 if mode != 0o600 else 0o640)
    assert _print([conf, gone, odd]) != first  # mode
    conf.chmod(mode)
    assert _print([conf, gone, odd]) == first
    gone.mkdir()
    assert _print([conf, gone, odd]) != first  # a path the run left absent appeared


def _facts(**sections: tuple[int, str]) -> NodeFacts:
    return NodeFacts(node="node01", sections={
        fp.PREFIX + name: Section(name=fp.PREFIX + name, rc=rc, stdout=out, stderr="boom") for name, (rc, out) in
        sections.items()})


MANIFEST = {"file": ["/etc/x"], "service": ["chrony"]}
OK = {"packages": (0, "mdadm 4.2 hi\n"), "system": (0, "6.1.0\n"), "files": (0, "/etc/x file 644\n"),
      "services": (0, "chrony enabled active\n")}


def test_fingerprint_is_pure_and_sees_every_section() -> None:
    first = fp.fingerprint(_facts(**OK), MANIFEST)
    assert fp.fingerprint(_facts(**OK), MANIFEST) == first
    for name in OK:
        changed = dict(OK) | {name: (0, OK[name][1] + "more\n")}
        assert fp.fingerprint(_facts(**changed), MANIFEST) != first, name


@pytest.mark.parametrize("name", ["packages", "system", "files", "services"])
def test_a_failed_or_missing_probe_is_no_fingerprint(name: str) -> None:
    with pytest.raises(fp.FingerprintUnavailable, match=f"configure.{name}: exit 1"):
        fp.fingerprint(_facts(**(dict(OK) | {name: (1, OK[name][1])})), MANIFEST)
    with pytest.raises(fp.FingerprintUnavailable, match="not in the node's answer"):
        fp.fingerprint(_facts(**{k: v for k, v in OK.items() if k != name}), MANIFEST)


def test_probe_names_are_quoted_for_the_shell() -> None:
    files = next(p for p in fp.probes({"file": ["/etc/a b", "/etc/$(reboot)"]}) if p.name == "configure.files")
    assert "'/etc/a b'" in files.command and "'/etc/$(reboot)'" in files.command


def _ok(action: str, res: dict[str, Any]) -> dict[str, Any]:
    return {"event": "runner_on_ok", "event_data": {"host": "node01", "task_action": action, "res": res}}


def _args(**kw: str) -> dict[str, Any]:
    return {"invocation": {"module_args": kw}}


@pytest.mark.parametrize(("event", "expected"), [
    (_ok("ansible.builtin.template", _args(dest="/etc/sysctl.d/90-provision.conf", src="s.j2")),
     [("file", "/etc/sysctl.d/90-provision.conf")]),
    (_ok("ansible.builtin.file", _args(path="/etc/apt/keyrings", state="directory")), [("file", "/etc/apt/keyrings")]),
    (_ok("ansible.builtin.stat", _args(path="/proc/mdstat")), [("file", "/proc/mdstat")]),
    (_ok("ansible.builtin.systemd_service", _args(name="chrony", enabled="true")), [("service", "chrony")]),
    (_ok("ansible.builtin.copy", {"results": [_args(dest="/etc/a"), _args(dest="/etc/b")]}),
     [("file", "/etc/a"), ("file", "/etc/b")]),
    (_ok("ansible.builtin.command", _args(_raw_params="zpool status")), []),
    (_ok("ansible.builtin.template", _args(dest="relative/path")), []),
    (_ok("ansible.builtin.copy", {"_ansible_no_log": True}), []),  # no_log: no arguments shown, nothing taken
    ({"event": "runner_on_failed", "event_data": {"task_action": "copy", "res": _args(dest="/etc/a")}}, []),
])
def test_managed_objects_from_events(event: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert events.managed(event) == expected


def test_content_digest_follows_bytes_and_the_exec_bit(tmp_path: Path) -> None:
    (tmp_path / "roles" / "base" / "tasks").mkdir(parents=True)
    (tmp_path / "playbooks").mkdir()
    task = tmp_path / "roles" / "base" / "tasks" / "main.yml"
    task.write_text("---\n")
    first = content_digest(tmp_path)
    task.write_text("--- \n")
    second = content_digest(tmp_path)
    task.chmod(0o755)
    third = content_digest(tmp_path)
    assert len({first, second, third}) == 3
    (tmp_path / "roles" / "base" / "__pycache__").mkdir()  # what Python leaves behind is not content
    (tmp_path / "roles" / "base" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (tmp_path / "roles" / "base" / "__pycache__" / "x.cpython-312.pyc.140234").write_bytes(b"\0")  # mid-write
    (tmp_path / "roles" / "base" / "filter.pyc").write_bytes(b"\0")
    (tmp_path / "playbooks" / ".git").mkdir()
    (tmp_path / "playbooks" / ".git" / "HEAD").write_text("ref: x\n")
    assert content_digest(tmp_path) == third
    (tmp_path / "playbooks" / "site.yml").write_text("---\n")  # a new file, ansible.cfg, a rename: content
    fourth = content_digest(tmp_path)
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    fifth = content_digest(tmp_path)
    (tmp_path / "playbooks" / "site.yml").rename(tmp_path / "playbooks" / "main.yml")
    assert len({third, fourth, fifth, content_digest(tmp_path)}) == 4


def test_inputs_digest_follows_variables_versions_and_ansible_environment() -> None:
    base = inputs_digest({"a": 1}, "c", environ={})
    assert inputs_digest({"a": 1}, "c", environ={"HOME": "/x"}) == base
    assert len({base, inputs_digest({"a": 2}, "c", environ={}), inputs_digest({"a": 1}, "c2", environ={}),
                inputs_digest({"a": 1}, "c", environ={"ANSIBLE_STRATEGY": "free"})}) == 4


def test_host_variables_are_templated_and_leave_locations_out() -> None:
    found = HostVariables(EXAMPLE_INVENTORY / "hosts.yml").of("node01")
    assert isinstance(found["provision_spec"], dict) and found["provision_spec"]["gpu"]  # the lookup, resolved
    assert "node01" in found["inventory_hostname"] and found["group_names"]
    assert not LOCATION_VARS & set(found)


def test_the_roles_read_no_other_hosts_variables() -> None:
    """The digest leaves out `groups` and has no `hostvars`: true only while no role or playbook reads them."""
    root = project_dir()
    pattern = re.compile(r"\bhostvars\b|\bgroups\s*\[|\bgroups\b\s*\||lookup\(\s*['\"](ansible\.builtin\.)?"
                         r"(pipe|env|url|file)['\"]")
    offenders = [str(p.relative_to(root)) for top in ("roles", "playbooks") for p in (root / top).rglob("*")
                 if p.is_file() and p.suffix in (".yml", ".yaml", ".j2") and pattern.search(p.read_text())]
    assert offenders == []


def test_record_round_trip_and_forget(tmp_path: Path) -> None:
    with Journal(tmp_path / "j.db") as journal:
        assert configured(journal, "node01") is None
        record_configured(journal, "node01", 3, "d", {"file": ["/etc/x"], "service": []}, "f")
        record_configured(journal, "node01", 4, "d2", {"file": [], "service": ["chrony"]}, "f2")  # replaces
        found = configured(journal, "node01")
        assert found is not None and (found.run_id, found.digest, found.fingerprint) == (4, "d2", "f2")
        assert found.manifest == {"file": [], "service": ["chrony"]}
        forget_configured(journal, "node01")
        assert configured(journal, "node01") is None
    assert os.stat(tmp_path / "j.db").st_size > 0
