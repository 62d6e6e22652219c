"""Task: a long-running BMC operation."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from provision.redfish.resources.base import Model, Resource

TERMINAL = frozenset({"Completed", "Exception", "Killed", "Cancelled", "Interrupted"})
ACTIVE = frozenset({"New", "Starting", "Running", "Pending", "Stopping", "Suspended", "Service"})


class TaskPayload(Model):
    """The request that started a task (Task v1_4 Payload)."""

    target_uri: str | None = None
    """The URI the request was sent to, e.g. .../UpdateService.SimpleUpdate."""
    http_operation: str | None = None
    json_body: str | None = None
    """The request's JSON body, as a string."""

    def body(self) -> dict[str, Any]:
        """The JSON body as an object ({} when absent or not an object)."""
        try:
            parsed = json.loads(self.json_body or "{}")
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}


class Task(Resource):
    """One task as the TaskService reports it."""

    task_state: str | None = None
    task_status: str | None = None
    percent_complete: int | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)
    payload: TaskPayload | None = None
    """What started it, where the BMC says (not every BMC does)."""

    @property
    def done(self) -> bool:
        return self.task_state in TERMINAL

    @property
    def running(self) -> bool:
        """Still at work (a state Redfish names as not yet over); an absent state is not taken as running."""
        return self.task_state in ACTIVE

    @property
    def ok(self) -> bool:
        return self.task_state == "Completed" and self.task_status in (None, "OK", "Warning")

    @property
    def message_text(self) -> str:
        return "; ".join(str(m.get("Message") or m.get("MessageId")) for m in self.messages)[:400]
