"""`provision verify --local`: the same gather script run here through `sh -s`, the node's spec from the
inventory or from `provision spec export`, NHC's exit codes, and `--drain` telling a (fake) scontrol."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from provision.conformance.facts import Probe, build_script, split_sections
from provision.conformance.model import Level
from provision.errors import InputError
from provision.scheduler.local import LocalTarget, local_runner, verify_local
from provision.scheduler.specfile import NodeSpecFile, read_spec_file
from provision.spec import load_fleet

ROOT = Path(__file__).resolve().parents[2]
INVENTORY = ROOT / "inventory" / "hosts.yml"


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from provision.cli import run; run()", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture(scope="module")
def spec_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    proc = cli("spec", "export", "node01", "-i", str(INVENTORY))
    assert proc.returncode == 0, proc.stderr
    path = tmp_path_factory.mktemp("spec") / "node01.json"
    path.write_text(proc.stdout)
    return path


def test_local_runner_runs_the_gather_script_here() -> None:
    probes = [Probe(name="hello", command="echo hi; echo err >&2; exit 3"), Probe(name="path", command="command -v sh")]
    sections = split_sections(local_runner(10)("node01", build_script(probes)))
    assert (sections["hello"].rc, sections["hello"].stdout, sections["hello"].stderr) == (3, "hi\n", "err\n")
    assert sections["path"].ok and sections["path"].stdout.strip().endswith("/sh")


def test_a_gather_that_cannot_finish_is_an_error_never_healthy(spec_file: Path) -> None:
    doc = read_spec_file(spec_file)
    target = LocalTarget(name=doc.host, profile=doc.profile, spec=doc.spec, lab=doc.lab)
    report = verify_local(target, Level.QUICK, runner=local_runner(10, shell="/nonexistent/sh"))
    assert report.error and "cannot run /nonexistent/sh" in report.error and not report.ok


def test_spec_file_carries_spec_and_declaration_and_no_credential(spec_file: Path) -> None:
    text = spec_file.read_text()
    host = load_fleet(INVENTORY).select(["node01"])[0]
    assert read_spec_file(spec_file) == NodeSpecFile.of(host)
    assert "bmc" not in json.loads(text) and "password" not in text.lower() and "ansible_host" not in text


@pytest.mark.parametrize(("content", "needle"), [
    ("{", "not JSON (line 1"),
    ('{"format": "other"}', "not a provision node spec"),
    ('{"format": "provision-node-spec/1", "host": "n", "profile": "p"}', "spec: Field required"),
])
def test_bad_spec_file_is_one_line_naming_it(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "node.json"
    path.write_text(content)
    with pytest.raises(InputError) as exc:
        read_spec_file(path)
    assert str(path) in str(exc.value) and needle in str(exc.value)


FAKE = """#!/bin/sh
printf '%s\\n' "$*" >> "$(dirname "$0")/calls"
case "$*" in "-o show node "*) echo "NodeName=$4 State=IDLE" ;; esac
"""


def test_local_drain_tells_slurm_the_failing_and_unmade_checks(spec_file: Path, tmp_path: Path) -> None:
    """This machine is no ML-PROD-V4 server: the run fails; the reason lists what the JSON report failed."""
    fake = tmp_path / "scontrol"
    fake.write_text(FAKE)
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    out = tmp_path / "report.json"
    proc = cli("verify", "--local", "--spec-file", str(spec_file), "--level", "quick", "--drain",
               "--scontrol", str(fake), "--json", str(out))
    assert proc.returncode in (1, 3), proc.stderr  # NHC: non-zero is unhealthy
    (node,) = json.loads(out.read_text())["nodes"]
    bad = [r["id"] for r in node["results"] if r["outcome"] == "fail"] + \
          [r["id"] for r in node["results"] if r["outcome"] == "error"]
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls[0].startswith("-o show node ")
    assert calls[1].startswith(f"update nodename={calls[0].split()[-1]} state=drain reason=provision: ")
    listed = calls[1].split("reason=provision: ", 1)[1].split(" +")[0].split(",")
    assert listed and listed == bad[: len(listed)]  # failed first, then could not be made, cut to the limit
    assert "slurm: " in proc.stdout and ": drain (unhealthy)" in proc.stdout


@pytest.mark.parametrize(("args", "needle"), [
    (("verify", "--drain", "node01"), "--spec-file and --drain go with --local"),
    (("verify",), "give the nodes to verify"),
    (("verify", "--local", "node01", "node02"), "at most one NODE"),
    (("verify", "--local", "--spec-file", "/nonexistent/node.json"), "/nonexistent/node.json: cannot read"),
])
def test_local_usage_errors_exit_2(args: tuple[str, ...], needle: str) -> None:
    proc = cli(*args, "-i", str(INVENTORY))
    assert proc.returncode == 2 and needle in proc.stderr, proc.stderr


def test_spec_file_of_another_node_is_refused(spec_file: Path) -> None:
    proc = cli("verify", "--local", "node02", "--spec-file", str(spec_file))
    assert proc.returncode == 2 and "node node01's, not node02's" in proc.stderr
