#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated Open MPI `mpirun` (4.1) for lab twins: reads the real arguments (--hostfile/-hostfile/--machinefile,
-np/-n, --map-by, --bind-to, -x, --mca, --allow-run-as-root), checks the hostfile's slots as Open MPI does, and
runs the program ONCE, here, as rank 0 of the job: a twin cannot reach another twin (twins reach only the lab
host), so no remote rank is started. The program learns the job's shape from the environment Open MPI sets
(OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_RANK) and PROVISION_LAB_MPI_HOSTS (the hostfile's hosts, lab only).
"""

from __future__ import annotations

import os
import sys

WITH_VALUE = {"-np", "-n", "--np", "--hostfile", "-hostfile", "--machinefile", "-machinefile", "--map-by",
              "-map-by", "--bind-to", "-bind-to", "-x", "-N", "--npernode", "--host", "-H"}


def _parse(args: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    opts: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--mca", "-mca") and i + 2 < len(args):
            opts.setdefault(a, []).append(f"{args[i + 1]}={args[i + 2]}")
            i += 3
        elif a in WITH_VALUE and i + 1 < len(args):
            opts.setdefault(a, []).append(args[i + 1])
            i += 2
        elif a.startswith("-"):
            opts.setdefault(a, []).append("1")
            i += 1
        else:
            return opts, args[i:]
    return opts, []


def _hostfile(path: str) -> list[tuple[str, int]]:
    hosts = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                words = line.split("#", 1)[0].split()
                if not words:
                    continue
                slots = next((int(w.split("=", 1)[1]) for w in words[1:] if w.startswith(("slots=", "max_slots="))), 1)
                hosts.append((words[0], slots))
    except OSError:
        sys.stderr.write(f"Open MPI was unable to open the hostfile:\n    {path}\nCheck to make sure the path and "
                         "filename are correct.\n")
        sys.exit(1)
    return hosts


def main(args: list[str]) -> int:
    opts, program = _parse(args)
    if not program:
        sys.stderr.write("mpirun could not find anything to do.\n")
        return 1
    if os.geteuid() == 0 and "--allow-run-as-root" not in opts:
        sys.stderr.write("mpirun has detected an attempt to run as root.\nRunning as root is *strongly* "
                         "discouraged ...\n")
        return 1
    named = [v for k in ("--hostfile", "-hostfile", "--machinefile", "-machinefile") for v in opts.get(k, [])]
    hf = named[-1] if named else None
    hosts = _hostfile(hf) if hf else [(os.uname().nodename, os.cpu_count() or 1)]
    slots = sum(s for _, s in hosts)
    np = int((opts.get("-np") or opts.get("-n") or opts.get("--np") or [str(slots)])[-1])
    if np > slots:
        sys.stderr.write(f"There are not enough slots available in the system to satisfy the {np}\nslots that were "
                         f"requested by the application:\n\n  {program[0]}\n")
        return 1
    env = dict(os.environ, OMPI_COMM_WORLD_SIZE=str(np), OMPI_COMM_WORLD_RANK="0",
               PROVISION_LAB_MPI_HOSTS=",".join(h for h, _ in hosts))
    try:
        os.execvpe(program[0], program, env)
    except OSError:
        sys.stderr.write(f"mpirun was unable to find the specified executable file, and therefore\ndid not launch "
                         f"the job.\n\nExecutable: {program[0]}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
