"""What a handler answers: status, JSON body, headers; independent of the HTTP framework."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from provision.lab.bmcsim.messages import error_body, message

Json = dict[str, Any]


@dataclass(slots=True)
class Reply:
    status: int
    body: Json | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    content_type: str = "application/json; charset=utf-8"


def error(status: int, key: str, *args: Any, related: list[str] | None = None,
          extra: list[Json] | None = None) -> Reply:
    return Reply(status, error_body(key, *args, related=related, extra=extra))


def success() -> Reply:
    """200 with the Base Success message (what most BMCs answer to an accepted action)."""
    return Reply(200, {"@Message.ExtendedInfo": [message("Success")]})


def no_content() -> Reply:
    return Reply(204)


def accepted(task_uri: str, task: Json) -> Reply:
    return Reply(202, task, {"Location": task_uri})
