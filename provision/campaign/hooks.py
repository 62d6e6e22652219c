"""Drain, undrain and verify hooks: operator commands run per node, without a shell."""

from __future__ import annotations

import os
import shlex
import subprocess

from pydantic import BaseModel, ConfigDict

TAIL_CHARS = 400


class HookResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    rc: int | None
    output: str

    def describe(self) -> str:
        status = "timed out" if self.rc is None else f"exit {self.rc}"
        return f"{status}: {self.output.strip()[-200:]}" if self.output.strip() else status


def run_hook(template: str, node: str, campaign: str, timeout_s: float) -> HookResult:
    """Run `template` with {node} and {campaign} substituted in each argument (no shell involved)."""
    try:
        argv = [arg.replace("{node}", node).replace("{campaign}", campaign) for arg in shlex.split(template)]
    except ValueError as exc:
        return HookResult(ok=False, rc=None, output=f"cannot parse hook command: {exc}")
    env = {**os.environ, "PROVISION_NODE": node, "PROVISION_CAMPAIGN": campaign}
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, env=env, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else ""
        return HookResult(ok=False, rc=None, output=out[-TAIL_CHARS:])
    except OSError as exc:
        return HookResult(ok=False, rc=127, output=f"cannot run {argv[0]!r}: {exc.strerror}")
    output = (proc.stdout + proc.stderr)[-TAIL_CHARS:]
    return HookResult(ok=proc.returncode == 0, rc=proc.returncode, output=output)
