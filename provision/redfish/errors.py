"""Typed Redfish errors and the one place that maps HTTP answers to them."""

from __future__ import annotations

from typing import Any

from provision.errors import RedfishError
from provision.redact import scrub


class RedfishHttpError(RedfishError):
    """A failure tied to one URI; `status` is the HTTP status when the BMC answered one (None when it
    did not answer at all, or the failure was not an HTTP status)."""

    def __init__(self, text: str, *, uri: str = "", status: int | None = None, reason: str = "") -> None:
        super().__init__(text)
        self.uri = uri
        self.status = status
        self.reason = reason  # short, without node and URI: "HTTP 500: ...", "HTML instead of JSON"


class RedfishPagingError(RedfishError):
    """A collection whose pages do not end: a Members@odata.nextLink back to a page already read (a paging loop),
    or more pages than the connector reads; `uri` is the collection, `reason` what was wrong."""

    def __init__(self, text: str, *, uri: str, reason: str) -> None:
        super().__init__(text)
        self.uri = uri
        self.reason = reason


class RedfishAuthError(RedfishHttpError):
    """The BMC refused the credentials (401/403 after one re-login)."""


class RedfishPasswordChangeRequired(RedfishAuthError):
    """The account must change its password before the BMC answers anything else: a login or a request
    answered with the Base registry's `PasswordChangeRequired` (DSP0266 "Password management"; a factory
    account on first login). It is about the account, never about the resource asked for."""


class RedfishNotFound(RedfishHttpError):
    """The resource does not exist on this BMC (404)."""


class RedfishBadRequest(RedfishHttpError):
    """The BMC refused the request body (400, 405, 409, 412, 501 ...)."""


class RedfishUnavailable(RedfishHttpError):
    """The BMC did not answer usefully after every retry (connection errors, 5xx, 503)."""


class RedfishNoAnswer(RedfishUnavailable):
    """A request that is not safe to repeat (a POST) was sent and no answer came: it may have been
    carried out. Never resent by the connector; the caller finds out what the BMC did (an update's task)."""


class RedfishUnreadable(RedfishHttpError):
    """The BMC answered 2xx, but not with a JSON object (HTML, malformed JSON, an empty body)."""


class RedfishTlsError(RedfishError):
    """The BMC's TLS certificate did not verify."""


class RedfishTimeout(RedfishError):
    """An operation (task, power change, BMC reset) did not finish in time."""


class RedfishOperationFailed(RedfishError):
    """A task or operation finished in a failed state."""


def extended_messages(body: Any) -> list[str]:
    """The BMC's own words for an error body: each `@Message.ExtendedInfo` entry as "Message
    [MessageId]" (DMTF DSP0266 "Error responses"; either half alone when the other is absent), else the
    `error.message` [`error.code`]. Whitespace is collapsed: an error stays one line."""
    if not isinstance(body, dict):
        return []
    err = body.get("error", body)
    if not isinstance(err, dict):
        return []
    infos = err.get("@Message.ExtendedInfo") or []
    out = [t for t in (_message(i.get("Message"), i.get("MessageId")) for i in infos if isinstance(i, dict)) if t]
    if not out:
        text = _message(err.get("message"), err.get("code"))
        if text:
            out.append(text)
    return out


def message_ids(body: Any) -> list[str]:
    """The `MessageId`s of an error body's (or a success body's) `@Message.ExtendedInfo`, as given."""
    if not isinstance(body, dict):
        return []
    out: list[str] = []
    for holder in (body, body.get("error")):
        infos = holder.get("@Message.ExtendedInfo") if isinstance(holder, dict) else None
        out += [str(i["MessageId"]) for i in infos or [] if isinstance(i, dict) and i.get("MessageId")] \
            if isinstance(infos, list) else []
    return out


def password_change_required(body: Any) -> bool:
    """Whether the body carries `PasswordChangeRequired` of the Base registry (any version: `Base.1.8.`...)."""
    return any(m.split(".")[0] == "Base" and m.rsplit(".", 1)[-1] == "PasswordChangeRequired"
               for m in message_ids(body))


def _message(message: Any, message_id: Any) -> str:
    msg = " ".join(str(message or "").split())
    mid = " ".join(str(message_id or "").split())
    if msg and mid:
        return f"{msg} [{mid}]"
    return msg or mid


def raise_for_status(method: str, uri: str, status: int, body: Any, where: str) -> None:
    """Raise the typed error for a non-2xx answer; do nothing for 2xx/3xx."""
    if status < 400:
        return
    detail = "; ".join(extended_messages(body))[:400]
    text = scrub(f"{where}: {method} {uri} -> HTTP {status}" + (f": {detail}" if detail else ""))
    kind: type[RedfishHttpError] = RedfishBadRequest
    if status in (401, 403):
        kind = RedfishPasswordChangeRequired if password_change_required(body) else RedfishAuthError
    elif status == 404:
        kind = RedfishNotFound
    elif status >= 500 and status != 501:
        kind = RedfishUnavailable
    raise kind(text, uri=uri, status=status, reason=scrub(f"HTTP {status}" + (f": {detail}" if detail else "")))
