"""Host-side supervisor of one twin (run as a plain script: stdlib only, small footprint).

Usage: python3 supervisor.py LAUNCH.json
LAUNCH.json: {"argv": [...nspawn...], "log": path, "cgroup": path or null}
It joins the twin's cgroup (so that teardown can kill everything in it at once), runs nspawn,
restarts it when it exits with 133 (a reboot inside the twin) and ends on any other exit or on
SIGTERM (forwarded to nspawn, which powers the twin off cleanly).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REBOOT_EXIT = 133


class Supervisor:
    def __init__(self, launch: dict[str, object]) -> None:
        self.argv = [str(a) for a in launch["argv"]]  # type: ignore[attr-defined]
        self.log_path = Path(str(launch["log"]))
        self.stopping = False
        self.child: subprocess.Popen[bytes] | None = None

    def on_term(self, signum: int, _frame: object) -> None:
        self.stopping = True
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signal.SIGTERM)

    def note(self, text: str) -> None:
        with open(self.log_path, "a") as log:
            log.write(f"--- supervisor {time.strftime('%H:%M:%S')}: {text}\n")

    def loop(self) -> int:
        boots = 0
        while not self.stopping:
            boots += 1
            self.note(f"boot {boots}")
            with open(self.log_path, "ab") as log:
                self.child = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
            if self.stopping:  # SIGTERM arrived while nspawn was starting
                self.child.send_signal(signal.SIGTERM)
            rc = self.child.wait()
            self.note(f"nspawn exited {rc}")
            if rc != REBOOT_EXIT:
                return 0 if self.stopping else rc
        return 0


def join_cgroup(path: object) -> None:
    if path:
        Path(str(path)).mkdir(parents=True, exist_ok=True)
        (Path(str(path)) / "cgroup.procs").write_text("0\n")


def main(argv: list[str]) -> int:
    launch = json.loads(Path(argv[1]).read_text())
    join_cgroup(launch.get("cgroup"))
    sup = Supervisor(launch)
    signal.signal(signal.SIGTERM, sup.on_term)
    signal.signal(signal.SIGINT, sup.on_term)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    os.umask(0o022)
    return sup.loop()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
