"""Boot and stop one twin: the systemd-nspawn command line and its host-side supervisor."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from provision.lab.twins import cgroup, procs
from provision.lab.twins.models import TwinRecord
from provision.lab.twins.twinroot import STATE_MOUNT

SUPERVISOR = Path(__file__).with_name("supervisor.py")


def root_dir(twin: TwinRecord) -> Path:
    return twin.twin_dir / "root"


def state_dir(twin: TwinRecord) -> Path:
    return twin.twin_dir / "state"


def nspawn_argv(twin: TwinRecord) -> list[str]:
    """systemd-nspawn booting the twin's overlay root inside its own network namespace."""
    return [
        "systemd-nspawn", "--quiet", "--boot",
        f"--directory={root_dir(twin)}",
        f"--machine={twin.netns}",
        f"--hostname={twin.name}",
        "--register=no", "--keep-unit", "--link-journal=no", "--console=read-only", "--resolv-conf=off",
        f"--network-namespace-path=/run/netns/{twin.netns}",
        "--capability=CAP_NET_ADMIN",  # its own netns only: roles may set MTUs and addresses
        f"--bind={state_dir(twin)}:{STATE_MOUNT}",
    ]  # fmt: skip


def marker(twin: TwinRecord) -> str:
    """Text in the supervisor's command line that identifies it (against pid reuse)."""
    return str(twin.twin_dir / "launch.json")


def start(twin: TwinRecord) -> int:
    """Start the supervisor (which boots the twin); return its pid."""
    launch = twin.twin_dir / "launch.json"
    group = cgroup.path_for(twin.netns)
    launch.write_text(
        json.dumps({"argv": nspawn_argv(twin), "log": str(twin.twin_dir / "console.log"), "cgroup": str(group or "")})
    )
    with open(twin.twin_dir / "console.log", "ab") as log:  # the supervisor's own errors land there too
        proc = subprocess.Popen(
            [sys.executable, "-S", str(SUPERVISOR), str(launch)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip
    return proc.pid


def running(twin: TwinRecord) -> bool:
    return procs.alive(twin.supervisor_pid, marker(twin))


def request_stop(twin: TwinRecord) -> None:
    """Ask for a clean shutdown without waiting (lets many twins shut down side by side)."""
    if running(twin) and twin.supervisor_pid:
        procs.signal_quietly(twin.supervisor_pid, signal.SIGTERM)


def stop(twin: TwinRecord, grace: float = 20) -> None:
    """Power the twin off: SIGTERM (retried) lets systemd shut down; then kill what is left."""
    procs.stop(twin.supervisor_pid, marker(twin), grace=grace)
    cgroup.kill(twin.netns)
    _forget_propagate_dir(twin)


def _forget_propagate_dir(twin: TwinRecord) -> None:
    for sub in ("propagate", "locks"):
        path = Path("/run/systemd/nspawn") / sub / twin.netns
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def console_tail(twin: TwinRecord, lines: int = 3) -> str:
    """The last lines nspawn and the twin's console wrote (for error messages; secrets never go there)."""
    try:
        text = (twin.twin_dir / "console.log").read_text(errors="replace")
    except OSError:
        return "no console output"
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept) or "no console output"
