"""The one Redfish connector, on the DMTF `redfish` library.

Adds what the library lacks: TLS verified by default (the library sends `verify=False` unless a CA file
is given, so a CA bundle is always passed), session/basic/auto login decided from the service root, one
re-login on 401, retries with exponential backoff and jitter on connection errors and 5xx (Retry-After
honoured; a POST only when nothing reached the BMC: RedfishNoAnswer otherwise), per-request timeouts and
a deadline per command, ETag/If-Match on PATCH, `$expand` where the service advertises it and bounded
parallel GETs where it does not, `Members@odata.nextLink` paging (visited set, page cap), partial reads
(a sub-resource that cannot be read is recorded, not fatal), a request counter, and secrets scrubbed from
every log line and error.

The HTTP transport is the connector's own urllib3 pool (connector_fast) for every method, logins
included; the DMTF library's client is used through its public API (constructor, requests, session
key/location and authorization key getters and setters, logout; the one exception, its Session's
trust_env, is explained where it is set), and carries a request only where the pool cannot: through a
proxy, or to follow a redirect.
"""

from __future__ import annotations

import base64
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
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
    SessionCreationError,
)

from provision import redact
from provision.redfish import connector_fast as fast
from provision.redfish.errors import (
    RedfishAuthError,
    RedfishHttpError,
    RedfishNoAnswer,
    RedfishNotFound,
    RedfishPagingError,
    RedfishPasswordChangeRequired,
    RedfishTimeout,
    RedfishTlsError,
    RedfishUnavailable,
    RedfishUnreadable,
    raise_for_status,
)
from provision.redfish.retry import RETRY_STATUSES, RetryPolicy
from provision.redfish.transport_warnings import warn_once

LOG = logging.getLogger("provision.redfish")
ROOT = "/redfish/v1"
SESSIONS = f"{ROOT}/SessionService/Sessions"  # fixed by DSP0266 1.6 where the root does not link it
Json = dict[str, Any]
AuthMode = Literal["auto", "session", "basic"]


class ConnectorOptions(BaseModel):
    """How to reach and talk to one BMC."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    address: str = Field(pattern=r"^https?://[^/\s]+/?$")
    username: str
    password: SecretStr
    ca_file: Path | None = None
    verify_tls: bool = True
    auth: AuthMode = "auto"
    retry: RetryPolicy = RetryPolicy()
    deadline_s: float = Field(default=120.0, gt=0, description="Seconds one read command (an inventory, a "
                              "collection walk) may take in all, retries and pages included")
    max_pages: int = Field(default=500, ge=1, description="Pages of one collection followed through "
                           "Members@odata.nextLink before giving up")
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


def session_uri(root: Json) -> str | None:
    """Where to POST a session login: the root's Links.Sessions; the DSP0266 fixed URI when the root
    links only the SessionService; None when the service offers no sessions (sushy-tools' emulator)."""
    links = root.get("Links")
    sessions = links.get("Sessions") if isinstance(links, dict) else None
    if isinstance(sessions, dict) and sessions.get("@odata.id"):
        return str(sessions["@odata.id"])
    service = root.get("SessionService")
    return SESSIONS if isinstance(service, dict) and service.get("@odata.id") else None


def login_modes(auth: AuthMode, root: Json | None) -> list[str]:
    """Pure: the login methods to try, in order. session/basic: that one only. auto: a session where the
    service root offers sessions, then basic (after a session login refused); basic alone where it offers
    none. `root` None: the root itself wanted credentials, so what it offers is unknown: both."""
    if auth != "auto":
        return [auth]
    if root is not None and session_uri(root) is None:
        return ["basic"]
    return ["session", "basic"]


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
        self._deadline_lock = threading.Lock()
        self._deadline_depth = 0
        self._deadline_at: float | None = None
        self._deadline_len = opts.deadline_s
        self._record_lock = threading.Lock()
        self._expand_works: bool | None = None  # None until one `$expand` read answers; False: never again
        self._expand_probe = threading.Lock()  # the first `$expand` read goes alone (one refusal, not one per thread)
        self.root: Json = {}
        redact.install()
        redact.register_secret(opts.password.get_secret_value())
        if not opts.verify_tls and opts.address.startswith("https"):
            warn_once(opts.where, "TLS certificate verification is OFF (--insecure)")
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
        # Left as it is, with no public way to say it: the library's requests.Session would re-read the
        # environment on every request it carries (proxies, already read once above; CA variables, moot as
        # the CA file is passed explicitly) and, worse, ~/.netrc, whose entry for the BMC's host would replace
        # the Authorization header the connector set. Only proxied and redirected requests go that way now.
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
        """Read the service root (once) and log in as `opts.auth` says (see login_modes)."""
        if not self.opts.username or not self.opts.password.get_secret_value():
            raise RedfishAuthError(f"{self.opts.where}: no BMC username/password configured; nothing sent "
                                   "(set provision_bmc_username and provision_bmc_password, or "
                                   "PROVISION_BMC_USERNAME and PROVISION_BMC_PASSWORD)")
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
        if not isinstance(resp.body, dict):
            why = _unreadable_why(resp)
            raise RedfishUnreadable(f"{self.opts.where}: GET {ROOT}/ (service root): {why}", uri=f"{ROOT}/",
                                    status=resp.status, reason=why)
        self.root = resp.body

    def _login(self) -> None:
        """Log in with retries on connection trouble, trying login_modes() in order: a session login
        refused (401, or the service cannot create sessions) falls back to basic where auto allows it."""
        modes = login_modes(self.opts.auth, self.root or None)
        if self._auth_mode == "basic":
            modes = ["basic"]
        last: Exception | None = None
        for i, mode in enumerate(modes):
            try:
                self._with_retries(lambda m=mode: self._login_as(m), "login")  # type: ignore[misc]
            except SessionCreationError as exc:
                last = exc
                continue
            except InvalidCredentialsError:
                if i + 1 < len(modes):
                    LOG.info("%s: %s login refused (401), trying %s", self.opts.where, mode, modes[i + 1])
                    continue
                raise RedfishAuthError(
                    f"{self.opts.where}: credentials for user {self.opts.username!r} refused ({mode} auth)"
                ) from None
            except RedfishPasswordChangeRequiredError:
                raise RedfishPasswordChangeRequired(
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
        why = " ".join(str(last).split())  # the library's text has line breaks: an error stays one line
        raise RedfishAuthError(redact.scrub(f"{self.opts.where}: cannot log in ({'/'.join(modes)}): {why}"))

    def _login_as(self, mode: str) -> None:
        """One login on the connector's transport; the library's client keeps the session key and
        location (or the basic Authorization key), set through its public setters. Raises the library's
        own exceptions for a refused login (connector_fast.session_from_login)."""
        c = self._client
        c.set_session_key(None)
        c.set_session_location(None)
        c.set_authorization_key(None)
        if mode == "session":
            creds = {"UserName": self.opts.username, "Password": self.opts.password.get_secret_value()}
            resp = self._send("POST", session_uri(self.root) or SESSIONS, creds, None, None, None)
            key, location = fast.session_from_login(resp.status, resp.headers, resp.body)
            c.set_session_key(key)
            c.set_session_location(location)
            return
        pair = f"{self.opts.username}:{self.opts.password.get_secret_value()}".encode()
        c.set_authorization_key("Basic " + base64.b64encode(pair).decode())
        # basic auth has no login: check the credentials on a resource that needs them, as the library does
        systems = self.root.get("Systems")
        link = systems.get("@odata.id") if isinstance(systems, dict) else None
        probe = str(link or session_uri(self.root) or f"{ROOT}/Systems")
        if self._send("GET", probe, None, None, None, None).status == 401:
            c.set_authorization_key(None)
            raise InvalidCredentialsError("HTTP 401 Unauthorized returned: Invalid credentials supplied")

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
            left = self._time_left(method, uri)
            try:
                resp = self._send(method, uri, body, headers, args,
                                  _within(timeout or policy.timeout_s, left))
            except RetriesExhaustedError as exc:
                self._raise_if_tls(exc)
                if not self._retryable_exc(method, exc):
                    raise RedfishNoAnswer(self._sent_text(method, uri, exc), uri=uri) from None
                if attempt >= policy.attempts:
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

    # ---- the deadline of a command -----------------------------------------------------------------
    @contextmanager
    def deadline(self, seconds: float | None = None) -> Iterator[None]:
        """Bound everything sent inside (from every thread) to `seconds` (default `opts.deadline_s`) in
        all; nested or concurrent uses share the first one's deadline. Past it a request raises
        RedfishTimeout naming the node and the URI, and per-request timeouts shrink to what is left."""
        with self._deadline_lock:
            if self._deadline_depth == 0:
                self._deadline_len = seconds or self.opts.deadline_s
                self._deadline_at = time.monotonic() + self._deadline_len
            self._deadline_depth += 1
        try:
            yield
        finally:
            with self._deadline_lock:
                self._deadline_depth -= 1
                if self._deadline_depth == 0:
                    self._deadline_at = None

    @contextmanager
    def waiting(self, seconds: float) -> Iterator[None]:
        """A wait with its own bound inside a command (a firmware Task, a PowerState, a BMC reset): the
        command's deadline stands still while it runs, and the requests made meanwhile are bounded by
        `seconds` plus one request timeout instead (so a BMC that stalls during the wait still cannot hang
        the command). Outside any deadline it opens one of that length."""
        bound = seconds + self.opts.retry.timeout_s
        with self._deadline_lock:
            outer = self._deadline_depth > 0
            saved_len = self._deadline_len
            left = (self._deadline_at or 0.0) - time.monotonic()
            self._deadline_depth += 1
            self._deadline_at, self._deadline_len = time.monotonic() + bound, bound
        try:
            yield
        finally:
            with self._deadline_lock:
                self._deadline_depth -= 1
                if outer:
                    self._deadline_at, self._deadline_len = time.monotonic() + left, saved_len
                else:
                    self._deadline_at = None

    def _time_left(self, method: str, uri: str) -> float | None:
        at = self._deadline_at
        if at is None:
            return None
        left = at - time.monotonic()
        if left <= 0:
            raise RedfishTimeout(redact.scrub(
                f"{self.opts.where}: {method} {uri}: the command's {self._deadline_len:g} s deadline passed "
                "(the BMC answers too slowly or has stalled)"))
        return left

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
        hdrs_in = {k.lower(): v for k, v in raw.headers.items()}
        data, problem = fast.decode(raw.data, hdrs_in.get("content-type"))
        return Response(status=int(raw.status), headers=hdrs_in, body=data, problem=problem)

    def _backoff(self, attempt: int, retry_after: str | None) -> None:
        self.stats.retries += 1
        delay = self.opts.retry.delay(attempt, retry_after, rng=self._rng)
        at = self._deadline_at
        if at is not None:  # never sleep past the deadline; the next attempt then raises at once
            delay = max(0.0, min(delay, at - time.monotonic()))
        LOG.info("%s: retrying in %.2fs (attempt %d)", self.opts.where, delay, attempt)
        self._sleep(delay)

    @staticmethod
    def _retryable_status(method: str, status: int) -> bool:
        # a POST may have been carried out: only 503 (explicitly not processed) is safe to resend
        return method != "POST" or status == 503

    @staticmethod
    def _retryable_exc(method: str, exc: RetriesExhaustedError) -> bool:
        """A POST (an update, a reset, a media insert: not idempotent) is sent again only when the connection
        itself failed; once it may have been written, the BMC may have carried it out (a second flash)."""
        return method != "POST" or fast.nothing_sent(exc.__cause__)

    def _sent_text(self, method: str, uri: str, exc: RetriesExhaustedError) -> str:
        cause = exc.__cause__
        kind = type(cause).__name__ if cause else "no answer"
        return redact.scrub(f"{self.opts.where}: {method} {uri}: sent, no answer ({kind}); not sent again, "
                            "the BMC may have carried it out")

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
        """A resource that must be read: a 2xx answer that is not a JSON object raises RedfishUnreadable
        naming the URI and what was wrong (HTML, malformed JSON, empty)."""
        resp = self.request("GET", uri, args=args)
        if isinstance(resp.body, dict):
            return resp.body
        why = _unreadable_why(resp)
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
        reason = " ".join((exc.reason or f"HTTP {exc.status}").split())[:160]
        LOG.warning("%s: %s unreadable: %s", self.opts.where, uri, reason)
        with self._record_lock:
            if all(u.uri != uri for u in self.stats.unreadable):
                self.stats.unreadable.append(Unreadable(uri=uri, reason=reason))
        return True

    def get_many(self, uris: Iterable[str]) -> dict[str, Json | None]:
        """GET several URIs, at most `max_parallel` at a time; missing or unreadable ones answer None."""
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
            LOG.warning("%s: %s unreadable: %s", self.opts.where, uri, exc.reason)
            with self._record_lock:
                if all(u.uri != uri for u in self.stats.unreadable):
                    self.stats.unreadable.append(Unreadable(uri=uri, reason=exc.reason[:160]))
            return []

    def _pages(self, uri: str, coll: Json) -> list[Any]:
        links = list(_list(coll.get("Members")))
        seen = {_page_key(uri)}
        next_link = coll.get("Members@odata.nextLink")
        while next_link:
            page_uri = _page_key(str(next_link))
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


FAST_METHODS = frozenset({"GET", "POST", "PATCH", "PUT", "DELETE"})
EXPAND_REFUSED = frozenset({400, 404, 405, 501})  # answers to a `$expand` read that mean "not this query"


def is_expanded(obj: Any) -> bool:
    """True when a link object carries the resource itself, not only its @odata.id."""
    return isinstance(obj, dict) and not obj.keys() <= _LINK_KEYS


_LINK_KEYS = frozenset({"@odata.id", "@odata.etag", "@odata.type"})


def _wrap(raw: Any) -> Response:
    headers = {str(k).lower(): str(v) for k, v in raw.getheaders()}
    text = raw.read
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    body, problem = fast.decode(text or b"", headers.get("content-type"))
    return Response(status=int(raw.status), headers=headers, body=body, problem=problem)


def _unreadable_why(resp: Response) -> str:
    if resp.problem:
        return resp.problem
    if resp.body is None:
        return f"an empty answer (HTTP {resp.status})"
    return f"a JSON {type(resp.body).__name__} instead of an object"


def _within(timeout: float, left: float | None) -> float:
    """The per-request timeout, shrunk to the time left before the deadline."""
    return timeout if left is None else max(0.05, min(timeout, left))


def _page_key(link: str) -> str:
    """A nextLink as the path?query to GET (an absolute URL is cut to its path and query)."""
    parts = urlsplit(link)
    path = parts.path if parts.scheme else link.split("?", 1)[0]
    query = parts.query
    return f"{path.rstrip('/') or '/'}" + (f"?{query}" if query else "")


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def _short(exc: BaseException) -> str:
    text = str(exc)
    for marker in ("certificate verify failed", "hostname mismatch", "self-signed", "self signed"):
        if marker in text:
            return marker
    return type(exc).__name__
