#!/usr/bin/python3
# LAB STAND-IN: simulated hardware, not the real tool.
"""Simulated `apptainer` CLI for provision lab twins (stdlib only): no image is built, no container runs.

`apptainer --version`; `apptainer pull [--force] SIF docker://IMAGE` writes a stand-in SIF (a text file naming
the image; nothing is downloaded); `apptainer exec [--nv] [--nvccli] SIF nvidia-smi ARGS` prints the twin's
stand-in GPUs when --nv finds the host's nvidia-smi through /etc/apptainer/nvliblist.conf (or, with
`use nvidia-container-cli = yes` in apptainer.conf or --nvccli, through nvidia-container-cli), with the real
tool's messages otherwise ("Could not find any nv files on this host!", "could not open image ...").
"""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import containers_lab as lab
import labstate

CONF_DIR = lab.path("etc/apptainer")
SIF_MAGIC = "LAB STAND-IN SIF of "


def _conf_yes(key: str) -> bool:
    try:
        with open(os.path.join(CONF_DIR, "apptainer.conf"), encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return False
    match = re.search(rf"^\s*{re.escape(key)}\s*=\s*(\S+)", text, re.M)
    return match is not None and match[1].lower() == "yes"


def _nvliblist() -> list[str]:
    try:
        with open(os.path.join(CONF_DIR, "nvliblist.conf"), encoding="utf-8") as fh:
            return [line.strip() for line in fh if line.strip() and not line.startswith("#")]
    except OSError:
        return []


def _pull(args: list[str]) -> None:
    force = "--force" in args or "-F" in args
    rest = [a for a in args if not a.startswith("-")]
    if len(rest) != 2 or not rest[1].startswith("docker://"):
        labstate.die("FATAL:   LAB STAND-IN: only `apptainer pull SIF docker://IMAGE` is simulated", 255)
    sif, uri = rest
    if os.path.exists(sif) and not force:
        labstate.die(f'FATAL:   Image file already exists: "{sif}" - will not overwrite', 255)
    print("INFO:    Converting OCI blobs to SIF format\nINFO:    LAB STAND-IN: nothing downloaded")
    with open(sif, "w", encoding="utf-8") as fh:
        fh.write(SIF_MAGIC + uri + "\n")
    print("INFO:    Creating SIF file...")


def _exec(args: list[str]) -> None:
    flags = [a for a in args[: next((i for i, a in enumerate(args) if not a.startswith("-")), len(args))]]
    rest = args[len(flags):]
    if not rest:
        labstate.die("FATAL:   LAB STAND-IN: apptainer exec needs an image", 255)
    sif, command = rest[0], rest[1:]
    try:
        with open(sif, encoding="utf-8") as fh:
            magic = fh.readline()
    except FileNotFoundError:
        labstate.die(f"FATAL:   could not open image {sif}: failed to retrieve path for {sif}: lstat {sif}: "
                     "no such file or directory", 255)
    if not magic.startswith(SIF_MAGIC):
        labstate.die(f"FATAL:   could not open image {sif}: image format not recognized", 255)
    nv = "--nv" in flags
    if nv and ("--nvccli" in flags or _conf_yes("use nvidia-container-cli")):
        if labstate.installed_version("libnvidia-container-tools") is None:
            labstate.die('FATAL:   container creation failed: nvidia-container-cli not found in PATH: exec: '
                         '"nvidia-container-cli": executable file not found in $PATH', 255)
    elif nv and ("nvidia-smi" not in _nvliblist() or labstate.kernel_module_version() is None):
        sys.stderr.write("WARNING: Could not find any nv files on this host!\n")
        nv = False
    if command[:1] == ["nvidia-smi"] and nv:
        lab.nvidia_smi_in_container(command[1:])
    what = command[0] if command else "/.singularity.d/runscript"
    labstate.die(f'FATAL:   "{what}": executable file not found in $PATH', 255)


def main(argv: list[str]) -> None:
    if argv[:1] in (["--version"], ["version"]):
        print(f"apptainer version {lab.version_of('apptainer', '1.3.6')}")
    elif argv[:1] == ["pull"]:
        _pull(argv[1:])
    elif argv[:1] == ["exec"]:
        _exec(argv[1:])
    else:
        labstate.die(f"FATAL:   LAB STAND-IN: apptainer {' '.join(argv[:1])} is not simulated", 255)


if __name__ == "__main__":
    main(sys.argv[1:])
