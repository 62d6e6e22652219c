#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `nvidia-ctk` (NVIDIA Container Toolkit CLI) for provision lab twins (stdlib only).

`nvidia-ctk --version`; `nvidia-ctk runtime configure --runtime=docker [--set-as-default] [--config=PATH]` adds
runtimes.nvidia (path nvidia-container-runtime) to daemon.json, as the real command does. The role writes the
same keys with a template instead; other runtimes and subcommands are not simulated.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import containers_lab as lab
import labstate


def _configure(args: list[str]) -> None:
    opts = dict(a.lstrip("-").partition("=")[::2] for a in args if a.startswith("--"))
    if opts.get("runtime", "docker") != "docker":
        labstate.die(f"LAB STAND-IN: nvidia-ctk runtime configure --runtime={opts['runtime']} is not simulated", 1)
    config = opts.get("config") or lab.path("etc/docker/daemon.json")
    data = dict(lab.read_json(config, {}))
    data.setdefault("runtimes", {})["nvidia"] = {"args": [], "path": "nvidia-container-runtime"}
    if "set-as-default" in opts:
        data["default-runtime"] = "nvidia"
    lab.write_json(config, data)
    sys.stderr.write(f'INFO[0000] Wrote updated config to {config}\n'
                     "INFO[0000] It is recommended that docker daemon be restarted.\n")


def main(argv: list[str]) -> None:
    if argv[:1] in (["--version"], ["-v"]):
        print(f"NVIDIA Container Toolkit CLI version {lab.version_of('nvidia-container-toolkit-base', '1.17.3')}\n"
              "commit: lab-stand-in")
    elif argv[:2] == ["runtime", "configure"]:
        _configure(argv[2:])
    else:
        labstate.die(f"LAB STAND-IN: nvidia-ctk {' '.join(argv[:2])} is not simulated", 1)


if __name__ == "__main__":
    main(sys.argv[1:])
