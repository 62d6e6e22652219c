"""The simulator's own log: one JSON object per line, never a password or a token."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

_log = logging.getLogger("provision.lab.bmcsim")


def record(node: str, event: str, **fields: Any) -> None:
    """Append one event (e.g. `fault.set`, `power`, `update.done`) for `node` to the log."""
    _log.info(json.dumps({"t": round(time.time(), 3), "node": node, "event": event, **fields},
                         default=str))


def to_file(path: str) -> None:
    """Send the event log to `path` (used by the process entry point)."""
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(message)s"))
    _log.addHandler(handler)
    _log.setLevel(logging.INFO)
    _log.propagate = False
