"""Seed trees: load a DMTF mockup-creator layout once, share it; per-BMC copy-on-write overlays.

A `SeedTree` is immutable after construction and shared by every BMC seeded from it.
A `Resources` view belongs to one BMC: reads fall through to the seed, writes land in a
small per-BMC delta (copy-on-write), so a thousand BMCs cost a thousand deltas, not trees.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any

from provision.lab.bmcsim import capture
from provision.lab.bmcsim.capture import Raw

Json = dict[str, Any]
ROOT = "/redfish/v1"


def norm(path: str) -> str:
    """Canonical resource path: no trailing slash, no query, no fragment."""
    path = path.split("?", 1)[0].split("#", 1)[0]
    while len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    return path


def load_dir(tree_dir: Path) -> dict[str, Json]:
    """The JSON resources of a mockup, {uri: resource} (see capture.py for the layout and its rules)."""
    return capture.load(tree_dir).resources


def compute_etag(obj: Json) -> str:
    body = {k: v for k, v in obj.items() if k != "@odata.etag"}
    digest = hashlib.md5(json.dumps(body, sort_keys=True).encode(), usedforsecurity=False)
    return f'"{digest.hexdigest()[:20]}"'


def clone(obj: Json) -> Json:
    """A deep copy of a JSON resource (a C round trip: several times faster than copy.deepcopy)."""
    return json.loads(json.dumps(obj))


def etags_match(given: str, etag: str | None) -> bool:
    """An If-Match value names this ETag (weak or strong: `W/` is ignored on both sides)."""
    return etag is not None and given.removeprefix("W/") == etag.removeprefix("W/")


def captured(obj: Json, file: Path) -> tuple[bytes, str] | None:
    """The file's bytes and ETag of a resource still as captured; None if it was changed since it was read
    (by the seed, or the file on disk since the capture was loaded).

    The ETag is the one the capture's body states (`@odata.etag`), so body and header agree as a BMC's do;
    a body without one gets the computed tag."""
    try:
        data = file.read_bytes()
        if json.loads(data) != obj:
            return None
    except (OSError, ValueError):
        return None
    tag = obj.get("@odata.etag")
    return data, tag if isinstance(tag, str) and tag else compute_etag(obj)


def encode(obj: Json) -> tuple[bytes, str]:
    """Serialized body and strong ETag of one resource (the body carries @odata.etag when it had one)."""
    etag = compute_etag(obj)
    if "@odata.etag" in obj:
        obj = {**obj, "@odata.etag": etag}
    return json.dumps(obj).encode(), etag  # compact: the C encoder (indent= takes the ~5x slower Python one)


class SeedTree:
    """An immutable, shareable set of resources plus lazily cached encodings."""

    def __init__(self, name: str, resources: dict[str, Json], raw: dict[str, Raw] | None = None,
                 headers: dict[str, dict[str, str]] | None = None, source: dict[str, Path] | None = None) -> None:
        self.name = name
        self._res = resources
        self.raw = raw or {}  # answers served byte for byte (captured XML, malformed JSON, errors)
        self.headers = headers or {}  # captured GET headers per URI (Mockup-Server headers.json)
        self._source = source or {}  # as captured: each resource's file, its bytes served while unchanged
        self._enc: dict[str, tuple[bytes, str]] = {}
        self._derived: dict[Hashable, tuple[bytes, frozenset[str]]] = {}  # see Resources.derived
        self.action_targets = _index_actions(resources)

    def get(self, uri: str) -> Json | None:
        return self._res.get(uri)

    def encoded(self, uri: str) -> tuple[bytes, str] | None:
        hit = self._enc.get(uri)
        if hit is None and uri in self._res:
            file = self._source.pop(uri, None)  # read on the first GET: the seed holds no second copy
            hit = captured(self._res[uri], file) if file is not None else None
            self._enc[uri] = hit = hit or encode(self._res[uri])
        return hit

    def uris(self) -> Iterator[str]:
        return iter(self._res)

    def __contains__(self, uri: str) -> bool:
        return uri in self._res

    def __len__(self) -> int:
        return len(self._res)


def _index_actions(resources: dict[str, Json]) -> dict[str, tuple[str, str]]:
    """Map each action target URI to (owning resource, short action name, e.g. ComputerSystem.Reset)."""
    out: dict[str, tuple[str, str]] = {}
    for uri, res in resources.items():
        for key, action in _actions(res):
            short = key.split("#")[-1]
            out[norm(action["target"])] = (uri, short)
    return out


def _actions(res: Json) -> Iterator[tuple[str, Json]]:
    acts = res.get("Actions")
    if not isinstance(acts, dict):
        return
    for key, val in acts.items():
        if key == "Oem" and isinstance(val, dict):
            for okey, oval in val.items():
                if isinstance(oval, dict) and "target" in oval:
                    yield okey, oval
        elif isinstance(val, dict) and "target" in val:
            yield key, val


class Resources:
    """One BMC's view of a seed tree: reads fall through, writes are copy-on-write deltas."""

    __slots__ = ("_deleted", "_delta", "_enc", "_shallow", "seed")

    def __init__(self, seed: SeedTree) -> None:
        self.seed = seed
        self._delta: dict[str, Json] = {}
        self._deleted: set[str] = set()
        self._enc: dict[str, tuple[bytes, str]] = {}
        self._shallow: set[str] = set()  # deltas that still share their nested objects with the seed

    def get(self, uri: str) -> Json | None:
        if uri in self._delta:
            return self._delta[uri]
        if uri in self._deleted:
            return None
        return self.seed.get(uri)

    def exists(self, uri: str) -> bool:
        return self.get(uri) is not None

    def own(self, uri: str) -> bool:
        """Has this BMC changed, added or deleted `uri` (so it no longer reads as the seed's)?"""
        return uri in self._delta or uri in self._deleted

    def derived(self, key: Hashable, build: Callable[[Callable[[str], Json | None]], bytes]) -> bytes:
        """`build(fetch)`, shared by every BMC of this seed while none of the resources it fetched is
        this BMC's own: a thousand BMCs of one model then share one `$expand` of an unchanged
        FirmwareInventory (a hundred members) instead of building it a thousand times."""
        hit = self.seed._derived.get(key)
        if hit is not None and not any(self.own(u) for u in hit[1]):
            return hit[0]
        took: set[str] = set()

        def fetch(uri: str) -> Json | None:
            took.add(uri)
            return self.get(uri)

        data = build(fetch)
        if not any(self.own(u) for u in took):
            self.seed._derived[key] = (data, frozenset(took))
        return data

    def encoded(self, uri: str) -> tuple[bytes, str] | None:
        if uri in self._delta:
            hit = self._enc.get(uri)
            if hit is None:
                hit = self._enc[uri] = encode(self._delta[uri])
            return hit
        if uri in self._deleted:
            return None
        return self.seed.encoded(uri)

    def etag(self, uri: str) -> str | None:
        hit = self.encoded(uri)
        return hit[1] if hit else None

    def mutable(self, uri: str) -> Json:
        """The BMC's own copy of a resource, created on first write; call `touched` after changing it."""
        if uri in self._shallow:
            self._delta[uri] = clone(self._delta[uri])
            self._shallow.discard(uri)
        elif uri not in self._delta:
            self._delta[uri] = clone(self._base(uri))
        self._enc.pop(uri, None)
        return self._delta[uri]

    def _base(self, uri: str) -> Json:
        base = self.seed.get(uri)
        if base is None or uri in self._deleted:
            raise KeyError(uri)
        return base

    def _own_members(self, collection: str) -> Json:
        """The collection as this BMC's own top level with its own Members list; the members themselves
        stay shared (never changed in place). A captured SEL with its entries inline is tens of kB:
        cloning it whole on a BMC's first log entry was most of the simulator's work when a wave starts."""
        if collection not in self._delta:
            base = self._base(collection)
            self._delta[collection] = {**base, "Members": list(base.get("Members") or [])}
            self._shallow.add(collection)
        self._enc.pop(collection, None)
        return self._delta[collection]

    def put(self, uri: str, obj: Json) -> None:
        self._delta[uri] = obj
        self._deleted.discard(uri)
        self._shallow.discard(uri)
        self._enc.pop(uri, None)

    def delete(self, uri: str) -> None:
        self._delta.pop(uri, None)
        self._enc.pop(uri, None)
        self._shallow.discard(uri)
        self._deleted.add(uri)

    def add_member(self, collection: str, member: str) -> None:
        coll = self._own_members(collection)
        members = coll.setdefault("Members", [])
        members.append({"@odata.id": member})
        coll["Members@odata.count"] = len(members)

    def remove_member(self, collection: str, member: str) -> None:
        coll = self._own_members(collection)
        coll["Members"] = [m for m in coll.get("Members", []) if m.get("@odata.id") != member]
        coll["Members@odata.count"] = len(coll["Members"])

    def delta_size(self) -> int:
        return len(self._delta)
