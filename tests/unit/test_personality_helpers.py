"""Shared helpers of the personality tests: a twin's state in a temp dir, and its tools as subprocesses.

No root, no services: the fake tools read $PROVISION_LAB_STATE, a temporary dpkg database
(PROVISION_LAB_DPKG_ADMINDIR, read by the real dpkg-query) and a stand-in `systemctl` on PATH that
answers `is-active` from a file. (This module holds no tests.)
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from provision.lab.twins.personality import prepare_node
from provision.spec.model import NodeSpec

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
TOOLS = ROOT / "provision/lab/twins/personality/data/tools"
PIN = "550.127.08-1"
DRIVER_PACKAGES = {"nvidia-driver": PIN, "nvidia-kernel-open-dkms": PIN}
CONVERGED = {**DRIVER_PACKAGES, "nvidia-fabricmanager-550": PIN, "datacenter-gpu-manager": "1:3.3.9",
             "zfsutils-linux": "2.1.11-1+deb12u1", "mdadm": "4.2-5"}
CONVERGED_UNITS = ("nvidia-fabricmanager.service", "nvidia-dcgm.service", "nvidia-persistenced.service")

_SYSTEMCTL = """#!/bin/sh
# test double for systemd: `systemctl is-active [--quiet] UNIT` answers from $LAB_TEST_UNITS
[ "$1" = is-active ] || exit 1
for a in "$@"; do unit="$a"; done
grep -qx "$unit" "$LAB_TEST_UNITS" 2>/dev/null
"""


def spec(profile: str = "ml_prod_v4") -> NodeSpec:
    path = ROOT / f"inventory/group_vars/all/profile_{profile}.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return NodeSpec.model_validate(data[f"provision_profile_{profile}"])


class Twin:
    """A twin's lab state in a temp dir, with its packages and active units under test control."""

    def __init__(self, base: Path, profile: str = "ml_prod_v4", index: int = 1) -> None:
        self.base = base
        self.state = base / "state"
        self.spec = spec(profile)
        prepare_node(self.state, self.spec, index)
        (base / "bin").mkdir()
        systemctl = base / "bin" / "systemctl"
        systemctl.write_text(_SYSTEMCTL)
        systemctl.chmod(0o755)
        self.units_file = base / "units"
        self.units_file.write_text("")
        self.admindir = base / "dpkg"
        for sub in ("info", "updates"):
            (self.admindir / sub).mkdir(parents=True)
        self.set_packages({})

    def set_packages(self, packages: dict[str, str]) -> None:
        """The twin's dpkg database holds exactly these installed packages."""
        stanzas = [
            f"Package: {name}\nStatus: install ok installed\nPriority: optional\nSection: misc\n"
            f"Installed-Size: 1\nMaintainer: lab <lab@provision.invalid>\nArchitecture: amd64\n"
            f"Version: {version}\nDescription: LAB STAND-IN\n"
            for name, version in sorted(packages.items())
        ]
        (self.admindir / "status").write_text("\n".join(stanzas))

    def set_units(self, *units: str) -> None:
        self.units_file.write_text("".join(u + "\n" for u in units))

    def converge(self) -> None:
        """As the roles leave a node: pinned stack installed, services running."""
        self.set_packages(CONVERGED)
        self.set_units(*CONVERGED_UNITS)

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            PROVISION_LAB_STATE=str(self.state),
            PROVISION_LAB_DPKG_ADMINDIR=str(self.admindir),
            PROVISION_LAB_RUN=str(self.base / "run"),
            PROVISION_LAB_ROOT=str(self.base / "root"),
            PROVISION_LAB_DEV=str(self.base / "dev"),
            PROVISION_LAB_FM_LOG=str(self.base / "fabricmanager.log"),
            LAB_TEST_UNITS=str(self.units_file),
            PATH=f"{self.base / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}",
        )
        return env

    def run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, str(TOOLS / f"{tool}.py"), *args],
            capture_output=True, text=True, env=self.env(), timeout=60, check=False,
        )  # fmt: skip
        if check and done.returncode != 0:
            raise AssertionError(f"{tool} {' '.join(args)} exited {done.returncode}: {done.stderr or done.stdout}")
        return done

    def out(self, tool: str, *args: str) -> str:
        return self.run(tool, *args).stdout

    def drives(self, role: str) -> list[dict[str, Any]]:
        import json

        hw = json.loads((self.state / "hardware.json").read_text())
        return [d for d in hw["nvme"] if d["role"] == role]


def capture(relpath: str) -> str:
    return (FIXTURES / relpath).read_text(encoding="utf-8")


def exporter_section(relpath: str, command: str, phase: str = "capabilities") -> str:
    """One command's output from an nvidia_gpu_exporter multi-command capture."""
    pattern = re.compile(
        r"^# (?P<phase>\w+) :: [^\n]*\n# \$ (?P<cmd>[^\n]*)\n#+\n(?P<out>.*?)(?=\n#{20,}\n|\Z)", re.S | re.M
    )
    for match in pattern.finditer(capture(relpath)):
        if match["phase"] == phase and match["cmd"].strip().startswith(command):
            return match["out"].strip("\n") + "\n"
    raise LookupError(f"no {phase} section for {command!r} in {relpath}")


def flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    """A shape flattened to {"a.b[].c": leaf}."""
    if isinstance(tree, dict):
        out: dict[str, Any] = {}
        for key, value in tree.items():
            out.update(flat(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(tree, list):
        return flat(tree[0], prefix + "[]") if tree else {prefix + "[]": "empty"}
    return {prefix: tree}


def shape_diff(mine: Any, theirs: Any) -> list[str]:
    """Paths where two parse results differ in which fields are filled (and with what type)."""
    a, b = flat(shape(mine)), flat(shape(theirs))
    return sorted(f"{k}: twin {a.get(k, '-')} / capture {b.get(k, '-')}" for k in set(a) | set(b) if a.get(k) != b.get(k))


def shape(value: Any) -> Any:
    """Which fields a parse result fills: the model tree with every leaf replaced by its type (None stays None)."""
    if isinstance(value, BaseModel):
        return {name: shape(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, (tuple, list)):
        return [shape(value[0])] if value else []
    if isinstance(value, dict):  # keyed collections (e.g. NUMA node -> CPUs): the shape of one entry
        return {"*": shape(next(iter(value.values())))} if value else {}
    return None if value is None else type(value).__name__
