"""Log entries (SEL)."""

from __future__ import annotations

from provision.redfish.resources.base import Resource


class LogEntry(Resource):
    """One SEL/event log entry."""

    created: str | None = None
    severity: str | None = None
    message: str | None = None
    message_id: str | None = None
    entry_type: str | None = None
    sensor_type: str | None = None
