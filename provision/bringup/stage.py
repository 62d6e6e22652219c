"""The contract every bring-up stage keeps: observe (read-only) -> plan (pure) -> apply."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from provision.bringup import failpoint
from provision.bringup.model import Action, StagePlan
from provision.journal import Journal
from provision.journal.locks import NodeLocks
from provision.spec import HostEntry

Progress = Callable[[str, str, str], None]  # (node, stage, message)
T = TypeVar("T")


@dataclass
class StageContext:
    """What a stage may use while it runs for one node."""

    host: HostEntry
    journal: Journal | None
    run_id: int | None
    progress: Progress = field(default=lambda node, stage, msg: None)
    locks: NodeLocks | None = None
    """The run's node leases; every side effect first checks this node's is still ours."""
    resources: ExitStack = field(default_factory=ExitStack)
    plan_only: bool = False
    """--plan: stages observe and plan, and tell nobody (no Slurm drain or resume either)."""
    _kept: dict[str, Any] = field(default_factory=dict)

    def keep(self, key: str, opener: Callable[[], AbstractContextManager[T]]) -> T:
        """A resource opened once for this node's run (e.g. its BMC session), closed when the run ends."""
        if key not in self._kept:
            self._kept[key] = self.resources.enter_context(opener())
        value: T = self._kept[key]
        return value

    def say(self, stage: str, message: str) -> None:
        self.progress(self.host.name, stage, message)

    def side_effect(self, stage: str, action: Action, do: Callable[[], Any]) -> Any:
        """Run one side effect with its intent journaled first, its outcome after."""
        if self.locks is not None:
            self.locks.check(self.host.name)
        if self.journal is None or self.run_id is None:
            return do()
        action_id = self.journal.action_started(self.run_id, self.host.name, stage, action.kind, action.target)
        failpoint.hit(action.kind, "before")
        try:
            result = do()
        except BaseException as exc:
            self.journal.action_finished(action_id, "failed", type(exc).__name__)
            raise
        failpoint.hit(action.kind, "after")
        self.journal.action_finished(action_id, "ok", action.describe())
        return result


class Stage(Protocol):
    """A stage observes live state, plans from it purely, and applies only its plan."""

    name: str

    def observe(self, ctx: StageContext) -> Any:
        """Read-only look at everything the plan needs: the node (BMC, OS) and the journal. Safe to repeat."""
        ...

    def plan(self, host: HostEntry, observed: Any) -> StagePlan:
        """Pure: the actions that take the observed state to the host's spec, each carrying what apply needs.

        No I/O here (no BMC, no journal): given the same host and observation, the same plan."""
        ...

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        """Carry out exactly the plan's actions, re-reading only to verify their effect; raise
        ProvisionError on failure."""
        ...
