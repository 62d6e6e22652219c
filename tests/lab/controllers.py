"""Controller processes of the shared-journal lab tests: whatever the test's outcome, none outlives it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO


@contextmanager
def reaped(procs: list[subprocess.Popen[str]], logs: list[IO[str]]) -> Iterator[None]:
    """On the way out: every process still running killed and waited for, every log closed."""
    try:
        yield
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for log in logs:
            log.close()
