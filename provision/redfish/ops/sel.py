"""SEL: find the system event log service, read its entries, clear it."""

from __future__ import annotations

from provision.redfish.errors import RedfishError
from provision.redfish.ops.session import Node
from provision.redfish.resources import LogEntry


def find_sel(node: Node) -> str:
    """URI of the log service that holds the SEL (system first, then manager)."""
    conn = node.conn
    owners = [node.system.uri] + ([node.manager_uri] if node.manager_uri else [])
    services = []
    for owner in owners:
        link = (conn.get(owner).get("LogServices") or {}).get("@odata.id")
        if link:
            services += conn.members(str(link))
    for pick in (
        lambda s: str(s.get("Id", "")).lower() == "sel" or s.get("LogEntryType") == "SEL",
        lambda s: "/Systems/" in str(s.get("@odata.id", "")),
    ):
        for svc in services:
            if pick(svc):
                return str(svc["@odata.id"]).rstrip("/")
    raise RedfishError(f"{conn.opts.where}: no SEL log service found")


def read(node: Node, limit: int | None = None) -> list[LogEntry]:
    conn = node.conn
    svc = conn.get(find_sel(node))
    entries = (svc.get("Entries") or {}).get("@odata.id")
    if not entries:
        return []
    rows = [LogEntry.parse(e) for e in conn.members(str(entries))]
    return rows[-limit:] if limit else rows


def clear(node: Node) -> str:
    """Clear the SEL; returns the log service URI."""
    uri = find_sel(node)
    svc = node.conn.get(uri)
    target = ((svc.get("Actions") or {}).get("#LogService.ClearLog") or {}).get("target") or \
        f"{uri}/Actions/LogService.ClearLog"
    node.conn.post(target, {})
    return uri
