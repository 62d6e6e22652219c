"""How to log in to a BMC (pure): where a session login goes, which methods to try, what a login answer says.

Redfish sessions (DSP0266 13.3.4): POST {UserName, Password} to the SessionService's Sessions collection;
the answer's X-Auth-Token header is the session, its Location header (or the body's @odata.id) the URI to
DELETE at the end. Basic auth has no login: the connector checks the credentials on a resource that needs
them. The answers read here are the ones the DMTF library read (its login made the same decisions).
"""

from __future__ import annotations

import base64
from typing import Any, Literal

from provision.redfish.errors import RedfishAuthError, RedfishPasswordChangeRequired, password_change_required

ROOT = "/redfish/v1"
SESSIONS = f"{ROOT}/SessionService/Sessions"  # fixed by DSP0266 1.6 where the root does not link it
Json = dict[str, Any]
AuthMode = Literal["auto", "session", "basic"]


class LoginRefused(RedfishAuthError):
    """The BMC answered a login 401: these credentials are not accepted (this way)."""


class SessionRefused(RedfishAuthError):
    """The BMC could not make a session (other than 401): basic may still work where auto allows it."""


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


def basic_authorization(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def session_from_login(status: int, headers: dict[str, str], answer: Any) -> tuple[str | None, str | None]:
    """(session key, session location) from the answer to a session login POST (lower-cased headers).
    Raises RedfishPasswordChangeRequired (Base.PasswordChangeRequired in the answer or its error),
    LoginRefused (401 without a token) or SessionRefused (any other failure without a token)."""
    answer = answer if isinstance(answer, dict) else {}
    error = answer["error"] if isinstance(answer.get("error"), dict) else {}
    if password_change_required(answer):  # in the answer or in its error
        raise RedfishPasswordChangeRequired("Password Change Required")
    key, ok = headers.get("x-auth-token"), status in (200, 201, 202, 204)
    if not key and not ok:
        if status == 401:
            raise LoginRefused("HTTP 401 Unauthorized returned: Invalid credentials supplied", status=401)
        raise SessionRefused(f"HTTP {status}: Failed to create the session\n{_error_text(error)}", status=status)
    return key, headers.get("location") or (answer.get("@odata.id") if ok else None)


def _error_text(error: dict[str, Any]) -> str:
    infos = error.get("@Message.ExtendedInfo") or [{}]
    return str((infos[0] if isinstance(infos[0], dict) else {}).get("Message") or error.get("message") or "")
