"""nv-fabricmanager log (`/var/log/fabricmanager.log`): timestamped entries by level.

Each entry starts `[Mon DD YYYY HH:MM:SS] [LEVEL] [tid N] message`; lines that do not
start an entry continue the previous one (multi-line inband message dumps).
"""

from __future__ import annotations

import re
from datetime import datetime

from provision.conformance.parsers._base import Model, fail, lines_of, tool_parser

TOOL = "fabricmanager log"

_ENTRY = re.compile(
    r"^\[(?P<ts>[A-Z][a-z]{2} +\d{1,2} \d{4} \d{2}:\d{2}:\d{2})\] "
    r"\[(?P<level>[A-Z]+)\] \[tid (?P<tid>\d+)\] ?(?P<msg>.*)$"
)
_STARTED = "Successfully configured all the available NVSwitches"


class FmLogEntry(Model):
    """One log entry (continuation lines joined with newlines)."""

    timestamp: datetime
    level: str
    tid: int
    message: str


class FmLog(Model):
    """All entries, oldest first."""

    entries: tuple[FmLogEntry, ...]

    @property
    def errors(self) -> tuple[FmLogEntry, ...]:
        """Entries at ERROR or FATAL level."""
        return tuple(e for e in self.entries if e.level in ("ERROR", "FATAL", "CRITICAL"))

    @property
    def configured_switches(self) -> bool:
        """The manager logged that it configured all NVSwitches (its 'started fine' line)."""
        return any(_STARTED in e.message for e in self.entries)


def _timestamp(value: str) -> datetime:
    try:
        return datetime.strptime(" ".join(value.split()), "%b %d %Y %H:%M:%S")
    except ValueError:
        fail(TOOL, f"bad timestamp {value!r}")


@tool_parser(TOOL)
def parse_fabricmanager_log(text: str) -> FmLog:
    """Parse a fabric manager log (or its tail)."""
    entries: list[FmLogEntry] = []
    for line in lines_of(text):
        match = _ENTRY.match(line)
        if match:
            entries.append(
                FmLogEntry(
                    timestamp=_timestamp(match["ts"]),
                    level=match["level"],
                    tid=int(match["tid"]),
                    message=match["msg"].strip(),
                )
            )
        elif line.strip():
            if not entries:
                fail(TOOL, f"first line is not a log entry: {line.strip()[:120]!r}")
            last = entries[-1]
            entries[-1] = last.model_copy(update={"message": f"{last.message}\n{line.strip()}"})
    if not entries:
        fail(TOOL, "no log entry")
    return FmLog(entries=tuple(entries))
