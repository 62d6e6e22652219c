"""The one HTTP transport to a BMC: one urllib3 pool per BMC for every method, logins included.

No second stack beside it: proxies (HTTP(S)_PROXY / NO_PROXY, read once per BMC) go through urllib3's
ProxyManager (a CONNECT tunnel for https://), and redirects are followed here, to the BMC's own host only
(a token is never sent anywhere else), as requests followed them for the DMTF library before: 301/302 turn
a POST into a GET, 303 any method, 307/308 keep method and body; at most MAX_REDIRECTS. The environment's
~/.netrc is never read (requests read it, and its entry for the BMC replaced the Authorization header).

TLS is verified against the CA file the connector gives (one shared SSLContext per CA file); with
verification OFF (--insecure) no certificate is checked. Each request is sent once: retries, deadlines and
re-login are the connector's. A request that got no answer raises SendFailed, which says whether nothing
reached the BMC (the connection itself could not be made) and whether TLS verification failed.
At DEBUG each request and answer is logged with its auth headers masked and without its body.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import logging
import os
import ssl
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urljoin, urlsplit

import certifi
import urllib3

from provision.errors import ProvisionError
from provision.redact import MASK

LOG = logging.getLogger("provision.redfish")
MAX_REDIRECTS = 30  # as requests
Json = dict[str, Any]
_HIDDEN = frozenset({"authorization", "x-auth-token"})


@dataclass(frozen=True, slots=True)
class Response:
    """One HTTP answer: status, lower-cased headers, JSON body (None when not JSON; `problem` then
    says why, e.g. "HTML instead of JSON", when there was a body)."""

    status: int
    headers: dict[str, str]
    body: Any = None
    problem: str | None = None

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def json(self) -> Json:
        return self.body if isinstance(self.body, dict) else {}


class SendFailed(ProvisionError):
    """A request without an answer. `nothing_sent`: the connection could not be made, so the BMC never
    read the request; `tls`: the certificate did not verify; `kind`: what failed, for messages."""

    def __init__(self, kind: str, detail: str, *, nothing_sent: bool, tls: bool = False) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail, self.nothing_sent, self.tls = kind, detail, nothing_sent, tls


@functools.lru_cache(maxsize=16)
def ssl_context(cafile: str | None) -> ssl.SSLContext:
    """Verifying context for `cafile`; unverified (verification OFF) when None. Shared: thread-safe."""
    if cafile is None:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        return ctx
    return ssl.create_default_context(cafile=cafile)


def default_ca_bundle() -> str:
    """The CA bundle used when none is configured: REQUESTS_CA_BUNDLE/SSL_CERT_FILE, else certifi's."""
    for var in ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        if os.environ.get(var):
            return os.environ[var]
    return str(certifi.where())


def environ_proxy(address: str) -> str | None:
    """The proxy the environment names for `address` (https_proxy/http_proxy, all_proxy), or None where
    there is none or no_proxy covers the host (a name suffix, `*`, an address or a CIDR block)."""
    parts = urlsplit(address)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    host = parts.hostname or ""
    if not proxy or urllib.request.proxy_bypass(host if parts.port is None else f"{host}:{parts.port}"):
        return None
    no_proxy = os.environ.get("no_proxy") or os.environ.get("NO_PROXY") or ""
    return None if any(_in_block(host, entry.strip()) for entry in no_proxy.split(",")) else proxy


def _in_block(host: str, entry: str) -> bool:
    if "/" not in entry:
        return False
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False


def query(args: dict[str, str] | None) -> str:
    """The query string (`$expand=.($levels=1)` left readable, as the DMTF library sent it)."""
    if not args:
        return ""
    return urlencode(args, quote_via=quote, safe="/?:!$'()*+,;\\=")


def encode(body: Any, headers: dict[str, str]) -> bytes | None:
    """A request body: JSON, or multipart when the headers ask for it; sets Content-Type."""
    if body is None:
        return None
    if isinstance(body, bytes | str):
        return body.encode() if isinstance(body, str) else body
    if headers.get("Content-Type") == "multipart/form-data":  # parts: name -> (filename, data, content type)
        data, headers["Content-Type"] = urllib3.encode_multipart_formdata(body)
        return data
    headers["Content-Type"] = "application/json"
    return json.dumps(body).encode()


def decode(data: bytes, content_type: str | None) -> tuple[Any, str | None]:
    """(JSON body, None), or (None, what is wrong with it): HTML where JSON was due (a BMC's web
    server answering for its Redfish service, a login page, a proxy's error page), or malformed JSON.
    An empty body is (None, None)."""
    if not data:
        return None, None
    try:
        return json.loads(data), None
    except ValueError as exc:
        head = data[:64].lstrip().lower()
        if "html" in (content_type or "").lower() or head.startswith((b"<!doctype", b"<html", b"<")):
            return None, "HTML instead of JSON"
        return None, f"malformed JSON ({str(exc).split(':')[0]})"


class Transport:
    """One BMC's connection pool and its credentials (a session token, else a basic Authorization)."""

    def __init__(self, address: str, cafile: str | None, maxsize: int) -> None:
        """`cafile` None: TLS verification OFF."""
        self.base = address.rstrip("/")
        self.token: str | None = None
        self.session_uri: str | None = None
        self.basic: str | None = None
        kw: dict[str, Any] = {"maxsize": maxsize, "block": False, "retries": False}
        if self.base.startswith("https"):
            kw.update(ssl_context=ssl_context(cafile), cert_reqs="CERT_REQUIRED" if cafile else "CERT_NONE")
        proxy = environ_proxy(self.base)
        self._manager = urllib3.ProxyManager(proxy, **kw) if proxy else urllib3.PoolManager(**kw)
        self._absolute = bool(proxy) and self.base.startswith("http:")  # a plain-HTTP proxy takes whole URLs
        self._pool = self._manager.connection_from_url(self.base)
        self._host = urlsplit(self.base).hostname

    def forget(self) -> None:
        """Drop the credentials (before a new login)."""
        self.token = self.session_uri = self.basic = None

    def send(self, method: str, path: str, *, body: Any = None, headers: dict[str, str] | None = None,
             args: dict[str, str] | None = None, timeout: float) -> Response:
        """One request (and the redirects it answers with), never retried here."""
        hdrs = self._headers(headers or {})
        data = encode(body, hdrs)
        q = query(args)
        url = self.base + path.replace("//", "/") + (f"?{q}" if q else "")
        for _ in range(MAX_REDIRECTS + 1):
            raw = self._urlopen(method, url, hdrs, data, timeout)
            if not 300 <= raw.status < 400 or not raw.headers.get("location"):
                return _answer(raw)
            target = urljoin(url, raw.headers["location"])
            if urlsplit(target).hostname != self._host:
                return Response(raw.status, _lower(raw.headers), None,
                                f"redirected off the BMC to {urlsplit(target).hostname}; not followed")
            if raw.status == 303 or (raw.status in (301, 302) and method == "POST"):
                method, data = "GET", None
            url = target
        return Response(raw.status, _lower(raw.headers), None, f"more than {MAX_REDIRECTS} redirects")

    def close(self) -> None:
        self._manager.clear()

    def _headers(self, given: dict[str, str]) -> dict[str, str]:
        out = dict(given)
        if self.token:
            out["X-Auth-Token"] = self.token
        elif self.basic:
            out["Authorization"] = self.basic
        have = {k.lower() for k in out}
        if "accept" not in have:
            out["Accept"] = "*/*"
        if "odata-version" not in have:
            out["OData-Version"] = "4.0"
        return out

    def _urlopen(self, method: str, url: str, headers: dict[str, str], data: bytes | None, timeout: float) -> Any:
        if LOG.isEnabledFor(logging.DEBUG):
            shown = {k: MASK if k.lower() in _HIDDEN else v for k, v in headers.items()}
            LOG.debug("HTTP REQUEST (%s) for %s: headers %s, body %d bytes", method, url, shown, len(data or b""))
        pool, target = self._pool, url
        if not url.startswith(self.base + "/"):
            pool = self._manager.connection_from_url(url)  # redirected to another port or scheme of the BMC
        if not self._absolute:
            target = url[len(self.base):] if pool is self._pool else _request_uri(url)
        try:
            raw = pool.urlopen(method, target, body=data, headers=headers, timeout=timeout, retries=False,
                               redirect=False, assert_same_host=False)
        except urllib3.exceptions.SSLError as exc:
            raise SendFailed("SSLError", str(exc), nothing_sent=True, tls=True) from None
        except urllib3.exceptions.ProxyError as exc:
            raise SendFailed("ProxyError", str(exc), nothing_sent=False) from None
        except urllib3.exceptions.ConnectTimeoutError as exc:  # NewConnectionError is one: refused, unreachable
            raise SendFailed("ConnectionError", str(exc), nothing_sent=True) from None
        except urllib3.exceptions.ReadTimeoutError as exc:
            raise SendFailed("ReadTimeout", str(exc), nothing_sent=False) from None
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise SendFailed("ConnectionError", str(exc), nothing_sent=False) from None
        LOG.debug("HTTP RESPONSE for %s: %s", url, raw.status)
        return raw


def _request_uri(url: str) -> str:
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def _lower(headers: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in headers.items()}


def _answer(raw: Any) -> Response:
    hdrs = _lower(raw.headers)
    body, problem = decode(raw.data, hdrs.get("content-type"))
    return Response(status=int(raw.status), headers=hdrs, body=body, problem=problem)
