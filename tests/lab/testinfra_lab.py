"""The testinfra path (tests/testinfra, `pytest tests/testinfra --hosts=... --spec-inventory=...`) run as any CI
would run it, against a lab twin, with its per-test and per-check outcomes read back from its JUnit report.

tests/testinfra/test_conformance.py has one test per (host, area) and prints one line per check of the area,
`<outcome>: <check id>: ...`; with `-o junit_logging=system-out` those lines land in the test's <system-out>.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from provision.lab.twins.models import TwinInfo
from tests.lab.verify_lab import ROOT

# Checks `provision verify` reports that the testinfra path does not have, each with why. Every other check id
# must be in both with the same outcome; each pattern here must match at least one of verify's ids (so that a
# stale entry is noticed), and none of testinfra's.
VERIFY_ONLY = {
    # BMC-side checks read Redfish, not the node over SSH (tests/testinfra/conftest.py says so); `verify --no-bmc`
    # reports each as WAIVED.
    "bmc.*": "BMC-side: Redfish, not SSH",
    # The NVMe endurance projection runs on the controller after the pure evaluation, from readings the
    # journal keeps between runs (provision/conformance/wear.py); testinfra runs only the evaluation.
    "nvme.*.endurance_date": "journal-kept projection (controller side)",
}
_LINE = re.compile(r"^(pass|fail|error|warn|waived): (\S+): ", re.MULTILINE)
_AREA = re.compile(r"^test_area\[(?:\w+://)?(?P<host>[^-\]]+)-(?P<area>[^\]]+)\]$")


def verify_only(check_id: str) -> bool:
    return any(fnmatchcase(check_id, pattern) for pattern in VERIFY_ONLY)


@dataclass(frozen=True)
class TestinfraRun:
    returncode: int
    areas: dict[str, bool]  # area -> its test passed
    checks: dict[str, str]  # check id -> outcome (the Outcome value)
    output: str


def ssh_config(info: TwinInfo, directory: Path) -> Path:
    """An ssh_config naming the twin by its inventory name (testinfra's host name must be the inventory's)."""
    path = directory / "ssh_config"
    path.write_text("\n".join([
        f"Host {info.name}",
        f"  HostName {info.address}",
        f"  Port {info.port}",
        f"  User {info.user}",
        f"  IdentityFile {info.key_file}",
        "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {info.known_hosts}",
        "  StrictHostKeyChecking yes",
        "  BatchMode yes",
        # a short socket path (sun_path is 108 bytes): testinfra multiplexes its many `host.run`s over one
        f"  ControlPath {tempfile.gettempdir()}/ti-%C",
        "",
    ]))
    return path


def run_testinfra(inventory: Path, info: TwinInfo, directory: Path, level: str = "full") -> TestinfraRun:
    """`pytest tests/testinfra --hosts=ssh://<node> --spec-inventory=<inventory>` in a subprocess; its outcomes."""
    junit, config = directory / "testinfra.xml", ssh_config(info, directory)
    argv = [sys.executable, "-m", "pytest", "tests/testinfra", "-p", "no:cacheprovider", "-q", "-rA",
            f"--hosts=ssh://{info.name}", f"--ssh-config={config}",
            f"--spec-inventory={inventory}", f"--verify-level={level}",
            f"--junitxml={junit}", "-o", "junit_logging=system-out"]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    finally:  # testinfra leaves its multiplexing master for 60 s (ControlPersist): stop it now
        subprocess.run(["ssh", "-F", str(config), "-O", "exit", info.name], capture_output=True, timeout=30,
                       check=False)
    output = proc.stdout + proc.stderr
    if not junit.exists():
        raise AssertionError(f"testinfra wrote no report (exit {proc.returncode}):\n{output[-3000:]}")
    areas: dict[str, bool] = {}
    checks: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        match = _AREA.match(case.get("name", ""))
        assert match and match["host"] == info.name, (case.get("name"), output[-2000:])
        failed = case.find("failure") is not None or case.find("error") is not None
        assert case.find("skipped") is None, f"testinfra skipped {case.get('name')}"
        areas[match["area"]] = not failed
        for outcome, check_id in _LINE.findall(case.findtext("system-out") or ""):
            assert check_id not in checks, f"{check_id} reported twice"
            checks[check_id] = outcome
    return TestinfraRun(proc.returncode, areas, checks, output)
