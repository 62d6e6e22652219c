"""SessionService and basic auth: tokens that expire, sessions as resources, each session one account's."""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass

from provision.lab.bmcsim.accounts import Account, Accounts
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.synth import SESSIONS
from provision.lab.bmcsim.tree import Resources


@dataclass(slots=True)
class _Session:
    ident: str
    uri: str
    last_used: float
    account: str


class Sessions:
    """One BMC's live sessions, each authenticated as one of its accounts."""

    __slots__ = ("_by_token", "_clock", "_count", "_res", "accounts", "timeout")

    def __init__(self, res: Resources, clock: SimClock, accounts: Accounts, timeout: float) -> None:
        self._res = res
        self._clock = clock
        self.accounts = accounts
        self.timeout = timeout
        self._by_token: dict[str, _Session] = {}
        self._count = 0
        accounts.on_gone = self.end_account

    def credentials_ok(self, user: object, password: object) -> bool:
        return self.accounts.check(user, password) is not None

    def create(self, user: object, password: object) -> tuple[str, str, Account] | None:
        """New session: (token, session URI, its account), or None for bad credentials."""
        acct = self.accounts.check(user, password)
        if acct is None:
            return None
        self._count += 1
        ident = f"{self._count}{secrets.token_hex(4)}"
        uri = f"{SESSIONS}/{ident}"
        token = secrets.token_urlsafe(24)
        self._by_token[token] = _Session(ident, uri, self._clock.now(), acct.ident)
        self._res.put(uri, {"@odata.id": uri, "@odata.type": "#Session.v1_3_0.Session", "Id": ident,
                            "Name": f"Session {ident}", "UserName": acct.user})
        self._res.add_member(SESSIONS, uri)
        return token, uri, acct

    def token_account(self, token: str) -> tuple[Account, str] | None:
        """The account and session URI of a live session token, or None."""
        sess = self._by_token.get(token)
        if sess is None:
            return None
        now = self._clock.now()
        acct = self.accounts.get(sess.account)
        if now - sess.last_used > self.timeout or acct is None or not acct.enabled:
            self._drop(token)
            return None
        sess.last_used = now
        return acct, sess.uri

    def token_ok(self, token: str) -> bool:
        return self.token_account(token) is not None

    def basic_account(self, header: str) -> Account | None:
        try:
            user, _, password = base64.b64decode(header.split(" ", 1)[1]).decode().partition(":")
        except (ValueError, IndexError, UnicodeDecodeError):
            return None
        return self.accounts.check(user, password)

    def basic_ok(self, header: str) -> bool:
        return self.basic_account(header) is not None

    def who(self, token: str | None, authorization: str | None) -> tuple[Account, str | None] | None:
        """Who a request is authenticated as: (account, its session URI or None for basic auth)."""
        if token:
            return self.token_account(token)
        if authorization and authorization.lower().startswith("basic "):
            acct = self.basic_account(authorization)
            return (acct, None) if acct is not None else None
        return None

    def authorized(self, token: str | None, authorization: str | None) -> bool:
        return self.who(token, authorization) is not None

    def end_account(self, acct: Account) -> None:
        """Every session of an account that was deleted or disabled ends."""
        for token, sess in list(self._by_token.items()):
            if sess.account == acct.ident:
                self._drop(token)

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
