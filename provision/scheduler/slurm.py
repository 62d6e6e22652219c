"""Drain a node that fails verify and resume it when it passes, through Slurm's `scontrol`.

observe (`scontrol -o show node NAME`, parsed by `parse_node`) -> plan (`plan`, pure, table-tested) ->
apply (`scontrol update nodename=NAME state=drain reason=...` or `state=resume`).

As NHC does, provision only ever resumes a node it drained itself: its drain reasons start with
`provision:`, and a node drained for another reason (an operator's, NHC's, slurmctld's own) is left as
it is, failing or not. A check that could not be made (ERROR) drains the node as a failure does: a
verdict that is not a pass is never healthy.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from provision.conformance.model import NodeReport
from provision.errors import ProvisionError
from provision.redfish.redact import scrub
from provision.scheduler.settings import SlurmSettings

REASON_PREFIX = "provision:"
# slurmdbd keeps a node event's reason in a TINYTEXT column (255 bytes); slurmctld itself takes longer ones,
# but the accounting record and `sinfo -R` are where operators read them, so a reason never exceeds that.
MAX_REASON = 255
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class SlurmError(ProvisionError):
    """scontrol could not be run, or Slurm refused the query or the update."""


class ActionKind(StrEnum):
    DRAIN = "drain"
    RESUME = "resume"
    NONE = "none"


class SlurmNode(BaseModel):
    """A node as `scontrol -o show node` prints it: its state words and its reason."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    states: frozenset[str]
    reason: str = ""

    @property
    def drained(self) -> bool:
        """DRAIN is set (sinfo's drng/drain: draining with jobs, or drained)."""
        return "DRAIN" in self.states

    @property
    def by_provision(self) -> bool:
        return self.reason.startswith(REASON_PREFIX)


class SlurmAction(BaseModel):
    """What to tell Slurm about one node, and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    kind: ActionKind
    reason: str = ""
    why: str = ""

    def argv(self, scontrol: str) -> list[str]:
        """The scontrol command line of a drain or a resume (no shell: the reason is one argument)."""
        if self.kind is ActionKind.DRAIN:
            return [scontrol, "update", f"nodename={self.node}", "state=drain", f"reason={self.reason}"]
        if self.kind is ActionKind.RESUME:
            return [scontrol, "update", f"nodename={self.node}", "state=resume"]
        raise ValueError("nothing to run for a no-op action")


_STATE = re.compile(r"(?:^|\s)State=(\S+)")
_REASON = re.compile(r"(?:^|\s)Reason=(.*)$")
_REASON_STAMP = re.compile(r"\s*\[[^\]\s]*@[^\]]*\]\s*$")  # the ` [user@time]` scontrol appends


def parse_node(name: str, text: str) -> SlurmNode:
    """`scontrol -o show node NAME` -> SlurmNode; the output of another node or none at all -> SlurmError.

    States are the `+`-joined words of State= (`IDLE+DRAIN`, `MIXED+DRAIN`, `DOWN*+DRAIN`); `*` (not
    responding) is dropped from the word it follows. Reason= is the last field of the one-liner (it may
    hold spaces), its trailing `[user@time]` removed.
    """
    line = next((ln for ln in text.splitlines() if ln.startswith(f"NodeName={name} ")), None)
    if line is None:
        raise SlurmError(f"scontrol show node {name}: no NodeName={name} in its output")
    state = _STATE.search(line)
    if state is None:
        raise SlurmError(f"scontrol show node {name}: no State= in its output")
    states = frozenset(word.rstrip("*~#!%$@^-") for word in state[1].split("+") if word)
    reason = _REASON.search(line)
    text_reason = _REASON_STAMP.sub("", reason[1]).strip() if reason else ""
    return SlurmNode(name=name, states=states, reason=text_reason)


def drain_reason(report: NodeReport, limit: int = MAX_REASON) -> str:
    """`provision: <failing ids>,<ids that could not be checked>`, cut to `limit` with `+N more`."""
    ids = [r.id for r in report.failed] + [r.id for r in report.errors]
    if report.error is not None and not ids:
        ids = ["gather"]  # no fact could be read at all
    reason = f"{REASON_PREFIX} {','.join(ids)}"
    for kept in range(len(ids) - 1, -1, -1):
        if len(reason) <= limit:
            break
        reason = f"{REASON_PREFIX} {','.join(ids[:kept])} +{len(ids) - kept} more".replace("  ", " ")
    return reason


def plan(report: NodeReport, node: SlurmNode, settings: SlurmSettings) -> SlurmAction:
    """What to tell Slurm, from the verdict and the node's state (pure)."""
    name = node.name
    if not report.ok:
        reason = drain_reason(report)
        if not settings.drain_on_fail:
            return SlurmAction(node=name, kind=ActionKind.NONE, why="unhealthy; drain_on_fail is off")
        if node.drained and not node.by_provision:
            return SlurmAction(node=name, kind=ActionKind.NONE,
                               why=f"unhealthy; already drained for another reason ({node.reason or 'none'}): kept")
        if node.drained and node.reason == reason:
            return SlurmAction(node=name, kind=ActionKind.NONE, why="unhealthy; already drained for these checks")
        return SlurmAction(node=name, kind=ActionKind.DRAIN, reason=reason, why="unhealthy")
    if node.drained and node.by_provision and settings.resume_on_pass:
        return SlurmAction(node=name, kind=ActionKind.RESUME, why=f"healthy; was drained by provision ({node.reason})")
    if node.drained:
        return SlurmAction(node=name, kind=ActionKind.NONE,
                           why=f"healthy; drained for another reason ({node.reason or 'none'}): kept")
    return SlurmAction(node=name, kind=ActionKind.NONE, why="healthy; not drained")


def scontrol_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """PATH, LANG, HOME and the SLURM_* variables (SLURM_CONF; SLURM_JWT where a site uses auth/jwt, which is
    scontrol's own credential): never the controller's other secrets (BMC password, vault)."""
    source = os.environ if environ is None else environ
    env = {"PATH": source.get("PATH") or DEFAULT_PATH, "LANG": source.get("LANG") or "C.UTF-8"}
    if source.get("HOME"):
        env["HOME"] = source["HOME"]
    env |= {k: v for k, v in source.items() if k.startswith("SLURM_")}
    return env


class Scontrol:
    """The scontrol command (the path the settings name), run without a shell and with scontrol_env()."""

    def __init__(self, command: str = "scontrol", timeout_s: float = 30.0) -> None:
        self.command = command
        self.timeout_s = timeout_s

    def _run(self, argv: Sequence[str]) -> str:
        shown = " ".join(argv)
        try:
            proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=self.timeout_s,
                                  env=scontrol_env(), stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired:
            raise SlurmError(f"{shown}: no answer within {self.timeout_s:g} s") from None
        except OSError as exc:
            raise SlurmError(f"cannot run {argv[0]!r}: {exc.strerror} (set provision_slurm.scontrol)") from None
        if proc.returncode != 0:
            why = (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()[-1]
            raise SlurmError(scrub(f"{shown}: {why}"))
        return proc.stdout

    def run(self, *args: str) -> str:
        """`scontrol ARGS...` (no shell); its output, or SlurmError naming the command and what it said."""
        return self._run([self.command, *args])

    def show(self, node: str) -> SlurmNode:
        return parse_node(node, self._run([self.command, "-o", "show", "node", node]))

    def apply(self, action: SlurmAction) -> None:
        if action.kind is not ActionKind.NONE:
            self._run(action.argv(self.command))


def sync(report: NodeReport, settings: SlurmSettings, node: str | None = None,
         scontrol: Scontrol | None = None) -> SlurmAction:
    """Observe the node in Slurm, plan, apply; return what was done (SlurmError when Slurm cannot be told).

    The node's own health check may act between the observation and the update (a resume of a node it
    already resumed is refused by slurmctld): a refused update whose effect is there on a second look is done.
    """
    tool = scontrol or Scontrol(settings.scontrol, settings.timeout_s)
    name = node or settings.node_name or report.node
    action = plan(report, tool.show(name), settings)
    apply_checked(tool, action)
    return action


def apply_checked(tool: Scontrol, action: SlurmAction) -> None:
    """Apply; a refused update whose effect is there on a second look (another agent did it) is done."""
    try:
        tool.apply(action)
    except SlurmError:
        if not _in_effect(action, tool.show(action.node)):
            raise


def _in_effect(action: SlurmAction, node: SlurmNode) -> bool:
    if action.kind is ActionKind.DRAIN:
        return node.drained and node.reason == action.reason
    return action.kind is ActionKind.RESUME and not node.drained
