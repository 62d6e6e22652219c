"""Private runtime directories and files on a shared controller.

A directory is created 0700 and then checked: a real directory (not a symlink), owned by this user, not
group or world writable. Anything else is refused with one line naming the path (UnsafePathError), so a
directory another local user made first (in /tmp, say) is never used. A directory of ours that is merely
readable by others is tightened to 0700. Files that hold secrets or node data are created 0600 from the
start (os.open with a mode, O_NOFOLLOW), never chmod-ed afterwards.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import BinaryIO, TextIO

from provision.errors import UnsafePathError

RUNTIME_ENV = "XDG_RUNTIME_DIR"


def ensure_private_dir(path: Path, parents: bool = False) -> Path:
    """`path` as a directory only this user can use: created 0700 when missing, refused when unsafe."""
    path = Path(path)
    try:
        if parents:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise UnsafePathError(f"{path}: cannot create a private directory: {exc.strerror}") from None
    check_private_dir(path)
    return path


def check_private_dir(path: Path) -> None:
    """Refuse a symlink, a non-directory, another user's directory, or one others can write."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise UnsafePathError(f"{path}: cannot read the private directory: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise UnsafePathError(f"{path}: expected a private directory, found a symlink or a file")
    if st.st_uid != os.getuid():
        raise UnsafePathError(f"{path}: owned by uid {st.st_uid}, not by this user (uid {os.getuid()}); "
                              "refusing to use it (remove it or choose another directory)")
    if st.st_mode & 0o022:
        raise UnsafePathError(f"{path}: group or world writable (mode {stat.filemode(st.st_mode)}); "
                              "refusing to use it (remove it or chmod 700)")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


def runtime_dir(name: str, override: str | None = None) -> Path:
    """A private per-user directory for sockets and scratch: `<override>/<name>-<uid>` when an override
    directory is given, else `$XDG_RUNTIME_DIR/<name>` (systemd's per-user 0700 tmpfs), else
    `<tmp>/<name>-<uid>`. Created 0700 and checked (ensure_private_dir)."""
    uid = os.getuid()
    if override:
        return ensure_private_dir(Path(override) / f"{name}-{uid}")
    xdg = os.environ.get(RUNTIME_ENV)
    if xdg and _is_own_dir(Path(xdg)):
        return ensure_private_dir(Path(xdg) / name)
    return ensure_private_dir(Path(tempfile.gettempdir()) / f"{name}-{uid}")


def _is_own_dir(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def private_fd(path: Path, append: bool = False) -> int:
    """A write descriptor on `path`, created 0600 (an existing file is made 0600 too); symlinks refused."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= os.O_APPEND if append else os.O_TRUNC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        raise UnsafePathError(f"{path}: cannot create a private file: {exc.strerror}") from None
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    return fd


def open_private(path: Path, append: bool = False) -> TextIO:
    """A text file opened for writing (or appending), 0600 from the start."""
    return os.fdopen(private_fd(path, append), "a" if append else "w", encoding="utf-8")


def open_private_bytes(path: Path) -> BinaryIO:
    """A binary file opened for writing, 0600 from the start."""
    return os.fdopen(private_fd(path), "wb")


def write_private(path: Path, data: str | bytes) -> Path:
    """Write `data` to `path`, created 0600 from the start."""
    if isinstance(data, bytes):
        with open_private_bytes(path) as fh:
            fh.write(data)
    else:
        with open_private(path) as text:
            text.write(data)
    return Path(path)
