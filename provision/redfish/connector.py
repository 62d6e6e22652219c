"""The one Redfish connector, on the DMTF `redfish` library.

Adds what the library lacks: TLS verified by default (the library sends `verify=False` unless a CA file
is given, so a CA bundle is always passed), one re-login on 401, retries with exponential backoff and
jitter on connection errors and 5xx (Retry-After honoured), per-request timeouts, ETag/If-Match on
PATCH, `$expand` where the service advertises it and bounded parallel GETs where it does not, a request
counter, and secrets scrubbed from every log line and error.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import random
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import redfish
import requests
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator
from redfish.rest.v1 import (
    InvalidCredentialsError,
    RedfishPasswordChangeRequiredError,
    RetriesExhaustedError,
    RisObject,
    SessionCreationError,
)

from provision.redfish import connector_fast as fast
from provision.redfish import redact
from provision.redfish.errors import (
    RedfishAuthError,
    RedfishNotFound,
    RedfishTlsError,
    RedfishUnavailable,
    raise_for_status,
)
from provision.redfish.retry import RETRY_STATUSES, RetryPolicy

LOG = logging.getLogger("provision.redfish")
ROOT = "/redfish/v1"
Json = dict[str, Any]


class ConnectorOptions(BaseModel):
    """How to reach and talk to one BMC."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    address: str = Field(pattern=r"^https?://[^/\s]+/?$")
    username: str
    password: SecretStr
    ca_file: Path | None = None
    verify_tls: bool = True
    auth: Literal["auto", "session", "basic"] = "auto"
    retry: RetryPolicy = RetryPolicy()
    max_parallel: int = Field(default=4, ge=1, le=32)
    use_expand: bool = True
    name: str = Field(default="", description="Node name used in messages")
    insecure_http: bool = Field(default=False, description="plain http:// allowed (provision_bmc_insecure_http)")

    @model_validator(mode="after")
    def _no_plain_http(self) -> ConnectorOptions:
        if self.address.startswith("http://") and not self.insecure_http:
            raise ValueError(f"{self.where}: plain HTTP would send the BMC password in clear (use https://)")
        return self

    @property
    def where(self) -> str:
        return f"{self.name} BMC ({self.address})" if self.name else f"BMC {self.address}"


@dataclass(frozen=True, slots=True)
class Response:
    """One HTTP answer: status, lower-cased headers, JSON body (None when not JSON)."""

    status: int
    headers: dict[str, str]
    body: Any = None

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def json(self) -> Json:
        return self.body if isinstance(self.body, dict) else {}


@dataclass
class Stats:
    """What the connector sent: HTTP attempts, retries, re-logins."""

    requests: int = 0
    retries: int = 0
    relogins: int = 0
    missing: list[str] = field(default_factory=list)


def default_ca_bundle() -> str:
    """The CA bundle used when none is configured: REQUESTS_CA_BUNDLE/SSL_CERT_FILE, else certifi's."""
    for var in ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE"):
        if os.environ.get(var):
            return os.environ[var]
    return str(requests.certs.where())


class Connector:
    """A logged-in conversation with one BMC. Use as a context manager."""

    def __init__(
        self,
        opts: ConnectorOptions,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.opts = opts
        self.stats = Stats()
        self._sleep = sleep
        self._rng = rng
        self._sem = threading.BoundedSemaphore(opts.max_parallel)
        self._login_lock = threading.Lock()
        self._login_generation = 0
        self._auth_mode: str | None = None
        self.root: Json = {}
        redact.install()
        redact.register_secret(opts.password.get_secret_value())
        if not opts.verify_tls and opts.address.startswith("https"):
            msg = f"{opts.where}: TLS certificate verification is OFF (--insecure)"
            LOG.warning(msg)
            warnings.warn(msg, stacklevel=2)
        cafile = None
        if opts.verify_tls and opts.address.startswith("https"):
            cafile = str(opts.ca_file) if opts.ca_file else default_ca_bundle()
        proxies = requests.utils.get_environ_proxies(opts.address)
        self._client = redfish.redfish_client(
            base_url=opts.address.rstrip("/"),
            username=opts.username,
            password=opts.password.get_secret_value(),
            cafile=cafile,
            timeout=opts.retry.timeout_s,
            max_retry=0,
            proxies=proxies,
            check_connectivity=False,
        )
        # The proxy environment is read once above; requests would otherwise re-scan os.environ on every
        # request (a quarter of a GET's CPU, measured by bench/campaign_scale.py). CA files are passed explicitly.
        self._client._session.trust_env = False
        # GETs go through a plain urllib3 pool (provision.redfish.connector_fast), except through a proxy
        self._pool = None if proxies else fast.make_pool(opts.address, cafile, opts.max_parallel)

    # ---- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Connector:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def open(self) -> None:
        """Read the service root (once) and log in: session auth, basic as fallback."""
        resp = self.request("GET", f"{ROOT}/", allow_status=(401,), auth=False)
        if resp.status == 401:
            self._login()
            resp = self.request("GET", f"{ROOT}/")
        self._set_root(resp)
        if self._auth_mode is None:
            self._login()

    def close(self) -> None:
        """Log out (best effort); never raises."""
        try:
            self._logout_on_pool()
            self._client.logout()  # closes the library's connection (and logs out, if still logged in)
        except Exception as exc:  # a BMC that drops sessions on its own
            LOG.debug("logout from %s failed: %s", self.opts.where, exc)
        if self._pool is not None:
            self._pool.close()

    def _logout_on_pool(self) -> None:
        """DELETE the session on the connection already open (the library would open one just for
        that: a TLS handshake per BMC at the end of every node's turn); the library then forgets it."""
        location, key = self._client.get_session_location(), self._client.get_session_key()
        if self._pool is None or not location or not key:
            return
        resp = self._fast("DELETE", urlsplit(location).path, None, None, {}, self.opts.retry.timeout_s)
        if resp is not None and resp.status in (200, 202, 204):
            self._client.set_session_key(None)
            self._client.set_session_location(None)
            self._client.set_authorization_key(None)

    def _set_root(self, resp: Response) -> None:
        self.root = resp.json
        self._client.root = RisObject.parse(self.root)
        self._client.root_resp = resp
        sessions = (self.root.get("Links") or {}).get("Sessions") or {}
        self._client.login_url = sessions.get("@odata.id") or f"{ROOT}/SessionService/Sessions"

    def _login(self) -> None:
        """Log in with retries on connection trouble; session first unless told otherwise."""
        modes = {"auto": ["session", "basic"], "session": ["session"], "basic": ["basic"]}[self.opts.auth]
        if self._auth_mode == "basic":
            modes = ["basic"]
        last: Exception | None = None
        for mode in modes:
            try:
                self._with_retries(self._login_call(mode), "login")
            except SessionCreationError as exc:
                last = exc
                continue
            except InvalidCredentialsError:
                raise RedfishAuthError(
                    f"{self.opts.where}: credentials for user {self.opts.username!r} refused"
                ) from None
            except RedfishPasswordChangeRequiredError:
                raise RedfishAuthError(
                    f"{self.opts.where}: user {self.opts.username!r} must make a password change on the BMC first"
                ) from None
            self._auth_mode = mode
            self._login_generation += 1
            redact.register_secret(self._client.get_session_key())
            auth_key = self._client.get_authorization_key()
            redact.register_secret(auth_key)
            if auth_key:
                redact.register_secret(auth_key.split(" ", 1)[-1])
            return
        raise RedfishAuthError(redact.scrub(f"{self.opts.where}: cannot log in: {last}"))

    def _login_call(self, mode: str) -> Callable[[], None]:
        if mode == "session" and self._pool is not None:
            return self._session_login_on_pool
        return functools.partial(self._client.login, auth=mode)

    def _session_login_on_pool(self) -> None:
        """The library's session login on the connector's own connection (through the library it took a
        second TLS connection per BMC, opened again after each BMC reboot); the library keeps the session."""
        creds = {"UserName": self.opts.username, "Password": self.opts.password.get_secret_value()}
        resp = self._fast("POST", self._client.login_url, None, creds, {}, self.opts.retry.timeout_s)
        if resp is None:  # redirected: the library's way
            self._client.login(auth="session")
            return
        key, location = fast.session_from_login(resp.status, resp.headers, resp.body)
        self._client.set_session_key(key)
        self._client.set_session_location(location)

    def _with_retries(self, fn: Callable[[], Any], what: str) -> Any:
        policy = self.opts.retry
        for attempt in range(1, policy.attempts + 1):
            try:
                return fn()
            except RetriesExhaustedError as exc:
                self._raise_if_tls(exc)
                if attempt == policy.attempts:
                    raise RedfishUnavailable(self._conn_text(what, exc)) from None
                self.stats.retries += 1
                self._sleep(policy.delay(attempt, rng=self._rng))
        raise AssertionError("unreachable")

    def _relogin(self, generation: int) -> None:
        with self._login_lock:
            if generation != self._login_generation:
                return  # another thread already logged in again
            self.stats.relogins += 1
            LOG.info("%s: 401, logging in again", self.opts.where)
            self._login()

    # ---- requests --------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        uri: str,
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        args: dict[str, str] | None = None,
        timeout: float | None = None,
        allow_status: Iterable[int] = (),
        auth: bool = True,
        attempts: int | None = None,
    ) -> Response:
        """One request with retries, one re-login on 401, and typed errors for failures."""
        policy = self.opts.retry if attempts is None else self.opts.retry.model_copy(update={"attempts": attempts})
        relogged = not auth
        attempt = 0
        while True:
            attempt += 1
            generation = self._login_generation
            try:
                resp = self._send(method, uri, body, headers, args, timeout)
            except RetriesExhaustedError as exc:
                self._raise_if_tls(exc)
                if attempt >= policy.attempts or not self._retryable_exc(method, exc):
                    raise RedfishUnavailable(self._conn_text(f"{method} {uri}", exc)) from None
                self._backoff(attempt, None)
                continue
            if resp.status in allow_status:
                return resp
            if resp.status == 401 and not relogged:
                relogged = True
                self._relogin(generation)
                continue
            if resp.status in RETRY_STATUSES and attempt < policy.attempts and self._retryable_status(
                method, resp.status
            ):
                self._backoff(attempt, resp.header("retry-after"))
                continue
            raise_for_status(method, uri, resp.status, resp.body, self.opts.where)
            return resp

    def _send(
        self, method: str, uri: str, body: Any, headers: dict[str, str] | None,
        args: dict[str, str] | None, timeout: float | None,
    ) -> Response:
        c = self._client
        kw: dict[str, Any] = {"headers": dict(headers or {}), "timeout": timeout or self.opts.retry.timeout_s,
                              "max_retry": 0}
        with self._sem:
            self.stats.requests += 1
            if method in FAST_METHODS and self._pool is not None:
                fast_resp = self._fast(method, uri, args, body, kw["headers"], kw["timeout"])
                if fast_resp is not None:
                    return fast_resp
            if method == "GET":
                raw = c.get(uri, args=args, **kw)
            elif method == "POST":
                raw = c.post(uri, body=body, **kw)
            elif method == "PATCH":
                raw = c.patch(uri, body=body, **kw)
            elif method == "PUT":
                raw = c.put(uri, body=body, **kw)
            elif method == "DELETE":
                raw = c.delete(uri, **kw)
            else:
                raise ValueError(f"unsupported method {method}")
        return _wrap(raw)

    def _fast(self, method: str, uri: str, args: dict[str, str] | None, body: Any, headers: dict[str, str],
              timeout: float) -> Response | None:
        """The request on the connector's own pool; None to leave it to the library (a redirect, a body
        kind only the library encodes)."""
        assert self._pool is not None
        hdrs = fast.request_headers(headers, self._client.get_session_key(), self._client.get_authorization_key())
        try:
            data = fast.encode(body, hdrs) if method != "GET" else None
        except TypeError:
            return None
        q = fast.query(args) if method == "GET" else ""  # type: ignore[arg-type]
        path = uri.replace("//", "/") + (f"?{q}" if q else "")
        raw = fast.send(self._pool, method, path, hdrs, data, timeout)
        if raw is None:
            return None
        return Response(status=int(raw.status), headers={k.lower(): v for k, v in raw.headers.items()},
                        body=fast.body(raw.data))

    def _backoff(self, attempt: int, retry_after: str | None) -> None:
        self.stats.retries += 1
        delay = self.opts.retry.delay(attempt, retry_after, rng=self._rng)
        LOG.info("%s: retrying in %.2fs (attempt %d)", self.opts.where, delay, attempt)
        self._sleep(delay)

    @staticmethod
    def _retryable_status(method: str, status: int) -> bool:
        # a POST may have been carried out: only 503 (explicitly not processed) is safe to resend
        return method != "POST" or status == 503

    @staticmethod
    def _retryable_exc(method: str, exc: RetriesExhaustedError) -> bool:
        cause = exc.__cause__
        if method != "POST":
            return True
        return isinstance(cause, requests.exceptions.ConnectionError) and not isinstance(
            cause, requests.exceptions.ReadTimeout
        )

    def _raise_if_tls(self, exc: RetriesExhaustedError) -> None:
        if isinstance(exc.__cause__, requests.exceptions.SSLError):
            raise RedfishTlsError(
                f"{self.opts.where}: TLS verification failed ({_short(exc.__cause__)}); "
                "give the BMC's CA with provision_bmc_ca_file, or --insecure to skip verification"
            ) from None

    def _conn_text(self, what: str, exc: RetriesExhaustedError) -> str:
        cause = exc.__cause__
        kind = type(cause).__name__ if cause else "no answer"
        return redact.scrub(
            f"{self.opts.where}: {what}: no answer after {self.opts.retry.attempts} attempt(s) ({kind})"
        )

    # ---- reading ---------------------------------------------------------------------------------
    def get(self, uri: str, args: dict[str, str] | None = None) -> Json:
        return self.request("GET", uri, args=args).json

    def get_optional(self, uri: str) -> Json | None:
        """GET that answers None for 404 (and records the URI as missing)."""
        try:
            return self.get(uri)
        except RedfishNotFound:
            self.stats.missing.append(uri)
            return None

    def get_many(self, uris: Iterable[str]) -> dict[str, Json | None]:
        """GET several URIs, at most `max_parallel` at a time; 404s answer None."""
        todo = list(dict.fromkeys(uris))
        if len(todo) <= 1:
            return {u: self.get_optional(u) for u in todo}
        with ThreadPoolExecutor(max_workers=min(self.opts.max_parallel, len(todo))) as pool:
            return dict(zip(todo, pool.map(self.get_optional, todo), strict=True))

    def parallel(self, jobs: dict[str, Callable[[], Any]]) -> dict[str, Any]:
        """Run independent read jobs concurrently (HTTP concurrency stays bounded by the semaphore)."""
        if len(jobs) <= 1:
            return {k: f() for k, f in jobs.items()}
        with ThreadPoolExecutor(max_workers=min(8, len(jobs))) as pool:
            futures = {k: pool.submit(f) for k, f in jobs.items()}
            return {k: fut.result() for k, fut in futures.items()}

    def expand_args(self, levels: int) -> dict[str, str] | None:
        """`$expand` query for `levels`, clipped to what ProtocolFeaturesSupported allows; None if not."""
        if not self.opts.use_expand:
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
        """Every member of a collection as a full resource: expanded where allowed, else parallel GETs."""
        coll = self.get_optional_expanded(uri, levels)
        if coll is None:
            return []
        links = list(coll.get("Members") or [])
        next_link = coll.get("Members@odata.nextLink")
        while next_link:
            page = self.get(str(next_link))
            links += page.get("Members") or []
            next_link = page.get("Members@odata.nextLink")
        return self.resolve(links)

    def get_optional_expanded(self, uri: str, levels: int = 1) -> Json | None:
        args = self.expand_args(levels)
        try:
            return self.get(uri, args=args)
        except RedfishNotFound:
            self.stats.missing.append(uri)
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

    # ---- writing ---------------------------------------------------------------------------------
    def etag(self, uri: str) -> str | None:
        resp = self.request("GET", uri)
        return resp.header("etag") or resp.json.get("@odata.etag")

    def patch(self, uri: str, body: Json, etag: str | None = None) -> Response:
        """PATCH with If-Match (read first when not given); one fresh-ETag retry on 412."""
        tag = etag if etag is not None else self.etag(uri)
        headers = {"If-Match": tag} if tag else {}
        resp = self.request("PATCH", uri, body=body, headers=headers, allow_status=(412,))
        if resp.status == 412:
            fresh = self.etag(uri)
            resp = self.request("PATCH", uri, body=body, headers={"If-Match": fresh} if fresh else {})
        return resp

    def post(self, uri: str, body: Json | None = None, timeout: float | None = None) -> Response:
        return self.request("POST", uri, body=body if body is not None else {}, timeout=timeout)

    def post_multipart(self, uri: str, parts: dict[str, Any], timeout: float | None = None) -> Response:
        return self.request(
            "POST", uri, body=parts, headers={"Content-Type": "multipart/form-data"}, timeout=timeout
        )

    def delete(self, uri: str) -> Response:
        return self.request("DELETE", uri, allow_status=(404,))


FAST_METHODS = frozenset({"GET", "POST", "PATCH", "DELETE"})


def is_expanded(obj: Any) -> bool:
    """True when a link object carries the resource itself, not only its @odata.id."""
    return isinstance(obj, dict) and not obj.keys() <= _LINK_KEYS


_LINK_KEYS = frozenset({"@odata.id", "@odata.etag", "@odata.type"})


def _wrap(raw: Any) -> Response:
    headers = {str(k).lower(): str(v) for k, v in raw.getheaders()}
    text = raw.read
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    body: Any = None
    if text:
        try:
            body = json.loads(text)
        except ValueError:
            body = None
    return Response(status=int(raw.status), headers=headers, body=body)


def _short(exc: BaseException) -> str:
    text = str(exc)
    for marker in ("certificate verify failed", "hostname mismatch", "self-signed", "self signed"):
        if marker in text:
            return marker
    return type(exc).__name__
