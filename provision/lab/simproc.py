"""LAB ONLY: start one BMC simulator process from its config, wait for its ready file (one implementation
for `provision lab up` and the vm tier's `vm_node`); tell whether it still runs, stop it, and see its ports close.

The config (secrets in clear) is written 0600 as `<dir>/bmcsim.json`; the process's output goes to
`<dir>/bmcsim.out`; it writes `cfg.ready_file` once every BMC listens.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from provision.errors import LabError
from provision.lab.bmcsim.config import Ready, SimConfig

SIM_CONFIG = "bmcsim.json"
SIM_OUT = "bmcsim.out"


def write_private(path: Path, text: str) -> None:
    """`text` into `path`, created 0600 (a secret never lies readable, even for an instant)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)


def write_config(work: Path, cfg: SimConfig) -> Path:
    path = work / SIM_CONFIG
    write_private(path, cfg.to_file_json())
    return path


def spawn(work: Path, cfg: SimConfig) -> subprocess.Popen[bytes]:
    """The simulator for `<work>/bmcsim.json`, in its own session, stdin closed, output to bmcsim.out."""
    with contextlib.suppress(FileNotFoundError):
        cfg.ready_file.unlink()
    out = open(work / SIM_OUT, "ab")  # noqa: SIM115 - handed to the child, closed below
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "provision.lab.bmcsim", str(work / SIM_CONFIG)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=work,
            start_new_session=True, close_fds=True,
        )  # fmt: skip
    finally:
        out.close()


def wait_ready(work: Path, proc: subprocess.Popen[bytes], cfg: SimConfig) -> Ready:
    """The ready file's content once it appears; LabError (with the output's last line) if the process
    exits first or it takes longer than 60 s (plus a little per node)."""
    deadline = time.monotonic() + 60 + len(cfg.nodes) / 20
    while time.monotonic() < deadline:
        if cfg.ready_file.exists():
            return Ready.model_validate_json(cfg.ready_file.read_text())
        if proc.poll() is not None:
            raise LabError(f"the BMC simulator exited with {proc.returncode}: {tail(work / SIM_OUT)}")
        time.sleep(0.05)
    raise LabError(f"the BMC simulator did not start within the time limit; see {work / SIM_OUT}")


def tail(path: Path) -> str:
    """The last non-blank line of `path` (a process's output), or "(no output)"."""
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no output)"
    return lines[-1] if lines else "(no output)"


def alive(pid: int) -> bool:
    """The simulator with this pid still runs (a pid reused by another program does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return _is_simulator(pid)


def _is_simulator(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"provision.lab.bmcsim" in cmdline


def stop_process(pid: int, lab: Path, asked: bool) -> None:
    """Wait for a process asked to stop, then SIGTERM, then SIGKILL (that pid only)."""
    steps = ((None, 5.0), (signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)) if asked else \
        ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0))
    for sig, wait in steps:
        if sig is not None and alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        if _wait_gone(pid, wait):
            return
    raise LabError(f"simulator pid {pid} does not stop; see {lab / SIM_OUT}")


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def ports_left(ports: list[int], timeout: float = 5.0) -> list[int]:
    """Ports still listening once the process is gone (an exiting process closes its files last)."""
    deadline = time.monotonic() + timeout
    left = [p for p in ports if _listening(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = [p for p in left if _listening(p)]
    return left


def _listening(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0
