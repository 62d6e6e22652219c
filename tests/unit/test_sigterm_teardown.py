"""A test run stopped with SIGTERM still tears its fixtures down (tests/conftest.py): the lab never leaks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import ROOT

MODULE = '''
import time
from pathlib import Path

import pytest


@pytest.fixture
def lab():
    Path(r"{started}").touch()
    yield
    Path(r"{torn_down}").touch()


def test_runs_until_killed(lab):
    time.sleep(120)
'''


def test_sigterm_during_a_test_runs_its_fixtures_teardown(tmp_path: Path) -> None:
    started, torn_down = tmp_path / "started", tmp_path / "torn-down"
    module = ROOT / "tests" / "unit" / f"_sigterm_probe_{os.getpid()}_test.py"
    module.write_text(MODULE.format(started=started, torn_down=torn_down))
    try:
        proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(module)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert started.exists(), proc.communicate(timeout=10)[0].decode(errors="replace")[-2000:]
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=60)[0].decode(errors="replace")
    finally:
        module.unlink(missing_ok=True)
    assert torn_down.exists(), f"the fixture was not torn down on SIGTERM (exit {proc.returncode}): {out[-2000:]}"
    assert proc.returncode != 0
