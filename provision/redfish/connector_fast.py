"""Requests without the HTTP stack of requests and the DMTF library: one urllib3 pool per connector.

Through requests + the `redfish` library a GET costs ~1.2 ms of CPU here and a JSON POST ~1.8 ms; on
a plain urllib3 pool ~0.6 and ~1.0 ms (medians, the same connector against the lab simulator, library
path and pool alternated in one process). Campaigns over hundreds of BMCs are bound by that CPU (one
GIL), so the connector sends GET, POST, PATCH and DELETE here, on one connection per BMC, session
login and logout included (the library keeps the session), PUT and basic auth too. Only what the pool
cannot do stays on the DMTF library's own transport: a request through a proxy, and a redirect.
Same semantics: the library's own auth headers, its query-string and body encodings, TLS verified
with the same CA file (one shared SSLContext per CA file), errors raised as the library would raise
them (RetriesExhaustedError caused by the requests exception of the same kind).
"""

from __future__ import annotations

import functools
import json
import ssl
from typing import Any
from urllib.parse import quote, urlencode

import requests
import urllib3
from redfish.rest.v1 import (
    InvalidCredentialsError,
    RedfishPasswordChangeRequiredError,
    RetriesExhaustedError,
    SessionCreationError,
    search_message,
)
from requests_toolbelt import MultipartEncoder


@functools.lru_cache(maxsize=16)
def ssl_context(cafile: str | None) -> ssl.SSLContext:
    """Verifying context for `cafile`; unverified (verification OFF) when None. Shared: thread-safe."""
    if cafile is None:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    return ssl.create_default_context(cafile=cafile)


def make_pool(address: str, cafile: str | None, maxsize: int) -> urllib3.HTTPConnectionPool:
    url = urllib3.util.parse_url(address)
    host = str(url.host)
    if url.scheme == "https":
        return urllib3.HTTPSConnectionPool(host, url.port or 443, ssl_context=ssl_context(cafile), maxsize=maxsize,
                                           block=False, retries=False,
                                           cert_reqs="CERT_REQUIRED" if cafile else "CERT_NONE")
    return urllib3.HTTPConnectionPool(host, url.port or 80, maxsize=maxsize, block=False, retries=False)


def query(args: dict[str, str | None] | None) -> str:
    """The query string as the DMTF library builds it (`$expand=.($levels=1)` left readable)."""
    if not args:
        return ""
    text = urlencode({k: v for k, v in args.items() if v is not None}, quote_via=quote, safe="/?:!$'()*+,;\\=")
    bare = [k for k, v in args.items() if v is None]
    return "&".join([p for p in (text, *bare) if p])


def request_headers(headers: dict[str, str], session_key: str | None, authorization: str | None) -> dict[str, str]:
    """`headers` plus what the DMTF library adds to every request: its session token (else the basic
    Authorization), Accept and OData-Version unless given."""
    out = dict(headers)
    if session_key:
        out["X-Auth-Token"] = session_key
    elif authorization:
        out["Authorization"] = authorization
    given = {k.lower() for k in out}
    if "accept" not in given:
        out["Accept"] = "*/*"
    if "odata-version" not in given:
        out["OData-Version"] = "4.0"
    return out


def get(pool: urllib3.HTTPConnectionPool, path: str, headers: dict[str, str], timeout: float) -> Any | None:
    """One GET; None when it redirected (the caller then asks the library, which follows redirects)."""
    return send(pool, "GET", path, headers, None, timeout)


def encode(body: Any, headers: dict[str, str]) -> bytes | None:
    """A request body as the library encodes it (JSON, or multipart when the headers ask for it);
    sets Content-Type. Raises TypeError for the kinds left to the library."""
    if isinstance(body, dict | list):
        if headers.get("Content-Type") == "multipart/form-data":
            enc = MultipartEncoder(body)
            headers["Content-Type"] = enc.content_type
            return bytes(enc.to_string())
        headers["Content-Type"] = "application/json"
        return json.dumps(body).encode()
    if body is None:
        return None
    raise TypeError(type(body).__name__)


def send(pool: urllib3.HTTPConnectionPool, method: str, path: str, headers: dict[str, str], data: bytes | None,
         timeout: float) -> Any | None:
    """One request, never retried here; None when it redirected (left to the library)."""
    try:
        raw = pool.urlopen(method, path, body=data, headers=headers, timeout=timeout, retries=False,
                           redirect=False)
    except urllib3.exceptions.SSLError as exc:
        raise RetriesExhaustedError() from requests.exceptions.SSLError(str(exc))
    except urllib3.exceptions.ReadTimeoutError as exc:
        raise RetriesExhaustedError() from requests.exceptions.ReadTimeout(str(exc))
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise RetriesExhaustedError() from requests.exceptions.ConnectionError(exc)  # kept: see nothing_sent
    if 300 <= raw.status < 400:
        return None
    return raw


def nothing_sent(cause: BaseException | None) -> bool:
    """True when a failed request is known never to have reached the BMC: the connection itself could not
    be made (refused, unreachable, name not resolved, connect timeout), on this pool or through requests.
    A connection dropped or timed out once the request was written is not: the BMC may have carried it out."""
    if isinstance(cause, requests.exceptions.ConnectTimeout):
        return True
    if not isinstance(cause, requests.exceptions.ConnectionError) or isinstance(cause, requests.exceptions.ProxyError):
        return False
    inner = cause.args[0] if cause.args else None
    if isinstance(inner, urllib3.exceptions.MaxRetryError):
        inner = inner.reason
    return isinstance(inner, urllib3.exceptions.ConnectTimeoutError)  # NewConnectionError is one


def body(data: bytes) -> Any:
    return decode(data, None)[0]


def decode(data: bytes | str, content_type: str | None) -> tuple[Any, str | None]:
    """(JSON body, None), or (None, what is wrong with it): HTML where JSON was due (a BMC's web
    server answering for its Redfish service, a login page, a proxy's error page), or malformed JSON.
    An empty body is (None, None)."""
    if not data:
        return None, None
    try:
        return json.loads(data), None
    except ValueError as exc:
        head = (data[:64].lstrip().lower() if isinstance(data, bytes) else data[:64].lstrip().lower().encode())
        if "html" in (content_type or "").lower() or head.startswith((b"<!doctype", b"<html", b"<")):
            return None, "HTML instead of JSON"
        return None, f"malformed JSON ({str(exc).split(':')[0]})"


def session_from_login(status: int, headers: dict[str, str], answer: Any) -> tuple[str | None, str | None]:
    """(session key, session location) from the answer to a session login POST (lower-cased headers),
    or the error the DMTF library's login raises for that answer."""
    answer = answer if isinstance(answer, dict) else {}
    error = answer["error"] if isinstance(answer.get("error"), dict) else {}
    for info in (answer, error):
        item = search_message(info, "Base", "PasswordChangeRequired") if "@Message.ExtendedInfo" in info else None
        if item is not None:
            raise RedfishPasswordChangeRequiredError("Password Change Required\n", item["MessageArgs"][0])
    key, ok = headers.get("x-auth-token"), status in (200, 201, 202, 204)
    if not key and not ok:
        if status == 401:
            raise InvalidCredentialsError("HTTP 401 Unauthorized returned: Invalid credentials supplied")
        raise SessionCreationError(f"HTTP {status}: Failed to create the session\n{_error_text(error)}")
    return key, headers.get("location") or (answer.get("@odata.id") if ok else None)


def _error_text(error: dict[str, Any]) -> str:
    infos = error.get("@Message.ExtendedInfo") or [{}]
    return str((infos[0] if isinstance(infos[0], dict) else {}).get("Message") or error.get("message") or "")
