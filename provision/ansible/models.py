"""Typed results of an Ansible run: what the wrapper returns, never raw runner dicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Strategy = Literal["linear", "mitogen"]
EventKind = Literal["play", "task", "ok", "changed", "failed", "unreachable", "skipped"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class HostStats(_Frozen):
    """Per-host counters from the play recap."""

    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0


class Change(_Frozen):
    """A task that changed (or, in check mode, would change) a host."""

    host: str
    task: str
    diff: str = Field(default="", description="Unified diff when the module reported one")


class Failure(_Frozen):
    """A task that failed on a host, or a host that could not be reached."""

    host: str
    task: str
    msg: str
    unreachable: bool = False


class Managed(_Frozen):
    """Something a successful task says the run manages on a host: a file (path) or a service (name)."""

    host: str
    kind: Literal["file", "service"]
    name: str


class PlayResult(_Frozen):
    """The outcome of one playbook run."""

    status: str = Field(description="ansible-runner status: successful, failed, timeout, canceled")
    rc: int
    check: bool = False
    hosts: dict[str, HostStats] = Field(default_factory=dict)
    changes: list[Change] = Field(default_factory=list)
    failures: list[Failure] = Field(default_factory=list)
    managed: list[Managed] = Field(default_factory=list)

    def manifest(self, host: str) -> dict[str, list[str]]:
        """What the run managed on `host`, by kind, each name once, sorted."""
        kinds: dict[str, set[str]] = {"file": set(), "service": set()}
        for item in self.managed:
            if item.host == host:
                kinds[item.kind].add(item.name)
        return {kind: sorted(names) for kind, names in kinds.items()}

    @property
    def ok(self) -> bool:
        return self.status == "successful" and self.rc == 0 and not self.failures

    @property
    def changed_total(self) -> int:
        return sum(s.changed for s in self.hosts.values())


class ProgressEvent(_Frozen):
    """One step of a run, for a progress display."""

    kind: EventKind
    name: str = Field(description="Play or task name")
    host: str | None = None


class RunOptions(_Frozen):
    """What to run, where and how."""

    playbook: str = Field(default="site.yml", description="File name under the project's playbooks/")
    inventory: Path
    limit: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    skip_tags: tuple[str, ...] = ()
    check: bool = False
    diff: bool = False
    forks: int = Field(default=8, ge=1, le=256)
    strategy: Strategy = "linear"
    extravars: dict[str, Any] = Field(default_factory=dict)
    timeout_s: int | None = Field(default=None, ge=1)
