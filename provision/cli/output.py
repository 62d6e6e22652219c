"""Rendering helpers shared by every command: JSON and Rich consoles."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from rich.console import Console

console = Console()
err_console = Console(stderr=True)


def to_jsonable(obj: Any) -> Any:
    """Turn models (and lists/dicts of them) into plain JSON-able data."""
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    if isinstance(obj, dict):
        return {k: to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    return obj


def emit_json(obj: Any) -> None:
    """Print obj as indented JSON on stdout, nothing else."""
    print(json.dumps(to_jsonable(obj), indent=2, sort_keys=False))
