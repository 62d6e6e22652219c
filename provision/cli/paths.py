"""Paths a command will write, checked before it writes anything: one line naming the option and the path."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

from provision.errors import InputError

INSTALLER_SCHEMES = ("http", "https", "nfs", "cifs")


def _writable_ancestor(option: str, path: Path) -> None:
    """The nearest existing ancestor of `path` is a directory this user may create entries in."""
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"{option} {path}: {parent} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{option} {path}: directory {parent} is not writable")


def check_file(option: str, path: Path) -> None:
    """A file to create or append to: not a directory, and creatable."""
    if path.is_dir():
        raise InputError(f"{option} {path}: is a directory, expected a file")
    if path.exists():
        if not os.access(path, os.R_OK | os.W_OK):
            raise InputError(f"{option} {path}: not readable and writable")
        return
    _writable_ancestor(option, path)


def check_dir(option: str, path: Path) -> None:
    """A directory to create or write into."""
    if path.exists():
        if not path.is_dir():
            raise InputError(f"{option} {path}: is not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise InputError(f"{option} {path}: directory is not writable")
        return
    _writable_ancestor(option, path)


def check_url(option: str, url: str) -> None:
    parts = urlsplit(url)
    if parts.scheme not in INSTALLER_SCHEMES or not parts.netloc:
        raise InputError(f"{option} {url!r}: expected a {'/'.join(INSTALLER_SCHEMES)} URL the BMC can fetch")


def check_paths(journal: Path | None = None, log_dir: Path | None = None, os_image: str | None = None) -> None:
    """Every path option of a bring-up, before anything is written."""
    if journal is not None:
        check_file("--journal", journal)
    if log_dir is not None:
        check_dir("--log-dir", log_dir)
    if os_image is not None:
        check_url("--os-image", os_image)
