"""DMTF's Redfish Service Validator, offline, against one lab node: no more FAILs than the lab node had before
the day-zero services (accounts, certificates, manager settings) were added (34; DMTF's own mockup server
gets 52 on its public-rackmount1 mockup): a new service may add passes, never a FAIL."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.lab

CSDL = Path(__file__).resolve().parent.parent / "fixtures" / "bmcsim" / "csdl"
LAB_NODE_FAILS = 34  # measured 2026-12-05, before and after the day-zero services


def test_service_validator_fail_count(bmc_lab: Any, tmp_path: Path) -> None:
    validator = shutil.which("rf_service_validator", path=str(Path(sys.executable).parent))
    if validator is None:
        pytest.skip("redfish-service-validator is not installed (pip install -e .[test])")
    schemas = tmp_path / "csdl"
    shutil.copytree(CSDL, schemas)
    hv = bmc_lab.host_vars("node01")
    dead_proxy = "http://127.0.0.1:9"  # anything it would fetch from dmtf.org goes nowhere
    done = subprocess.run(
        [validator, "-r", hv["provision_lab_bmc_http_address"], "-u", hv["provision_bmc_username"],
         "-p", hv["provision_bmc_password"], "--authtype", "Basic", "--schema_directory", str(schemas),
         "--logdir", str(tmp_path / "logs"), "--skipschema",
         "--ext_http_proxy", dead_proxy, "--ext_https_proxy", dead_proxy],
        capture_output=True, text=True, timeout=300, check=False,
    )
    table = re.search(r"PASS\s*\|\s*WARN\s*\|\s*FAIL.*?\n.*?\n\|\s*(\d+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|",
                      done.stdout, re.S)
    assert table, done.stdout[-2000:] + done.stderr[-2000:]
    passed, _warned, failed = (int(x) for x in table.groups())
    assert passed > 5000, "the validator walked the whole tree"
    assert failed <= LAB_NODE_FAILS, done.stdout[-3000:]
