"""`provision verify --local`: the node-side checks run on the node itself, for Slurm's HealthCheckProgram.

The same gather script the controller sends over SSH is piped into a local `sh -s`, and its framed
output goes through the same parsers and checks; only the transport differs. The BMC-side checks need
the BMC's credentials, which a compute node does not hold: they run from the controller
(`provision verify NODE`) and are waived here, with that reason, at the levels that have them.
"""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provision.conformance import node as conformance  # conformance.verify_node: the one way a node is verified
from provision.conformance.bmc_source import NoBmc
from provision.conformance.facts import GatherError, Runner
from provision.conformance.model import Level, NodeReport
from provision.conformance.target import Target
from provision.spec.fleet import BmcEndpoint, LabDeclaration, SshEndpoint
from provision.spec.model import NodeSpec
from provision.spec.slurm import SlurmSettings

# Slurm kills a HealthCheckProgram after 60 s (slurm.conf HealthCheckInterval docs): the quick gather gets
# 40 s so that a node whose tools hang is still judged (ERROR) and drained within that minute.
LOCAL_GATHER_TIMEOUT_S = {Level.QUICK: 40.0, Level.FULL: 180.0, Level.BURNIN: 3600.0}
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BMC_WAIVED = "BMC-side checks run from the controller (provision verify NODE); --local checks the node side"


class LocalTarget(BaseModel):
    """What a node needs to judge itself: from the inventory, or from a spec file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    profile: str
    spec: NodeSpec
    lab: LabDeclaration = LabDeclaration()
    slurm: SlurmSettings | None = None

    @property
    def ssh(self) -> SshEndpoint | None:
        """None: the node is checked in place, no SSH."""
        return None

    @property
    def bmc(self) -> BmcEndpoint | None:
        """None: a compute node holds no BMC credentials (the BMC checks run from the controller)."""
        return None


def short_hostname() -> str:
    """This machine's short host name (what `hostname -s` prints; Slurm's default NodeName)."""
    return socket.gethostname().split(".", 1)[0]


def local_runner(timeout_s: float, shell: str = "/bin/sh") -> Runner:
    """A Runner that pipes the gather script into `sh -s` here, as the SSH runner does on the node."""

    def run(node: str, script: str) -> bytes:
        try:
            proc = subprocess.run([shell, "-s"], input=script.encode(), capture_output=True, timeout=timeout_s,
                                  cwd=Path("/"), env=_env(), check=False)
        except subprocess.TimeoutExpired as exc:
            raise GatherError(f"{node}: gathering facts locally took longer than {timeout_s:.0f} s") from exc
        except OSError as exc:
            raise GatherError(f"{node}: cannot run {shell}: {exc.strerror}") from exc
        if proc.returncode != 0:
            lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GatherError(f"{node}: the gather script failed: {lines[-1] if lines else f'exit {proc.returncode}'}")
        return proc.stdout

    return run


def _env() -> dict[str, str]:
    """This environment with a PATH (slurmd may start its HealthCheckProgram with none), LC_ALL=C."""
    return {**os.environ, "PATH": os.environ.get("PATH") or DEFAULT_PATH, "LC_ALL": "C"}


def verify_local(target: LocalTarget, level: Level, runner: Runner | None = None) -> NodeReport:
    """Gather here, judge with the node's spec and the inventory's declaration (the BMC checks waived); one
    NodeReport."""
    run = runner or local_runner(LOCAL_GATHER_TIMEOUT_S[level])

    def runner_for(_node: Target) -> Runner:
        return run

    return conformance.verify_node(target, level, conformance.Reach(runner_for=runner_for, bmc=NoBmc(BMC_WAIVED)))
