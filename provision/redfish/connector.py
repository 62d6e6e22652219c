"""The one Redfish connector: a logged-in conversation with one BMC, on the one transport (transport.py).

Adds to the transport what a conversation needs: TLS verified by default (a CA bundle is always given:
the inventory's CA file, else REQUESTS_CA_BUNDLE/SSL_CERT_FILE, else certifi's), session/basic/auto login
decided from the service root (login.py), one re-login on 401, retries with exponential backoff and jitter
on connection errors and 5xx (Retry-After honoured; a POST only when nothing reached the BMC:
RedfishNoAnswer otherwise), per-request timeouts and a deadline per command (deadline.py), ETag/If-Match on
PATCH, a request counter, and secrets scrubbed from every log line and error. Reading resources,
collections and their pages is collection.py's (CollectionReads, which Connector is).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field

from provision import redact
from provision.redfish.collection import EXPAND_REFUSED, CollectionReads, Stats, Unreadable, is_expanded, unreadable_why
from provision.redfish.deadline import Deadline
from provision.redfish.errors import (
    RedfishAuthError,
    RedfishNoAnswer,
    RedfishPasswordChangeRequired,
    RedfishTimeout,
    RedfishTlsError,
    RedfishUnavailable,
    RedfishUnreadable,
    raise_for_status,
)
from provision.redfish.login import (
    ROOT,
    SESSIONS,
    AuthMode,
    LoginRefused,
    SessionRefused,
    basic_authorization,
    login_modes,
    session_from_login,
    session_uri,
)
from provision.redfish.retry import RETRY_STATUSES, RetryPolicy
from provision.redfish.transport import Json, Response, SendFailed, Transport, default_ca_bundle
from provision.redfish.transport_warnings import warn_once
from provision.spec.fleet import BmcEndpoint

__all__ = ["EXPAND_REFUSED", "ROOT", "SESSIONS", "AuthMode", "Connector", "ConnectorOptions", "Json", "Response",
           "Stats", "Unreadable", "default_ca_bundle", "is_expanded", "login_modes", "session_uri"]

LOG = logging.getLogger("provision.redfish")


class ConnectorOptions(BmcEndpoint):
    """How to reach and talk to one BMC: its inventory endpoint (address, credentials, TLS, auth, plain-HTTP
    opt-in, deadline) and how hard to try."""

    retry: RetryPolicy = RetryPolicy()
    max_pages: int = Field(default=500, ge=1, description="Pages of one collection followed through "
                           "Members@odata.nextLink before giving up")
    max_parallel: int = Field(default=4, ge=1, le=32)
    use_expand: bool = True
    name: str = Field(default="", description="Node name used in messages")
    change_password_session: bool = Field(default=False, description="A session login answered "
                                          "PasswordChangeRequired with a session is kept (DSP0266: it may change its "
                                          "own password), not refused: how a BMC without HTTP basic rotates one")

    @property
    def where(self) -> str:
        return f"{self.name} BMC ({self.address})" if self.name else f"BMC {self.address}"

    @property
    def cafile(self) -> str | None:
        """The CA bundle to verify against; None where nothing is verified (plain HTTP, --insecure)."""
        if self.plain_http or not self.verify_tls:
            return None
        return str(self.ca_file) if self.ca_file else default_ca_bundle()


class Connector(CollectionReads):
    """A logged-in conversation with one BMC. Use as a context manager (it logs in unless already open)."""

    def __init__(
        self,
        opts: ConnectorOptions,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        super().__init__()
        self.opts = opts
        self.stats = Stats()
        self._sleep = sleep
        self._rng = rng
        self._sem = threading.BoundedSemaphore(opts.max_parallel)
        self._login_lock = threading.Lock()
        self._login_generation = 0
        self._auth_mode: str | None = None
        self._deadline = Deadline(opts.deadline_s)
        self._held: AbstractContextManager[None] | None = None
        self._closed = False
        self.root: Json = {}
        redact.install()
        redact.register_secret(opts.password.get_secret_value())
        if not opts.verify_tls and not opts.plain_http:
            warn_once(opts.where, "TLS certificate verification is OFF (--insecure)")
        self._http = Transport(opts.address, opts.cafile, opts.max_parallel)

    # ---- lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> Connector:
        if not self.root:
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
        if not isinstance(resp.body, dict):
            why = unreadable_why(resp)
            raise RedfishUnreadable(f"{self.opts.where}: GET {ROOT}/ (service root): {why}", uri=f"{ROOT}/",
                                    status=resp.status, reason=why)
        self.root = resp.body
        if self._auth_mode is None:
            self._login()

    def close(self) -> None:
        """Log out (best effort: a DELETE of the session on the connection already open); never raises.
        Ends a held deadline (hold_deadline). A second close does nothing."""
        held, self._held = self._held, None
        if held is not None:
            held.__exit__(None, None, None)
        if self._closed:
            return
        self._closed = True
        http = self._http
        if http.token and http.session_uri:
            try:
                resp = http.send("DELETE", http.session_uri, timeout=self.opts.retry.timeout_s)
                if resp.status in (200, 202, 204):
                    http.forget()
            except SendFailed as exc:  # a BMC that drops sessions on its own
                LOG.debug("logout from %s failed: %s", self.opts.where, exc)
        http.close()

    # ---- login -----------------------------------------------------------------------------------
    def _login(self) -> None:
        """Log in with retries on connection trouble, trying login_modes() in order: a session login
        refused (401, or the service cannot create sessions) falls back to basic where auto allows it."""
        modes = ["basic"] if self._auth_mode == "basic" else login_modes(self.opts.auth, self.root or None)
        last: Exception | None = None
        for i, mode in enumerate(modes):
            try:
                self._with_retries(lambda m=mode: self._login_as(m), "login")  # type: ignore[misc]
            except SessionRefused as exc:
                last = exc
                continue
            except LoginRefused:
                if i + 1 < len(modes):
                    LOG.info("%s: %s login refused (401), trying %s", self.opts.where, mode, modes[i + 1])
                    continue
                raise RedfishAuthError(
                    f"{self.opts.where}: credentials for user {self.opts.username!r} refused ({mode} auth)"
                ) from None
            except RedfishPasswordChangeRequired:
                raise RedfishPasswordChangeRequired(
                    f"{self.opts.where}: user {self.opts.username!r} must make a password change on the BMC first"
                ) from None
            self._auth_mode = mode
            self._login_generation += 1
            redact.register_secret(self._http.token)
            if self._http.basic:
                redact.register_secret(self._http.basic)
                redact.register_secret(self._http.basic.split(" ", 1)[-1])
            return
        why = " ".join(str(last).split())  # an error stays one line
        raise RedfishAuthError(redact.scrub(f"{self.opts.where}: cannot log in ({'/'.join(modes)}): {why}"))

    def _login_as(self, mode: str) -> None:
        """One login on the transport, which then holds the session token and location (or the basic
        Authorization). Raises LoginRefused, SessionRefused or RedfishPasswordChangeRequired."""
        http, timeout = self._http, self.opts.retry.timeout_s
        http.forget()
        if mode == "session":
            creds = {"UserName": self.opts.username, "Password": self.opts.password.get_secret_value()}
            resp = self._send("POST", session_uri(self.root) or SESSIONS, body=creds, timeout=timeout)
            try:
                key, location = session_from_login(resp.status, resp.headers, resp.body)
            except RedfishPasswordChangeRequired:
                key = resp.headers.get("x-auth-token")
                if not (self.opts.change_password_session and key and resp.status in (200, 201)):
                    raise
                location = resp.headers.get("location")
            http.token, http.session_uri = key, _path(location)
            return
        http.basic = basic_authorization(self.opts.username, self.opts.password.get_secret_value())
        # basic auth has no login: check the credentials on a resource that needs them
        systems = self.root.get("Systems")
        link = systems.get("@odata.id") if isinstance(systems, dict) else None
        probe = str(link or session_uri(self.root) or f"{ROOT}/Systems")
        if self._send("GET", probe, timeout=timeout).status == 401:
            http.basic = None
            raise LoginRefused("HTTP 401 Unauthorized returned: Invalid credentials supplied", status=401)

    def _with_retries(self, fn: Callable[[], Any], what: str) -> Any:
        policy = self.opts.retry
        for attempt in range(1, policy.attempts + 1):
            try:
                return fn()
            except SendFailed as exc:
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
            per_try = timeout or policy.timeout_s
            per_try = per_try if left is None else max(0.05, min(per_try, left))
            try:
                resp = self._send(method, uri, body=body, headers=headers, args=args, timeout=per_try)
            except SendFailed as exc:
                self._raise_if_tls(exc)
                if method == "POST" and not exc.nothing_sent:  # it may have been carried out: a second flash
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
            # a POST may have been carried out: only 503 (explicitly not processed) is safe to resend
            if resp.status in RETRY_STATUSES and attempt < policy.attempts and (method != "POST" or resp.status == 503):
                self._backoff(attempt, resp.header("retry-after"))
                continue
            raise_for_status(method, uri, resp.status, resp.body, self.opts.where)
            return resp

    def _send(self, method: str, uri: str, **kw: Any) -> Response:
        """One HTTP attempt: counted, and at most `max_parallel` at a time."""
        with self._sem:
            self.stats.requests += 1
            return self._http.send(method, uri, **kw)

    def _backoff(self, attempt: int, retry_after: str | None) -> None:
        self.stats.retries += 1
        delay = self.opts.retry.delay(attempt, retry_after, rng=self._rng)
        left = self._deadline.left()
        if left is not None:  # never sleep past the deadline; the next attempt then raises at once
            delay = max(0.0, min(delay, left))
        LOG.info("%s: retrying in %.2fs (attempt %d)", self.opts.where, delay, attempt)
        self._sleep(delay)

    def _sent_text(self, method: str, uri: str, exc: SendFailed) -> str:
        return redact.scrub(f"{self.opts.where}: {method} {uri}: sent, no answer ({exc.kind}); not sent again, "
                            "the BMC may have carried it out")

    def _raise_if_tls(self, exc: SendFailed) -> None:
        if exc.tls:
            raise RedfishTlsError(
                f"{self.opts.where}: TLS verification failed ({_short(exc.detail, exc.kind)}); "
                "give the BMC's CA with provision_bmc_ca_file, or --insecure to skip verification"
            ) from None

    def _conn_text(self, what: str, exc: SendFailed) -> str:
        return redact.scrub(
            f"{self.opts.where}: {what}: no answer after {self.opts.retry.attempts} attempt(s) ({exc.kind})"
        )

    # ---- the deadline of a command -----------------------------------------------------------------
    @contextmanager
    def deadline(self, seconds: float | None = None) -> Iterator[None]:
        """Bound everything sent inside (from every thread) to `seconds` (default `opts.deadline_s`) in
        all; nested or concurrent uses share the first one's deadline. Past it a request raises
        RedfishTimeout naming the node and the URI, and per-request timeouts shrink to what is left."""
        with self._deadline.scope(seconds or self.opts.deadline_s):
            yield

    def hold_deadline(self) -> None:
        """Open the command's deadline (`opts.deadline_s`) until close(): everything sent until then counts."""
        if self._held is None:
            self._held = self.deadline()
            self._held.__enter__()

    @contextmanager
    def waiting(self, seconds: float) -> Iterator[None]:
        """A wait with its own bound inside a command (a firmware Task, a PowerState, a BMC reset): the
        command's deadline stands still while it runs, and the requests made meanwhile are bounded by
        `seconds` plus one request timeout instead (so a BMC that stalls during the wait still cannot hang
        the command). Outside any deadline it opens one of that length."""
        with self._deadline.waiting(seconds + self.opts.retry.timeout_s):
            yield

    def _time_left(self, method: str, uri: str) -> float | None:
        left = self._deadline.left()
        if left is not None and left <= 0:
            raise RedfishTimeout(redact.scrub(
                f"{self.opts.where}: {method} {uri}: the command's {self._deadline.length:g} s deadline passed "
                "(the BMC answers too slowly or has stalled)"))
        return left

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


def _path(location: str | None) -> str | None:
    """A session's Location as the path to DELETE (an absolute URL is cut to its path)."""
    if not location:
        return None
    return urlsplit(location).path if "://" in location else location


def _short(detail: str, kind: str) -> str:
    for marker in ("certificate verify failed", "hostname mismatch", "self-signed", "self signed"):
        if marker in detail:
            return marker
    return kind
