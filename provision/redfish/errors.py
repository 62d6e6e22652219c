"""Typed Redfish errors and the one place that maps HTTP answers to them."""

from __future__ import annotations

from typing import Any

from provision.errors import RedfishError
from provision.redfish.redact import scrub


class RedfishAuthError(RedfishError):
    """The BMC refused the credentials (401/403 after one re-login)."""


class RedfishNotFound(RedfishError):
    """The resource does not exist on this BMC (404)."""


class RedfishBadRequest(RedfishError):
    """The BMC refused the request body (400, 405, 409, 412, 501 ...)."""


class RedfishUnavailable(RedfishError):
    """The BMC did not answer usefully after every retry (connection errors, 5xx, 503)."""


class RedfishTlsError(RedfishError):
    """The BMC's TLS certificate did not verify."""


class RedfishTimeout(RedfishError):
    """An operation (task, power change, BMC reset) did not finish in time."""


class RedfishOperationFailed(RedfishError):
    """A task or operation finished in a failed state."""


def extended_messages(body: Any) -> list[str]:
    """The human messages of a Redfish error body (`error.@Message.ExtendedInfo`)."""
    if not isinstance(body, dict):
        return []
    err = body.get("error", body)
    if not isinstance(err, dict):
        return []
    infos = err.get("@Message.ExtendedInfo") or []
    out = [str(i.get("Message") or i.get("MessageId")) for i in infos if isinstance(i, dict)]
    if not out and err.get("message"):
        out.append(str(err["message"]))
    return out


def raise_for_status(method: str, uri: str, status: int, body: Any, where: str) -> None:
    """Raise the typed error for a non-2xx answer; do nothing for 2xx/3xx."""
    if status < 400:
        return
    detail = "; ".join(extended_messages(body))[:400]
    text = scrub(f"{where}: {method} {uri} -> HTTP {status}" + (f": {detail}" if detail else ""))
    if status in (401, 403):
        raise RedfishAuthError(text)
    if status == 404:
        raise RedfishNotFound(text)
    if status >= 500 and status != 501:
        raise RedfishUnavailable(text)
    raise RedfishBadRequest(text)
