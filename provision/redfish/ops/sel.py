"""SEL: find the system event log service, read its entries, clear it.

Which LogService is the SEL is read from the standard, not from a vendor's URI: a LogService whose
LogEntryType is "SEL" (LogService schema) or whose Id or Name says SEL, under the System's and every
Manager's LogServices, or one the vendor plugin names as its SEL-equivalent (HPE iLO: the IML). Among
several, one with entries wins (Dell iDRAC lists an empty FaultList with LogEntryType SEL beside its Sel;
HGX baseboards keep an empty SEL beside the BMC's), then an explicit LogEntryType, then the System's before
a Manager's. A BMC that names none gets the System's log service with entries.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from provision.redfish.connector import ROOT, Connector, Json
from provision.redfish.errors import RedfishError
from provision.redfish.ops.session import Node
from provision.redfish.resources import LogEntry

_SEL_WORD = re.compile(r"(^|[^a-z])sel([^a-z]|$)", re.IGNORECASE)


class LogServiceView(BaseModel):
    """What the choice of the SEL reads of one LogService."""

    model_config = ConfigDict(frozen=True)

    uri: str
    owner: str  # "system" or "manager"
    entry_type: str | None = None
    says_sel: bool = False
    entries: int | None = None  # None: not counted (or not readable)


def view(svc: Json, owner: str, entries: int | None = None, vendor_says: bool | None = None) -> LogServiceView:
    """What the choice reads of one LogService; `vendor_says` is the vendor plugin's word (VendorPlugin.is_sel)
    where its SEL-equivalent log has another name (HPE's IML)."""
    named = vendor_says or any(_SEL_WORD.search(str(svc.get(k) or "")) for k in ("Id", "Name"))
    return LogServiceView(uri=str(svc.get("@odata.id", "")).rstrip("/"), owner=owner,
                          entry_type=svc.get("LogEntryType") if isinstance(svc.get("LogEntryType"), str) else None,
                          says_sel=named or svc.get("LogEntryType") == "SEL", entries=entries)


def choose(services: list[LogServiceView]) -> LogServiceView | None:
    """Pure: the SEL among `services` (see the module doc), None when there is no log service at all."""
    sel = [s for s in services if s.says_sel]
    pool = sel or [s for s in services if s.owner == "system"]
    if not pool:
        return None
    return min(pool, key=lambda s: (not (s.entries or 0) > 0, s.entry_type != "SEL", s.owner != "system",
                                    services.index(s)))


def find_sel(node: Node) -> str:
    """URI of the log service that holds the SEL."""
    conn = node.conn
    raw: list[tuple[Json, str]] = [(s, "system") for s in _services(conn, node.system.uri)]
    for manager in _managers(conn, node):
        raw += [(s, "manager") for s in _services(conn, manager)]
    views = [view(s, owner, vendor_says=node.vendor.is_sel(s)) for s, owner in raw]
    candidates = [v for v in views if v.says_sel] or [v for v in views if v.owner == "system"]
    if len(candidates) > 1:  # count entries only where there is a choice to make
        counted = {v.uri: _entry_count(conn, s) for (s, _), v in zip(raw, views, strict=True) if v in candidates}
        views = [v.model_copy(update={"entries": counted.get(v.uri)}) for v in views]
    pick = choose(views)
    if pick is None:
        raise RedfishError(f"{conn.opts.where}: no SEL log service found under {node.system.uri} or the Managers")
    return pick.uri


def _managers(conn: Connector, node: Node) -> list[str]:
    coll = conn.get_optional(f"{ROOT}/Managers") or {}
    found = [str(m["@odata.id"]) for m in coll.get("Members") or [] if isinstance(m, dict) and m.get("@odata.id")]
    return found or ([node.manager_uri] if node.manager_uri else [])


def _services(conn: Connector, owner: str) -> list[Json]:
    res = conn.get_optional(owner) or {}
    link = (res.get("LogServices") or {}).get("@odata.id") if isinstance(res.get("LogServices"), dict) else None
    return conn.members(str(link)) if link else []


def _entry_count(conn: Connector, svc: Json) -> int | None:
    link = (svc.get("Entries") or {}).get("@odata.id") if isinstance(svc.get("Entries"), dict) else None
    coll = conn.get_optional(str(link)) if link else None
    if coll is None:
        return None
    count = coll.get("Members@odata.count")
    return int(count) if isinstance(count, int) else len(coll.get("Members") or [])


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
