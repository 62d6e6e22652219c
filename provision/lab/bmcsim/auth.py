"""SessionService and basic auth: tokens that expire, sessions as resources."""

from __future__ import annotations

import base64
import hmac
import secrets
from dataclasses import dataclass

from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.synth import SESSIONS
from provision.lab.bmcsim.tree import Resources


@dataclass(slots=True)
class _Session:
    ident: str
    uri: str
    last_used: float


class Sessions:
    """One BMC's account (one user) and its live sessions."""

    __slots__ = ("_by_token", "_clock", "_count", "_password", "_res", "_user", "timeout")

    def __init__(self, res: Resources, clock: SimClock, user: str, password: str, timeout: float) -> None:
        self._res = res
        self._clock = clock
        self._user = user
        self._password = password
        self.timeout = timeout
        self._by_token: dict[str, _Session] = {}
        self._count = 0

    def credentials_ok(self, user: object, password: object) -> bool:
        if not isinstance(user, str) or not isinstance(password, str):
            return False
        ok_user = hmac.compare_digest(user.encode(), self._user.encode())
        return hmac.compare_digest(password.encode(), self._password.encode()) and ok_user

    def create(self, user: object, password: object) -> tuple[str, str] | None:
        """New session: (token, session URI), or None for bad credentials."""
        if not self.credentials_ok(user, password):
            return None
        self._count += 1
        ident = f"{self._count}{secrets.token_hex(4)}"
        uri = f"{SESSIONS}/{ident}"
        token = secrets.token_urlsafe(24)
        self._by_token[token] = _Session(ident, uri, self._clock.now())
        self._res.put(uri, {"@odata.id": uri, "@odata.type": "#Session.v1_3_0.Session", "Id": ident,
                            "Name": f"Session {ident}", "UserName": self._user})
        self._res.add_member(SESSIONS, uri)
        return token, uri

    def token_ok(self, token: str) -> bool:
        sess = self._by_token.get(token)
        if sess is None:
            return False
        now = self._clock.now()
        if now - sess.last_used > self.timeout:
            self._drop(token)
            return False
        sess.last_used = now
        return True

    def basic_ok(self, header: str) -> bool:
        try:
            user, _, password = base64.b64decode(header.split(" ", 1)[1]).decode().partition(":")
        except (ValueError, IndexError, UnicodeDecodeError):
            return False
        return self.credentials_ok(user, password)

    def authorized(self, token: str | None, authorization: str | None) -> bool:
        if token:
            return self.token_ok(token)
        if authorization and authorization.lower().startswith("basic "):
            return self.basic_ok(authorization)
        return False

    def delete(self, uri: str) -> bool:
        for token, sess in list(self._by_token.items()):
            if sess.uri == uri:
                self._drop(token)
                return True
        return False

    def expire_all(self) -> int:
        """Every session ends now (a BMC reboot or the session-expiry fault). Returns how many."""
        tokens = list(self._by_token)
        for token in tokens:
            self._drop(token)
        return len(tokens)

    def _drop(self, token: str) -> None:
        sess = self._by_token.pop(token)
        self._res.delete(sess.uri)
        self._res.remove_member(SESSIONS, sess.uri)

    def __len__(self) -> int:
        return len(self._by_token)
