"""Which journal a command opens: a SQLite file (the default) or a PostgreSQL database shared by controllers.

`--journal PATH` is a SQLite file. Without it, `PROVISION_JOURNAL_URL=postgresql://user@host:port/db` (or
`postgres://`) names a PostgreSQL journal; else the inventory's `provision_journal_url` (group_vars/all, read by
provision.spec.journal_url); else the SQLite file under $PROVISION_STATE_DIR. `resolve` is the one place that
applies this order.

The PostgreSQL password follows the rules of BMC secrets: never in argv, never printed. It is read from
`PROVISION_JOURNAL_PASSWORD`, or the file named by `PROVISION_JOURNAL_PASSWORD_FILE`, or left to libpq
(`PGPASSWORD`, `~/.pgpass`, `PGPASSFILE`). A password written in the URL itself works but is redacted from
every message, as is every password read here (provision.redact).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from provision.errors import InputError
from provision.journal.paths import default_path
from provision.redact import redact_url, register_secret

ENV_URL = "PROVISION_JOURNAL_URL"
ENV_PASSWORD = "PROVISION_JOURNAL_PASSWORD"
ENV_PASSWORD_FILE = "PROVISION_JOURNAL_PASSWORD_FILE"
SCHEMES = ("postgresql", "postgres")


class Backend(StrEnum):
    SQLITE = "sqlite"
    POSTGRESQL = "postgresql"


class Location(BaseModel):
    """Where the journal is; `shown` is what messages print (never a password)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Backend
    path: Path | None = None
    url: str | None = Field(default=None, repr=False)
    password: str | None = Field(default=None, repr=False, exclude=True)

    @property
    def shown(self) -> str:
        if self.backend is Backend.SQLITE:
            return str(self.path)
        return redact_url(self.url or "")


def recorded(location: Location) -> bool:
    """Whether a read-only command should open it: a SQLite file that exists, or a PostgreSQL database (the
    server answers whether the journal's tables are there)."""
    return location.backend is Backend.POSTGRESQL or (location.path is not None and location.path.is_file())


class Configured(Protocol):
    """A URL a file sets (the inventory's), and what messages call that setting."""

    @property
    def url(self) -> str: ...
    @property
    def where(self) -> str: ...


def resolve(path: Path | str | Location | None,
            configured: Callable[[], Configured | None] | None = None) -> Location:
    """The journal for a `--journal` value; None: PROVISION_JOURNAL_URL's, else what `configured` reads (the
    inventory's setting: read only when neither names a journal), else the default file. A Location is taken as
    it is (resolved already)."""
    if isinstance(path, Location):
        return path
    if path is not None:
        text = str(path)
        if text.split(":", 1)[0] in SCHEMES and ":/" in text:
            raise InputError(f"--journal {redact_url(text)}: --journal takes a SQLite file; name a PostgreSQL "
                             f"journal with {ENV_URL}")
        return Location(backend=Backend.SQLITE, path=Path(path))
    url = os.environ.get(ENV_URL, "").strip()
    if url:
        return postgres(url)
    setting = configured() if configured is not None else None
    if setting is not None:
        return postgres(setting.url, setting.where)
    return Location(backend=Backend.SQLITE, path=default_path())


def postgres(url: str, setting: str = ENV_URL) -> Location:
    """A PostgreSQL location from a URL (`setting` names where it came from), its password resolved (never
    printed)."""
    parts = urlsplit(url)
    if parts.password:
        register_secret(parts.password)
    shape = "expected postgresql://[user@]host[:port]/database"
    where = f"{setting}={redact_url(url)}"
    if parts.scheme not in SCHEMES:
        raise InputError(f"{where}: {shape}")
    params = parse_qs(parts.query)
    if not parts.hostname and not params.get("host"):  # ?host=/run/postgresql names a Unix socket's directory
        raise InputError(f"{where}: no host; {shape}")
    if not parts.path.strip("/") and not params.get("dbname"):
        raise InputError(f"{where}: no database name; {shape}")
    try:
        parts.port  # noqa: B018 -- validates the port
    except ValueError:
        raise InputError(f"{where}: the port is not a number") from None
    return Location(backend=Backend.POSTGRESQL, url=url, password=_password())


def _password() -> str | None:
    value = os.environ.get(ENV_PASSWORD)
    file = os.environ.get(ENV_PASSWORD_FILE)
    if value:
        register_secret(value)
        return value
    if file:
        try:
            value = Path(file).read_text().strip()
        except OSError as exc:
            raise InputError(f"{ENV_PASSWORD_FILE}={file}: cannot read it: {exc.strerror}") from None
        if not value:
            raise InputError(f"{ENV_PASSWORD_FILE}={file}: the file is empty")
        register_secret(value)
        return value
    if os.environ.get("PGPASSWORD"):
        register_secret(os.environ["PGPASSWORD"])
    return None  # libpq's own: PGPASSWORD, ~/.pgpass
