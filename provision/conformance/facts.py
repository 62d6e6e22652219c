"""Gather every fact of a node in ONE remote script over ONE multiplexed SSH connection.

The script runs each probe (a shell command) in parallel on the node, then prints each result
framed as `@@PROVISION <name> <rc> <stdout bytes> <stderr bytes>` followed by the raw bytes, so
any output (binary, no trailing newline, marker-like text) round-trips exactly. The checks are
evaluated locally from the returned sections; nothing is parsed on the node.

SSH is the system `ssh` with ControlMaster/ControlPath/ControlPersist, BatchMode, and host-key
checking ON (`StrictHostKeyChecking=yes` with the host's known_hosts file when the inventory names one).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provision.errors import ProvisionError
from provision.private import runtime_dir
from provision.spec.fleet import SshEndpoint

_HEADER = re.compile(rb"@@PROVISION (\S+) (-?\d+) (\d+) (\d+)\n")
_NAME = re.compile(r"^[A-Za-z0-9_.:/\-\[\]]+$")


class GatherError(ProvisionError):
    """A node's facts could not be gathered at all (unreachable, host key refused, script died)."""


class Probe(BaseModel):
    """One shell command run on the node; its output becomes the section `name`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    command: str
    each: str | None = None  # shell glob: run once per match, `$1` = the match, name += ":<match>"


class Section(BaseModel):
    """What one probe printed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0


class NodeFacts(BaseModel):
    """Every section a node returned, keyed by probe name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    sections: dict[str, Section]
    seconds: float = 0.0

    def section(self, name: str) -> Section | None:
        return self.sections.get(name)

    def matching(self, prefix: str) -> list[Section]:
        """Sections of a per-match probe (`nvme_smart:/dev/nvme0n1`, ...), sorted by name."""
        return sorted((s for n, s in self.sections.items() if n.startswith(prefix + ":")), key=_natural)


def _natural(section: Section) -> list[object]:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", section.name)]


# Probes run concurrently, at most _L at a time (a token FIFO): the node's CPU count, 8..32, by default,
# so a small (or shared) machine is not flooded with every probe at once. Forks are what a gather costs on
# the node, so each probe is one subshell that `eval`s its command (an EXIT trap records the status even
# when the command calls `exit`; it hands its token back through the FIFO's path,
# as the command may leave any fd closed), and the epilogue frames every section with two processes in all: one
# `wc -c` for every size, one `cat` for every header and body.
_PRELUDE = r"""export LC_ALL=C PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
_t=$(mktemp -d) || exit 97
trap 'rm -rf "$_t"' EXIT
%(lanes)s
[ "$_L" -ge 1 ] 2>/dev/null || _L=2
mkfifo "$_t/tokens" && exec 3<>"$_t/tokens" || exit 97
_k=0; while [ "$_k" -lt "$_L" ]; do echo >&3; _k=$((_k+1)); done
_i=0
_run() { _i=$((_i+1)); eval "_n$_i=\$1"; read _tok <&3
  ( exec 3>&-; trap "echo \$? >'$_t/$_i.r'; echo >'$_t/tokens'" EXIT; _c=$2; set -- "$3"; eval "$_c"
  ) >"$_t/$_i.o" 2>"$_t/$_i.e" </dev/null & }
"""
DEFAULT_LANES = '_L=$(nproc 2>/dev/null); [ "$_L" -gt 32 ] 2>/dev/null && _L=32; [ "$_L" -ge 8 ] 2>/dev/null || _L=8'

_EPILOGUE = r"""wait
[ "$_i" -gt 0 ] || exit 0
set --; _j=1
while [ "$_j" -le "$_i" ]; do set -- "$@" "$_t/$_j.o" "$_t/$_j.e"; _j=$((_j+1)); done
_s=$(wc -c "$@" </dev/null) || exit 97
set --; _j=1
while [ "$_j" -le "$_i" ] && read -r _a _x && read -r _b _x; do
  read -r _r <"$_t/$_j.r" || _r=-1
  eval "_n=\$_n$_j"
  printf '@@PROVISION %s %s %s %s\n' "$_n" "$_r" "$_a" "$_b" >"$_t/$_j.h"
  set -- "$@" "$_t/$_j.h" "$_t/$_j.o" "$_t/$_j.e"; _j=$((_j+1))
done <<_PV_SIZES_
$_s
_PV_SIZES_
cat "$@"
"""


def build_script(probes: Sequence[Probe], lanes: int | None = None) -> str:
    """The POSIX sh script that runs the probes concurrently (`lanes` at a time) and frames their output."""
    lines = [_PRELUDE % {"lanes": DEFAULT_LANES if lanes is None else f"_L={int(lanes)}"}]
    for probe in probes:
        if not _NAME.match(probe.name):
            raise ValueError(f"probe name {probe.name!r} has characters the framing cannot carry")
        cmd = shlex.quote(probe.command)
        if probe.each is None:
            lines.append(f"_run {probe.name} {cmd} ''")
        else:
            lines.append(
                f'for _m in {probe.each}; do [ -e "$_m" ] && _run "{probe.name}:$_m" {cmd} "$_m"; done'
            )
    lines.append(_EPILOGUE)
    return "\n".join(lines)


def split_sections(raw: bytes) -> dict[str, Section]:
    """Cut the script's framed output back into sections; garbage or truncation -> GatherError."""
    sections: dict[str, Section] = {}
    pos = 0
    while pos < len(raw):
        match = _HEADER.match(raw, pos)
        if match is None:
            raise GatherError(f"gather output is not framed at byte {pos}: {raw[pos:pos + 60]!r}")
        name = match[1].decode()
        n_out, n_err = int(match[3]), int(match[4])
        start = match.end()
        end = start + n_out + n_err
        if end > len(raw):
            raise GatherError(f"gather output truncated in section {name}")
        out = raw[start : start + n_out].decode("utf-8", "replace")
        err = raw[start + n_out : end].decode("utf-8", "replace")
        sections[name] = Section(name=name, rc=int(match[2]), stdout=out, stderr=err)
        pos = end
    return sections


def control_dir() -> Path:
    """A private directory for ControlMaster sockets (short path: sockets have a ~100 byte limit):
    `$PROVISION_SSH_CONTROL_DIR/pv-ssh-<uid>`, else `$XDG_RUNTIME_DIR/pv-ssh`, else `<tmp>/pv-ssh-<uid>`.
    One that another user owns or can write is refused (UnsafePathError): its sockets would be theirs."""
    return runtime_dir("pv-ssh", os.environ.get("PROVISION_SSH_CONTROL_DIR"))


def ssh_argv(ssh: SshEndpoint, control: Path, persist_s: int = 60) -> list[str]:
    """The `ssh` command line: multiplexed, batch mode, strict host-key checking."""
    argv = [
        "ssh",
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=yes",
        "-o", "ControlMaster=auto",
        "-o", f"ControlPath={control}/%C",
        "-o", f"ControlPersist={persist_s}s",
        "-o", "ConnectTimeout=10",
        "-o", "LogLevel=ERROR",
        "-p", str(ssh.port),
    ]  # fmt: skip
    if ssh.known_hosts is not None:
        argv += ["-o", f"UserKnownHostsFile={ssh.known_hosts}"]
    if ssh.key_file is not None:
        argv += ["-i", str(ssh.key_file), "-o", "IdentitiesOnly=yes"]
    argv += shlex.split(ssh.common_args)
    argv += ["-l", ssh.user, ssh.host]
    return argv


Runner = Callable[[str, str], bytes]
"""(node, script) -> raw framed output; the SSH runner in production, a local one in tests."""


def ssh_runner(ssh: SshEndpoint, control: Path | None = None, timeout_s: float = 120) -> Runner:
    """A Runner that pipes the script into `sh -s` on the node over the multiplexed connection."""
    argv = [*ssh_argv(ssh, control or control_dir()), "sh -s"]

    def run(node: str, script: str) -> bytes:
        try:
            proc = subprocess.run(argv, input=script.encode(), capture_output=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise GatherError(f"{node}: gathering facts took longer than {timeout_s:.0f} s") from exc
        except FileNotFoundError as exc:
            raise GatherError("the `ssh` client is not installed") from exc
        if proc.returncode != 0:
            lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            why = lines[-1] if lines else f"exit {proc.returncode}"
            raise GatherError(f"{node}: ssh {ssh.user}@{ssh.host}:{ssh.port} failed: {why}")
        return proc.stdout

    return run


def close_master(ssh: SshEndpoint, control: Path | None = None) -> None:
    """Stop the ControlMaster for this endpoint, if one runs (used by tests and benches)."""
    argv = ssh_argv(ssh, control or control_dir())
    subprocess.run([*argv[:-3], "-O", "exit", *argv[-3:]], capture_output=True, timeout=10, check=False)


def gather(node: str, probes: Sequence[Probe], runner: Runner) -> NodeFacts:
    """Run every probe on the node in one round trip and return its sections."""
    started = time.monotonic()
    raw = runner(node, build_script(probes))
    return NodeFacts(node=node, sections=split_sections(raw), seconds=time.monotonic() - started)


def run_probes(node: str, probes: Sequence[Probe], runner: Runner, lanes: int | None = None) -> dict[str, Section]:
    """Run probes in one round trip (after the gather: burn-in, the phases across nodes); a round trip that fails
    makes each probe a section with rc -1 and the reason (so its checks are ERRORs naming it), never a missing
    fact that could read as nothing to check."""
    if not probes:
        return {}
    try:
        return split_sections(runner(node, build_script(probes, lanes=lanes)))
    except GatherError as exc:
        return {p.name: Section(name=p.name, rc=-1, stdout="", stderr=str(exc)) for p in probes}
