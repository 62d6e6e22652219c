"""A request as the simulator's HTTP side hands it to one BMC, and its JSON body read."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from provision.lab.bmcsim.tree import Json


@dataclass(slots=True)
class Request:
    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes = b""
    query: str = ""


def json_body(raw: bytes) -> Json | None:
    """The body as a JSON object; None for malformed JSON or JSON that is no object."""
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return None
    return body if isinstance(body, dict) else None
