"""Crash-test failpoints for the resume tests: kill -9 this process at an exact point of a bring-up.

`PROVISION_FAILPOINT=ACTION:before` kills the process once the intent of the first side effect of kind
ACTION (e.g. `host-reset`) is journaled and before it runs; `ACTION:after` kills it once the side effect
has run and before its outcome is journaled. Off unless the variable is set; never set it in production.
"""

from __future__ import annotations

import os
import signal

ENV = "PROVISION_FAILPOINT"


def hit(action: str, when: str) -> None:
    """SIGKILL this process when the failpoint `action:when` is armed."""
    if os.environ.get(ENV) == f"{action}:{when}":
        os.kill(os.getpid(), signal.SIGKILL)
