"""Host processes the lab starts (supervisors, the repo server): liveness and a firm stop."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path


def _read(pid: int, name: str) -> str:
    try:
        return Path(f"/proc/{pid}/{name}").read_text()
    except OSError:
        return ""


def alive(pid: int | None, marker: str) -> bool:
    """True when `pid` runs and its command line contains `marker` (guards against pid reuse)."""
    if not pid:
        return False
    stat = _read(pid, "stat")
    if not stat or stat.rsplit(")", 1)[-1].split()[0] == "Z":
        _reap(pid)
        return False
    return marker in _read(pid, "cmdline").replace("\0", " ")


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def signal_quietly(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def stop(pid: int | None, marker: str, grace: float = 20, resend: float = 3) -> bool:
    """SIGTERM (repeated every `resend` s: a booting twin may ignore the first), then SIGKILL.

    Returns True when it ended within the grace period, False when it had to be killed.
    """
    if not alive(pid, marker):
        return True
    assert pid is not None
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        signal_quietly(pid, signal.SIGTERM)
        until = min(deadline, time.monotonic() + resend)
        while time.monotonic() < until:
            if not alive(pid, marker):
                return True
            time.sleep(0.1)
    signal_quietly(pid, signal.SIGKILL)
    for _ in range(50):
        if not alive(pid, marker):
            break
        time.sleep(0.1)
    return False
