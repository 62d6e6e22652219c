"""dcgmi diag (hand-written), systemctl show (hand-written) and the fabric manager log (real)."""

from __future__ import annotations

from datetime import datetime

import pytest

from provision.conformance.parsers import parse_dcgmi_diag, parse_fabricmanager_log, parse_systemctl_show
from provision.errors import ParseError

from ._fixtures import text


def test_dcgmi_diag_all_pass() -> None:
    diag = parse_dcgmi_diag(text("dcgm/handwritten/dcgmi-diag-r2.pass.txt"))
    assert diag.passed
    assert diag.metadata["DCGM Version"] == "3.3.5"
    assert diag.metadata["Driver Version Detected"] == "535.161.08"
    assert len(diag.tests) == 12
    assert diag.test("PCIe").category == "Integration"
    assert diag.test("PCIe").outcome == "Pass" and diag.test("PCIe").results[0].gpus is None
    assert diag.test("EUD Test").outcome == "Skip"
    assert diag.test("Denylist").category == "Deployment"


def test_dcgmi_diag_failure_and_warning() -> None:
    diag = parse_dcgmi_diag(text("dcgm/handwritten/dcgmi-diag-r2.fail.txt"))
    assert not diag.passed
    pcie = diag.test("PCIe")
    assert pcie.outcome == "Fail"
    assert [(r.result, r.gpus) for r in pcie.results] == [("Pass", (0, 1, 2, 3, 4, 5, 6)), ("Fail", (7,))]
    assert pcie.details == ("Warning: GPU 7 PCIe link width is x8, expected x16.",)
    remap = diag.test("Page Retirement/Row Remap")
    assert remap.outcome == "Warn"
    assert remap.details == ("Warning: GPU 3 has 2 pending remapped rows. Reset the GPU to apply them.",)
    with pytest.raises(ParseError, match="no test named"):
        diag.test("Memtest")


def test_dcgmi_diag_truncated_and_errors() -> None:
    capture = text("dcgm/handwritten/dcgmi-diag-r2.pass.txt")
    with pytest.raises(ParseError, match="bottom border"):
        parse_dcgmi_diag(capture[: capture.index("| EUD Test")])
    with pytest.raises(ParseError, match="no result table"):
        parse_dcgmi_diag("Error: unable to establish a connection to the specified host: localhost\n")


def test_systemctl_show_fabricmanager() -> None:
    unit = parse_systemctl_show(text("fabricmanager/handwritten/systemctl-show.nvidia-fabricmanager.txt"))
    assert unit.running
    assert (unit.load_state, unit.unit_file_state, unit.result) == ("loaded", "enabled", "success")
    assert (unit.main_pid, unit.exec_main_status, unit.n_restarts) == (2311, 0, 0)
    failed = parse_systemctl_show("ActiveState=failed\nSubState=failed\nMainPID=0\nExecMainStatus=1\n")
    assert not failed.running and failed.exec_main_status == 1


def test_fabricmanager_log_capture() -> None:
    log = parse_fabricmanager_log(text("fabricmanager/gpud/fabricmanager.log"))
    assert len(log.entries) == 54
    assert log.entries[0].timestamp == datetime(2025, 2, 25, 13, 59, 45)
    assert log.entries[0].tid == 1803
    assert "Team release request" in log.entries[0].message  # continuation line joined
    (error,) = log.errors
    assert error.message.startswith("detected NVSwitch non-fatal error 12028")
    assert error.timestamp == datetime(2025, 2, 27, 15, 10, 2)
    assert not log.configured_switches  # this excerpt has no start-up lines


def test_fabricmanager_log_garbage() -> None:
    with pytest.raises(ParseError, match="not a log entry"):
        parse_fabricmanager_log("hello\n[Feb 25 2025 13:59:45] [INFO] [tid 1] x\n")
