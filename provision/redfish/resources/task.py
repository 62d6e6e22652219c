"""Task: a long-running BMC operation."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from provision.redfish.resources.base import Resource

TERMINAL = frozenset({"Completed", "Exception", "Killed", "Cancelled", "Interrupted"})


class Task(Resource):
    """One task as the TaskService reports it."""

    task_state: str | None = None
    task_status: str | None = None
    percent_complete: int | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def done(self) -> bool:
        return self.task_state in TERMINAL

    @property
    def ok(self) -> bool:
        return self.task_state == "Completed" and self.task_status in (None, "OK", "Warning")

    @property
    def message_text(self) -> str:
        return "; ".join(str(m.get("Message") or m.get("MessageId")) for m in self.messages)[:400]
