"""One-line events on stderr as work happens, for when stdout is not a terminal (cron, CI, AWX, a pipe).

Each line is `NODE STAGE OUTCOME SECONDSs[: detail]`, e.g. `node01 firmware converged 2.3s`: written as the
stage ends, flushed at once, plain text (no colour, no markup), one line however long the detail. `-q`
turns them off. A live table on a terminal replaces them (the table shows the same as it happens).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

from provision.cli.output import quiet

Say = Callable[[str, str, str], None]  # (node, stage, message), what a bring-up's progress receives

_lock = threading.Lock()
# The messages a bring-up stage ends with (provision.bringup.model.Outcome), then "failed: <error>".
STAGE_ENDS = ("applied", "converged", "planned", "failed", "skipped")


def line(node: str, stage: str, outcome: str, seconds: float | None, detail: str = "") -> str:
    took = f" {seconds:.1f}s" if seconds is not None else ""
    text = f"{node} {stage} {outcome}{took}" + (f": {detail}" if detail else "")
    return " ".join(text.split())


def emit(node: str, stage: str, outcome: str, seconds: float | None, detail: str = "") -> None:
    """Write one event line on stderr now (unless -q)."""
    if quiet.on:
        return
    with _lock:
        sys.stderr.write(line(node, stage, outcome, seconds, detail) + "\n")
        sys.stderr.flush()


class StageEvents:
    """A bring-up progress sink: times each node's stage from its first message, emits a line as it ends."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._started: dict[tuple[str, str], float] = {}
        self._mutex = threading.Lock()

    def __call__(self, node: str, stage: str, message: str) -> None:
        outcome, _, detail = message.partition(": ")
        ends = outcome in STAGE_ENDS
        with self._mutex:
            now = self.clock()
            started = self._started.setdefault((node, stage), now)
            if ends:
                del self._started[(node, stage)]
        if ends:
            emit(node, stage, outcome, now - started, detail)


def tee(*sinks: Say) -> Say:
    """One progress callable feeding several sinks in turn."""

    def say(node: str, stage: str, message: str) -> None:
        for sink in sinks:
            sink(node, stage, message)

    return say
