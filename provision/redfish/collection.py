"""Reading a BMC's resources: one that must be read, one that may be missing, collections and their pages.

A collection's members come expanded (`$expand`, clipped to the service's ProtocolFeaturesSupported) or by
bounded parallel GETs; its pages are followed through `Members@odata.nextLink` with a visited set and a page
cap. A linked resource the BMC does not give (an HTTP error after retries, HTML, malformed JSON) is recorded
in the connector's stats and the rest is read. The requests themselves are the connector's (retries,
deadline, re-login); this class is what Connector reads with.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from provision import redact
from provision.redfish.errors import (
    RedfishHttpError,
    RedfishNotFound,
    RedfishPagingError,
    RedfishPasswordChangeRequired,
    RedfishUnreadable,
)
from provision.redfish.transport import Json, Response

if TYPE_CHECKING:
    from provision.redfish.connector import ConnectorOptions

LOG = logging.getLogger("provision.redfish")
EXPAND_REFUSED = frozenset({400, 404, 405, 501})  # answers to a `$expand` read that mean "not this query"
_LINK_KEYS = frozenset({"@odata.id", "@odata.etag", "@odata.type"})


class Unreadable(BaseModel):
    """A linked resource the BMC did not give: HTTP error after retries, HTML, malformed JSON."""

    model_config = ConfigDict(frozen=True)

    uri: str
    reason: str


@dataclass
class Stats:
    """What the connector sent: HTTP attempts, retries, re-logins; what it could not read."""

    requests: int = 0
    retries: int = 0
    relogins: int = 0
    missing: list[str] = field(default_factory=list)
    unreadable: list[Unreadable] = field(default_factory=list)


class CollectionReads:
    """The reading half of Connector: resources, collections, pages, `$expand`."""

    opts: ConnectorOptions
    stats: Stats
    root: Json

    def __init__(self) -> None:
        self._record_lock = threading.Lock()
        self._expand_works: bool | None = None  # None until one `$expand` read answers; False: never again
        self._expand_probe = threading.Lock()  # the first `$expand` read goes alone (one refusal, not one per thread)

    def request(self, method: str, uri: str, *, args: dict[str, str] | None = None) -> Response:
        raise NotImplementedError  # Connector's

    def deadline(self, seconds: float | None = None) -> AbstractContextManager[None]:
        raise NotImplementedError  # Connector's

    # ---- one resource ----------------------------------------------------------------------------
    def get(self, uri: str, args: dict[str, str] | None = None) -> Json:
        """A resource that must be read: a 2xx answer that is not a JSON object raises RedfishUnreadable
        naming the URI and what was wrong (HTML, malformed JSON, empty)."""
        resp = self.request("GET", uri, args=args)
        if isinstance(resp.body, dict):
            return resp.body
        why = unreadable_why(resp)
        raise RedfishUnreadable(redact.scrub(f"{self.opts.where}: GET {uri}: {why}"), uri=uri, status=resp.status,
                                reason=why)

    def get_optional(self, uri: str) -> Json | None:
        """A linked resource, read if the BMC gives it: None for 404 (recorded in stats.missing) and for
        an answer that cannot be read (recorded in stats.unreadable). Connection, TLS and deadline
        failures still raise: the BMC, not the resource, is then the trouble."""
        try:
            return self.get(uri)
        except RedfishHttpError as exc:
            if not self.record(uri, exc):
                raise
            return None

    def record(self, uri: str, exc: RedfishHttpError) -> bool:
        """Note a resource that could not be read; False when `exc` is not about the resource itself."""
        if isinstance(exc, RedfishPasswordChangeRequired):
            return False  # the account, not the resource: nothing else will read either
        if isinstance(exc, RedfishNotFound):
            with self._record_lock:
                self.stats.missing.append(uri)
            return True
        if exc.status is None:
            return False
        self._unreadable(uri, exc.reason or f"HTTP {exc.status}")
        return True

    def _unreadable(self, uri: str, reason: str) -> None:
        reason = " ".join(reason.split())[:160]
        LOG.warning("%s: %s unreadable: %s", self.opts.where, uri, reason)
        with self._record_lock:
            if all(u.uri != uri for u in self.stats.unreadable):
                self.stats.unreadable.append(Unreadable(uri=uri, reason=reason))

    def get_many(self, uris: Iterable[str]) -> dict[str, Json | None]:
        """GET several URIs, at most `max_parallel` at a time; missing or unreadable ones answer None."""
        todo = list(dict.fromkeys(uris))
        if len(todo) <= 1:
            return {u: self.get_optional(u) for u in todo}
        with ThreadPoolExecutor(max_workers=min(self.opts.max_parallel, len(todo))) as pool:
            return dict(zip(todo, pool.map(self.get_optional, todo), strict=True))

    def parallel(self, jobs: dict[str, Callable[[], Any]]) -> dict[str, Any]:
        """Run independent read jobs concurrently (HTTP concurrency stays bounded by the connector)."""
        if len(jobs) <= 1:
            return {k: f() for k, f in jobs.items()}
        with ThreadPoolExecutor(max_workers=min(8, len(jobs))) as pool:
            futures = {k: pool.submit(f) for k, f in jobs.items()}
            return {k: fut.result() for k, fut in futures.items()}

    # ---- collections -----------------------------------------------------------------------------
    def expand_args(self, levels: int) -> dict[str, str] | None:
        """`$expand` query for `levels`, clipped to what ProtocolFeaturesSupported allows; None if not,
        or once this BMC has refused an expanded read (see get_expanded)."""
        if not self.opts.use_expand or self._expand_works is False:
            return None
        eq = (self.root.get("ProtocolFeaturesSupported") or {}).get("ExpandQuery") or {}
        if not eq.get("NoLinks") and not eq.get("ExpandAll"):
            return None
        token = "." if eq.get("NoLinks") else "*"
        if not eq.get("Levels"):
            return {"$expand": token}
        n = max(1, min(levels, int(eq.get("MaxLevels") or 1)))
        return {"$expand": f"{token}($levels={n})"}

    def members(self, uri: str, levels: int = 1) -> list[Json]:
        """Every member of a collection as a full resource: expanded where allowed, else parallel GETs;
        every page (Members@odata.nextLink), within the command's deadline. A page that cannot be read is
        recorded and ends the walk; a link back to a page already read, or more than `max_pages` pages,
        raises."""
        with self.deadline():
            coll = self.get_optional_expanded(uri, levels)
            if coll is None:
                return []
            return self.resolve(self._pages(uri, coll))

    def members_or_unreadable(self, uri: str, levels: int = 1) -> list[Json]:
        """members() for a reader that keeps going: a collection whose paging does not end (a loop, too many
        pages) is recorded unreadable (stats.unreadable, by its URI) and answers no member, as one the BMC
        answered with an error or malformed JSON."""
        try:
            return self.members(uri, levels)
        except RedfishPagingError as exc:
            self._unreadable(uri, exc.reason)
            return []

    def _pages(self, uri: str, coll: Json) -> list[Any]:
        links = list(_list(coll.get("Members")))
        seen = {page_key(uri)}
        next_link = coll.get("Members@odata.nextLink")
        while next_link:
            page_uri = page_key(str(next_link))
            why = (f"Members@odata.nextLink {page_uri} points at a page already read (a paging loop)"
                   if page_uri in seen else f"more than {self.opts.max_pages} pages (next {page_uri})"
                   if len(seen) >= self.opts.max_pages else None)
            if why:
                raise RedfishPagingError(f"{self.opts.where}: {uri}: {why}; stopped", uri=uri, reason=why)
            seen.add(page_uri)
            page = self.get_optional(page_uri)
            if page is None:
                break
            links += _list(page.get("Members"))
            next_link = page.get("Members@odata.nextLink")
        return links

    def get_expanded(self, uri: str, levels: int = 1) -> Json:
        """`uri` read with `$expand` where the service advertises it. A BMC that advertises the query and
        then refuses it (400/404/405/501; seen with sushy-static, which looks the query up as part of the
        path, and reported for real BMCs whose ExpandQuery outruns their firmware) is read again without
        it, and when that read works the connector stops sending `$expand` for the rest of the
        conversation (a collection that is simply missing answers 404 both ways and changes nothing)."""
        args = self.expand_args(levels)
        if args is None:
            return self.get(uri)
        if self._expand_works:
            return self._get_or_plain(uri, args)
        with self._expand_probe:  # until one answer says whether the BMC takes the query
            args = self.expand_args(levels)
            return self._get_or_plain(uri, args) if args is not None else self.get(uri)

    def _get_or_plain(self, uri: str, args: dict[str, str]) -> Json:
        try:
            body = self.get(uri, args=args)
        except RedfishHttpError as exc:
            if exc.status not in EXPAND_REFUSED:
                raise
            plain = self.get(uri)  # still failing: the resource itself is missing, not the query refused
            if self._expand_works is not False:
                LOG.info("%s: GET %s with $expand -> HTTP %s, without it 200; no $expand from now on",
                         self.opts.where, uri, exc.status)
            self._expand_works = False
            return plain
        self._expand_works = True
        return body

    def get_optional_expanded(self, uri: str, levels: int = 1) -> Json | None:
        """get_expanded for a linked collection: None when missing or unreadable (recorded in stats)."""
        try:
            return self.get_expanded(uri, levels)
        except RedfishHttpError as exc:
            if not self.record(uri, exc):
                raise
            return None

    def resolve(self, links: Iterable[Any]) -> list[Json]:
        """Links (possibly already expanded) as full resources, in order; missing ones skipped."""
        items = [m for m in links if isinstance(m, dict) and m.get("@odata.id")]
        todo = [str(m["@odata.id"]) for m in items if not is_expanded(m)]
        fetched = self.get_many(todo)
        out: list[Json] = []
        for m in items:
            full = m if is_expanded(m) else fetched.get(str(m["@odata.id"]))
            if full is not None:
                out.append(full)
        return out

    def link(self, obj: Json, key: str) -> Json | None:
        """The resource a navigation property points at (embedded if expanded, else fetched)."""
        ref = obj.get(key)
        if not isinstance(ref, dict) or not ref.get("@odata.id"):
            return None
        return ref if is_expanded(ref) else self.get_optional(str(ref["@odata.id"]))


def is_expanded(obj: Any) -> bool:
    """True when a link object carries the resource itself, not only its @odata.id."""
    return isinstance(obj, dict) and not obj.keys() <= _LINK_KEYS


def unreadable_why(resp: Response) -> str:
    if resp.problem:
        return resp.problem
    if resp.body is None:
        return f"an empty answer (HTTP {resp.status})"
    return f"a JSON {type(resp.body).__name__} instead of an object"


def page_key(link: str) -> str:
    """A nextLink as the path?query to GET (an absolute URL is cut to its path and query)."""
    parts = urlsplit(link)
    path = parts.path if parts.scheme else link.split("?", 1)[0]
    query = parts.query
    return f"{path.rstrip('/') or '/'}" + (f"?{query}" if query else "")


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []
