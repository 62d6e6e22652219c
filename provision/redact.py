"""Keep secrets out of every log line, error and message: a registry of secret strings plus header patterns, a
run's own secrets, and the password of a URL."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

_LOCK = threading.Lock()
_SECRETS: set[str] = set()
MASK = "<redacted>"

_PATTERNS = (
    re.compile(r"(?i)(x-auth-token['\"]?\s*[:=]\s*['\"]?)[^\s'\",}]+"),
    re.compile(r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?(?:basic|bearer)?\s*)[^\s'\",}]+"),
    # a quoted password (JSON, or a Python dict's repr) up to its closing quote, spaces and commas included
    re.compile(r"""(?i)(["']?password["']?\s*[:=]\s*(["']))(?:\\.|(?!\2).)*"""),
    re.compile(r"""(?i)(["']?password["']?\s*[:=]\s*)(?=[^\s"'])[^\s",}]*"""),  # an unquoted one: password=x
)


def register_secret(value: str | None) -> None:
    """Remember a secret (password, token, basic-auth key) so scrub() removes it everywhere."""
    if value and len(value) >= 3:
        with _LOCK:
            _SECRETS.add(value)


def scrub(text: str) -> str:
    """Text with every registered secret and every auth header value masked."""
    with _LOCK:
        secrets = _longest_first(_SECRETS)
    for s in secrets:
        if s in text:
            text = text.replace(s, MASK)
    for pat in _PATTERNS:
        text = pat.sub(lambda m: m.group(1) + MASK, text)
    return text


def _longest_first(secrets: Iterable[str]) -> list[str]:
    """A secret that contains another is replaced before it, so it is masked whole."""
    return sorted(secrets, key=len, reverse=True)


def mask(text: str, secrets: tuple[str, ...]) -> str:
    """Text with each of these secrets (a run's own, registered or not) masked, longest first."""
    for secret in _longest_first(secrets):
        if secret:
            text = text.replace(secret, MASK)
    return text


def redact_url(url: str) -> str:
    """The URL with any password (in the authority or a `password=` parameter) masked."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":" + MASK
        netloc = f"{userinfo}@{host}"
    query = "&".join(
        f"{kv.split('=', 1)[0]}={MASK}" if kv.lower().startswith("password=") else kv
        for kv in parts.query.split("&")
    ) if parts.query else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


class RedactingFilter(logging.Filter):
    """Rewrites each record's message through scrub()."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a broken format string: keep the raw template only
            msg = str(record.msg)
        record.msg = scrub(msg)
        record.args = None
        return True


_FILTER = RedactingFilter()
LOGGERS = ("redfish", "redfish.rest.v1", "provision", "provision.redfish", "urllib3", "requests")


def install() -> None:
    """Attach the filter to the loggers the Redfish layer and its libraries write to, and to the handler
    Python falls back to when none is configured. A logger's filter does not see what its children log:
    the command line puts the filter on its handlers too (provision.cli.logs)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    last = logging.lastResort
    if last is not None and _FILTER not in last.filters:
        last.addFilter(_FILTER)
