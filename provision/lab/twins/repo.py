"""Start and stop the lab's apt repository server (a background process owned by the lab)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from provision.errors import LabError
from provision.lab.twins import hooks, procs
from provision.lab.twins.models import RepoServerRecord

SCRIPT = Path(__file__).with_name("repo_server.py")


def build(repo_dir: Path, cache: Path) -> None:
    """Fill <lab>/repo: the personality builds into <cache>/repo (reused while unchanged), linked here."""
    cache.mkdir(parents=True, exist_ok=True)
    shared = cache / "repo"
    with open(cache / ".repo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        built = hooks.build_repo(shared)
        if built:
            shutil.rmtree(repo_dir, ignore_errors=True)
            shutil.copytree(shared, repo_dir, copy_function=_link_or_copy)
    ensure_index(repo_dir)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def ensure_index(repo_dir: Path) -> None:
    """A repository always has a Packages index, even before anything is put in it."""
    repo_dir.mkdir(parents=True, exist_ok=True)
    packages = repo_dir / "Packages"
    if not packages.exists():
        packages.write_text("")


def start(repo_dir: Path, addresses: list[str], run_dir: Path, timeout: float = 15) -> RepoServerRecord:
    """Start serving `repo_dir` on `addresses`; return once it listens."""
    if not addresses:
        raise LabError("repo server: no address to bind to")
    port_file = run_dir / "repo.port"
    port_file.unlink(missing_ok=True)
    with open(run_dir / "repo.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-S", str(SCRIPT), str(repo_dir), str(port_file), *addresses],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + timeout
    while not port_file.exists():
        if proc.poll() is not None:
            raise LabError(f"repo server exited {proc.returncode} at start; see {run_dir / 'repo.log'}")
        if time.monotonic() > deadline:
            procs.stop(proc.pid, str(repo_dir))
            raise LabError(f"repo server did not listen within {timeout:.0f} s")
        time.sleep(0.05)
    return RepoServerRecord(pid=proc.pid, port=int(port_file.read_text()), directory=repo_dir)


def stop(record: RepoServerRecord | None) -> None:
    if record is not None:
        procs.stop(record.pid, str(record.directory))


def url(record: RepoServerRecord, host_address: str) -> str:
    return f"http://{host_address}:{record.port}/"
