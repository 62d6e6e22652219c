"""Transport warnings (TLS verification off, plain HTTP): said once per BMC per command.

A command may open several connectors to one BMC (a session per stage, a reconnect after a BMC reset),
and each used to warn again, through the log and through Python's warnings, so one command printed the
same line two or more times. The warning goes to the log only (stderr and --log-file through the CLI's
handlers; Python's last-resort handler prints it to stderr where no logging is configured), once per
BMC and kind; the CLI forgets what was said at the start of each command (`reset`).
"""

from __future__ import annotations

import logging
import threading

LOG = logging.getLogger("provision.redfish")

_SAID: set[tuple[str, str]] = set()
_LOCK = threading.Lock()


def warn_once(where: str, what: str) -> None:
    """Log `where: what` as a warning unless this command already said `what` about `where` (a BMC)."""
    with _LOCK:
        if (where, what) in _SAID:
            return
        _SAID.add((where, what))
    LOG.warning("%s: %s", where, what)


def reset() -> None:
    """Forget what was said: the next command warns afresh (called where each CLI command starts)."""
    with _LOCK:
        _SAID.clear()
