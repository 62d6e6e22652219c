"""Drain, undrain and verify hooks: operator commands run per node, without a shell.

A hook is someone else's program on a shared controller: it gets a minimal environment (`hook_env`), never
the controller's own (which holds PROVISION_BMC_PASSWORD or ANSIBLE_VAULT_PASSWORD_FILE), and what it
prints passes the secret filter before it is kept (the journal stores its tail).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from provision.redact import scrub

TAIL_CHARS = 400
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_ENV = ("PATH", "LANG", "HOME")


class HookResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ok: bool
    rc: int | None
    output: str

    def describe(self) -> str:
        status = "timed out" if self.rc is None else f"exit {self.rc}"
        return f"{status}: {self.output.strip()[-200:]}" if self.output.strip() else status


class HookRunner(Protocol):
    """How the campaign runs a hook (run_hook in production, a fake in tests)."""

    def __call__(self, template: str, node: str, campaign: str, timeout_s: float,
                 env_allow: Sequence[str] = ()) -> HookResult: ...


def hook_env(node: str, campaign: str, allow: Sequence[str] = (),
             environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """PATH, LANG, HOME (from the controller, with defaults), PROVISION_NODE, PROVISION_CAMPAIGN, and the
    allow-listed variables that are set; the policy model refuses allow-listing a secret's name."""
    source = os.environ if environ is None else environ
    env = {"PATH": source.get("PATH") or DEFAULT_PATH, "LANG": source.get("LANG") or "C.UTF-8"}
    if source.get("HOME"):
        env["HOME"] = source["HOME"]
    env |= {name: source[name] for name in allow if name in source and name not in BASE_ENV}
    env |= {"PROVISION_NODE": node, "PROVISION_CAMPAIGN": campaign}
    return env


def run_hook(template: str, node: str, campaign: str, timeout_s: float,
             env_allow: Sequence[str] = ()) -> HookResult:
    """Run `template` with {node} and {campaign} substituted in each argument (no shell involved)."""
    try:
        argv = [arg.replace("{node}", node).replace("{campaign}", campaign) for arg in shlex.split(template)]
    except ValueError as exc:
        return HookResult(ok=False, rc=None, output=f"cannot parse hook command: {exc}")
    if not argv:
        return HookResult(ok=False, rc=None, output="empty hook command")
    env = hook_env(node, campaign, env_allow)
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout_s, env=env, stdin=subprocess.DEVNULL, check=False
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else ""
        return HookResult(ok=False, rc=None, output=_tail(out))
    except OSError as exc:
        return HookResult(ok=False, rc=127, output=scrub(f"cannot run {argv[0]!r}: {exc.strerror}"))
    return HookResult(ok=proc.returncode == 0, rc=proc.returncode, output=_tail(proc.stdout + proc.stderr))


def _tail(output: str) -> str:
    """The last TAIL_CHARS characters, scrubbed whole first (a secret cut in two by the tail stays hidden)."""
    return scrub(output)[-TAIL_CHARS:]
