"""Where the journal lives, and creating it privately (0700 directory, 0600 files)."""

from __future__ import annotations

import os
from pathlib import Path

from provision.errors import InputError

ENV_STATE_DIR = "PROVISION_STATE_DIR"
DB_NAME = "provision.db"


def default_path() -> Path:
    """$PROVISION_STATE_DIR/provision.db, else ~/.local/state/provision/provision.db."""
    state_dir = os.environ.get(ENV_STATE_DIR)
    if state_dir:
        return Path(state_dir) / DB_NAME
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "provision" / DB_NAME


def prepare(path: Path) -> None:
    """Create the parent directory (0700) and an empty database file (0600) when missing.

    SQLite gives its -wal and -shm files the permissions of the database file, so creating
    the file ourselves first keeps all three private.
    """
    if path.is_dir():
        raise InputError(f"{path}: journal path is a directory, expected a database file")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise InputError(f"{path}: cannot create the journal: {exc.strerror}") from None
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
