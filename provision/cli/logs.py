"""The command line's one logging configuration: a stderr handler (warnings, or more with -v) and an
optional --log-file (DEBUG, created 0600), each with the secret filter ON THE HANDLER.

A filter on a logger only sees records logged on that very logger, not those that propagate from its
children (`urllib3.connectionpool`, `provision.campaign.engine`); a filter on a handler sees every record
the handler writes, whichever logger it came from.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import TextIO

from provision.errors import InputError
from provision.private import open_private
from provision.redact import RedactingFilter

STDERR_FORMAT = "%(message)s"
VERBOSE_FORMAT = "%(levelname)s %(name)s: %(message)s"
FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(threadName)s]: %(message)s"
_OURS = "_provision_cli_handler"
_LEVELS = {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO}  # -q, default, -v; -vv and more: DEBUG


class StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever sys.stderr is at the time of each record (like logging.lastResort)."""

    def __init__(self, level: int) -> None:
        logging.Handler.__init__(self, level)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:  # StreamHandler.setStream: stderr stays the one of the moment
        pass


def configure(verbose: int = 0, log_file: Path | None = None) -> list[logging.Handler]:
    """Replace the handlers a previous call installed; returns the new ones (stderr first).

    `verbose` is -1 for -q (errors only on stderr), 0 by default (warnings), 1 for -v, 2 for -vv."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _OURS, False)]:
        root.removeHandler(old)
        old.close()
    stderr_level = _LEVELS.get(verbose, logging.DEBUG if verbose > 1 else logging.ERROR)
    stderr = StderrHandler(stderr_level)
    stderr.setFormatter(logging.Formatter(STDERR_FORMAT if verbose <= 0 else VERBOSE_FORMAT))
    handlers: list[logging.Handler] = [stderr]
    if log_file is not None:
        try:
            log_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"{log_file}: cannot create its directory: {exc.strerror}") from None
        to_file = logging.StreamHandler(open_private(log_file, append=True))  # 0600 from the start
        to_file.setLevel(logging.DEBUG)
        to_file.setFormatter(logging.Formatter(FILE_FORMAT))
        handlers.append(to_file)
    for handler in handlers:
        handler.addFilter(RedactingFilter())
        setattr(handler, _OURS, True)
        root.addHandler(handler)
    root.setLevel(min(h.level for h in handlers))
    return handlers
