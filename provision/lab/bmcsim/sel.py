"""The System Event Log: entries appended for resets, updates and faults."""

from __future__ import annotations

from provision.lab.bmcsim import events
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.tree import Resources


class Sel:
    """Appends LogEntry resources to one log service's Entries collection."""

    __slots__ = ("_clock", "_next", "_node", "_res", "entries")

    def __init__(self, node: str, res: Resources, clock: SimClock, service_uri: str) -> None:
        self._node = node
        self._res = res
        self._clock = clock
        svc = res.get(service_uri) or {}
        self.entries = str(svc.get("Entries", {}).get("@odata.id", f"{service_uri}/Entries")).rstrip("/")
        self._next = 0

    def _new_id(self) -> str:
        if not self._next:
            ids = [m.get("@odata.id", "").rsplit("/", 1)[-1]
                   for m in (self._res.get(self.entries) or {}).get("Members", [])]
            self._next = max((int(i) for i in ids if i.isdigit()), default=0) + 1
        ident = str(self._next)
        self._next += 1
        return ident

    def add(self, message: str, severity: str = "OK", code: str = "Assert", **log_fields: object) -> str:
        """Append an entry; mirrors it into the simulator's log. Returns the entry URI."""
        ident = self._new_id()
        uri = f"{self.entries}/{ident}"
        self._res.put(uri, {
            "@odata.id": uri, "@odata.type": "#LogEntry.v1_9_0.LogEntry", "Id": ident,
            "Name": f"Log Entry {ident}", "EntryType": "SEL", "EntryCode": code,
            "Severity": severity, "Created": self._clock.iso(), "Message": message,
            "MessageId": "Provision.Lab", "SensorType": "System Event",
        })
        self._res.add_member(self.entries, uri)
        events.record(self._node, "sel", id=ident, message=message, severity=severity, **log_fields)
        return uri
