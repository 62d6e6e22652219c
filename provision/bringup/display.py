"""Live progress of a bring-up: one row per node (Rich), plus a log file per node."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from provision.bringup.model import STAGES
from provision.errors import InputError
from provision.private import open_private


class Progress:
    """Thread-safe sink for (node, stage, message): a live table and per-node log files."""

    def __init__(self, nodes: list[str], log_dir: Path | None, console: Console, live: bool) -> None:
        self.rows = {n: ("-", "waiting") for n in nodes}
        self.started = time.monotonic()
        self.lock = threading.Lock()
        self.log_dir = log_dir
        if log_dir is not None:
            try:
                log_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as exc:
                raise InputError(f"{log_dir}: cannot create the log directory: {exc.strerror}") from None
        self.live = Live(self._table(), console=console, refresh_per_second=4, transient=False) if live else None

    def __call__(self, node: str, stage: str, message: str) -> None:
        with self.lock:
            self.rows[node] = (stage, message)
            self._log(node, stage, message)
            if self.live is not None:
                self.live.update(self._table())

    def _log(self, node: str, stage: str, message: str) -> None:
        if self.log_dir is None:
            return
        with open_private(self.log_dir / f"{node}.log", append=True) as fh:  # 0600 from the start
            fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {stage}: {message}\n")

    def _table(self) -> Table:
        elapsed = time.monotonic() - self.started
        table = Table("node", "stage", "step", "status", title=f"bring-up ({elapsed:.0f} s)")
        for node, (stage, message) in self.rows.items():
            step = f"{STAGES.index(stage) + 1}/{len(STAGES)}" if stage in STAGES else "-"
            table.add_row(Text(node), Text(stage), step, Text(message))  # data (an error's text), never markup
        return table

    def __enter__(self) -> Progress:
        if self.live is not None:
            self.live.__enter__()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if self.live is not None:
            self.live.update(self._table())
            self.live.__exit__(et, ev, tb)
