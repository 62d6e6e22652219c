"""Read a Redfish mockup directory as its tools write it: {URI: resource} plus what is not a resource.

The layout (from the DMTF Redfish-Mockup-Creator and Redfish-Mockup-Server READMEs and code):
- every URI is a folder holding `index.json` (JSON answers) or `index.xml` (CSDL such as `$metadata`);
  a URI that itself ends in `.json` (`JsonSchemas/.../X.json`, `registries/Base.json`) is such a folder too;
- a *tall* mockup has `redfish/v1/` at its top (and may hold other top-level URIs beside it, e.g. the
  Supermicro capture's `/registries/...`); a *short* one is the service root itself;
- `headers.json` beside an index: the response headers per method, `{"GET": {"Allow": "GET", ...}}`
  (Mockup-Server `-X`); `time.json` (response times, Mockup-Server `-T`) is read by nothing here;
- `error.txt` (Mockup-Creator, when the BMC answered an error): `HTTP <status>`, header lines, an empty
  line, the body.
- a folder named `X?$skip=N` (a page a capture fetched with a query) is the URI `X?$skip=N`.

Rules of this project's, not of the tools (the tools refuse these; a real BMC produced them):
- a malformed `index.json` (a BMC that answered truncated JSON) or one whose top level is not an object
  is served as captured: status 200, its bytes, `application/json`, and a warning naming the file.
  Nothing stops on it; the resource is only not writable.
- loose `X.json` files other than the above (the pruned built-in trees' registry files) are the URI `X`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provision.errors import InputError

Json = dict[str, Any]
ROOT = "/redfish/v1"
JSON = "application/json; charset=utf-8"
XML = "application/xml; charset=utf-8"
SKIP_HEADERS = frozenset({"connection", "keep-alive", "content-length", "transfer-encoding", "date",
                          "etag", "content-type", "set-cookie", "x-auth-token"})
SIDE_FILES = frozenset({"headers.json", "time.json", "explorer_config.json"})


@dataclass(frozen=True, slots=True)
class Raw:
    """An answer served byte for byte: captured XML, malformed JSON, a captured error."""

    status: int
    body: bytes
    content_type: str = JSON
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(slots=True)
class Capture:
    resources: dict[str, Json] = field(default_factory=dict)
    raw: dict[str, Raw] = field(default_factory=dict)
    headers: dict[str, dict[str, str]] = field(default_factory=dict)  # URI -> captured GET headers
    warnings: list[str] = field(default_factory=list)
    source: dict[str, Path] = field(default_factory=dict)  # URI -> its index.json (served as its bytes)


def find_root(tree_dir: Path) -> tuple[Path, str]:
    """(the folder URIs are relative to, the URI prefix of that folder)."""
    if (tree_dir / "redfish" / "v1" / "index.json").is_file():
        return tree_dir, ""
    if (tree_dir / "index.json").is_file():
        return tree_dir, ROOT
    raise InputError(f"{tree_dir}: not a Redfish mockup (no redfish/v1/index.json or index.json)")


def load(tree_dir: Path) -> Capture:
    """Every answer of the mockup; InputError only for a folder that is no mockup at all."""
    base, prefix = find_root(tree_dir)
    out = Capture()
    loose: list[tuple[Path, str]] = []
    for folder, _dirs, files in os.walk(base):
        here = Path(folder)
        uri = _uri(prefix, here.relative_to(base).parts)
        for name in sorted(files):
            if not _one(out, here / name, name, uri) and name.endswith(".json") and name not in SIDE_FILES:
                loose.append((here / name, f"{uri.rstrip('/')}/{name[:-5]}"))
    for file, uri in loose:  # last: a loose X.json wins over a folder X/ (as the pruned trees expect)
        _index(out, file, uri)
    if ROOT not in out.resources:
        raise InputError(f"{tree_dir}: no service root ({ROOT} is missing or not a JSON object)")
    return out


def _uri(prefix: str, parts: tuple[str, ...]) -> str:
    return "/".join((prefix, *parts)) if parts else (prefix or "/")


def _one(out: Capture, file: Path, name: str, uri: str) -> bool:
    """Read one file of the layout; False for a file that is not one (loose files, READMEs)."""
    if name == "index.json":
        _index(out, file, uri)
    elif name == "index.xml":
        out.raw[uri] = Raw(200, _bytes(out, file), XML)
    elif name == "error.txt":
        out.raw[uri] = _error(out, file)
    elif name == "headers.json":
        out.headers[uri] = _headers(out, file)
    else:
        return False
    return True


def _bytes(out: Capture, file: Path) -> bytes:
    try:
        return file.read_bytes()
    except OSError as exc:
        out.warnings.append(f"{file}: unreadable ({exc.__class__.__name__}); not served")
        return b""


def _index(out: Capture, file: Path, uri: str) -> None:
    data = _bytes(out, file)
    try:
        obj = json.loads(data)
    except ValueError as exc:
        out.raw[uri] = Raw(200, data)
        out.warnings.append(f"{file}: malformed JSON ({_why(exc)}); {uri} is served as captured "
                            f"(status 200, its {len(data)} bytes)")
        return
    if not isinstance(obj, dict):
        out.raw[uri] = Raw(200, data)
        out.warnings.append(f"{file}: top level is a JSON {type(obj).__name__}, not an object; {uri} "
                            "is served as captured")
        return
    out.resources[uri] = obj
    out.source[uri] = file


def _why(exc: ValueError) -> str:
    return str(exc).split(":", 1)[0] if isinstance(exc, json.JSONDecodeError) else exc.__class__.__name__


def _error(out: Capture, file: Path) -> Raw:
    """`HTTP 405` / `Name: value` lines / empty line / body (Mockup-Creator's error.txt)."""
    text = _bytes(out, file).decode("utf-8", errors="replace")
    head, _sep, body = text.partition("\n\n")
    lines = head.splitlines()
    words = lines[0].split() if lines else []
    status = int(words[1]) if len(words) > 1 and words[0].upper() == "HTTP" and words[1].isdigit() else 0
    if not 100 <= status <= 599:
        out.warnings.append(f"{file}: no 'HTTP <status>' first line; served as 500")
        status = 500
    headers = [(k.strip(), v.strip()) for k, _s, v in (ln.partition(":") for ln in lines[1:]) if k.strip()]
    ctype = next((v for k, v in headers if k.lower() == "content-type"), JSON)
    return Raw(status, body.encode(), ctype, tuple((k, v) for k, v in headers if k.lower() not in SKIP_HEADERS))


def _headers(out: Capture, file: Path) -> dict[str, str]:
    try:
        data = json.loads(file.read_bytes())
    except (OSError, ValueError) as exc:
        out.warnings.append(f"{file}: unreadable headers ({exc.__class__.__name__}); ignored")
        return {}
    get = data.get("GET") if isinstance(data, dict) else None
    if not isinstance(get, dict):
        return {}
    return {str(k): str(v) for k, v in get.items() if str(k).lower() not in SKIP_HEADERS}
