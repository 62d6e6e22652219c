# LAB STAND-IN: simulated hardware, not the real tool.
"""What the stand-in `docker`, `apptainer` and `nvidia-ctk` share (runs inside a node twin; stdlib only).

No container ever runs on a twin. A "container" that runs `nvidia-smi` gets the twin's stand-in nvidia-smi
(the GPUs of hardware.json), as the NVIDIA hook or `--nv` would give a real container the host's driver;
the fault `container_gpu_hidden` makes that container see no GPU ("No devices were found", exit 6).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, NoReturn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import labstate

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("PROVISION_LAB_ROOT", "/")
NO_DEVICES = "No devices were found\n"


def path(*parts: str) -> str:
    return os.path.join(ROOT, *parts)


def read_json(file: str, default: Any) -> Any:
    try:
        with open(file, encoding="utf-8") as fh:
            return json.load(fh)
    except (FileNotFoundError, ValueError):
        return default


def write_json(file: str, data: Any) -> None:
    os.makedirs(os.path.dirname(file), exist_ok=True)
    tmp = file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(data, indent=4, sort_keys=True) + "\n")
    os.replace(tmp, file)


def nvidia_smi_in_container(args: list[str]) -> NoReturn:
    """The container's `nvidia-smi ARGS`: the twin's stand-in, or no GPU under container_gpu_hidden.

    Through the stand-in's shell front (front.sh), as the host's `nvidia-smi` runs: a read-only query is served
    from the kept rendering while nothing it is rendered from has changed (the bytes the Python would print),
    so a container check costs one Python start (this one), not two."""
    if labstate.fault("container_gpu_hidden") is not None:
        sys.stdout.write(NO_DEVICES)
        sys.exit(6)
    sys.stdout.flush()
    env = dict(os.environ)
    env.setdefault("PROVISION_LAB_TOOLS", HERE)
    env.setdefault("PROVISION_LAB_PYTHON", sys.executable)
    front = os.path.join(env["PROVISION_LAB_TOOLS"], "front.sh")
    os.execve("/bin/sh", ["sh", "-c", '_pv_tool=nvidia_smi; . "$0"', front, *args], env)


def version_of(package: str, default: str) -> str:
    found = labstate.installed_version(package)
    return labstate.upstream(found).split(":")[-1] if found else default
