"""The os stage's installer check: does the installer URL serve an image the host boots from CD?

Reads only the sectors the decision needs (provision/bringup/eltorito.py): 16-17, then the boot catalog's,
each with an HTTP Range request. A server that ignores Range (200 with the whole body) is read as a
stream up to the end of the wanted bytes, never further; one whose bytes lie past MAX_SKIP is not
checked (a log line says so) rather than read for minutes. TLS is verified (the default context), each
request bounded by its timeout. Non-HTTP URLs (NFS, CIFS) are the BMC's to fetch: not checked.
"""

from __future__ import annotations

import logging
import re
import urllib.error
import urllib.request
from http.client import HTTPResponse

from pydantic import BaseModel, ConfigDict

from provision.bringup import eltorito
from provision.bringup.eltorito import SECTOR, NotBootable, Platform
from provision.spec import HostEntry

LOG = logging.getLogger("provision.bringup")
CHUNK = 1 << 16
MAX_SKIP = 64 << 20
"""The most bytes read and dropped to reach a range from a server that ignores Range."""
_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


class Piece(BaseModel):
    """Bytes read from `start` (fewer than asked at the end of the file), and the file's size if told."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data: bytes
    total: int | None = None
    content_type: str = ""


class TooFar(Exception):
    """The server ignores Range and the bytes wanted lie past MAX_SKIP."""


def boot_mode(host: HostEntry) -> Platform | None:
    """The firmware mode the profile pins (bios.settings.boot_mode), None: not pinned (either will do)."""
    mode = str(host.spec.bios.settings.get("boot_mode", "")).lower()
    return Platform.UEFI if mode == "uefi" else Platform.BIOS if mode in ("legacy", "bios") else None


def _read(resp: HTTPResponse, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        block = resp.read(min(CHUNK, n - len(out)))
        if not block:
            break
        out += block
    return bytes(out)


def read_range(url: str, start: int, length: int, timeout_s: float) -> Piece:
    """`length` bytes of `url` from `start` (none past the end: 416); HTTPError / URLError / OSError pass."""
    req = urllib.request.Request(url, headers={"Range": f"bytes={start}-{start + length - 1}"})
    try:
        resp = urllib.request.urlopen(req, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        if exc.code != 416:
            raise
        told = re.match(r"^bytes \*/(\d+)$", (exc.headers.get("Content-Range") or "").strip())
        return Piece(data=b"", total=int(told.group(1)) if told else None,
                     content_type=exc.headers.get("Content-Type", ""))
    with resp:
        return _piece(resp, start, length)


def _piece(resp: HTTPResponse, start: int, length: int) -> Piece:
    kind = resp.headers.get("Content-Type", "")
    if resp.status == 206:
        told = _RANGE.match(resp.headers.get("Content-Range", "").strip())
        if told is None or int(told.group(1)) != start:
            raise OSError(f"answered Range {start}- with Content-Range {resp.headers.get('Content-Range')!r}")
        total = int(told.group(3)) if told.group(3) != "*" else None
        return Piece(data=_read(resp, length), total=total, content_type=kind)
    size = resp.headers.get("Content-Length")
    total = int(size) if size and size.isdigit() else None
    if start > MAX_SKIP and (total is None or start < total):
        raise TooFar
    skipped = _drop(resp, start)  # the server ignores Range: read up to the bytes wanted, then stop
    data = _read(resp, length) if skipped == start else b""
    return Piece(data=data, total=total if total is not None or skipped == start else skipped, content_type=kind)


def _drop(resp: HTTPResponse, n: int) -> int:
    """Read and drop `n` bytes; how many were read (fewer: the body ended)."""
    done = 0
    while done < n:
        block = resp.read(min(CHUNK, n - done))
        if not block:
            break
        done += len(block)
    return done


def _sent(piece: Piece) -> str:
    kind = piece.content_type.split(";", 1)[0].strip()
    size = f", {piece.total} bytes" if piece.total is not None else ""
    return f"; the server sent {kind}{size}" if kind.startswith("text/") else ""


def check(url: str, mode: Platform | None, timeout_s: float = 15.0) -> eltorito.Bootable:
    """The platforms the installer boots on; NotBootable (one line) when it boots none in `mode`."""
    where = f"installer {url}"
    head = read_range(url, eltorito.PVD_SECTOR * SECTOR, 2 * SECTOR, timeout_s)
    try:
        found = eltorito.descriptors(head.data, where)
    except NotBootable as exc:
        raise NotBootable(f"{exc}{_sent(head)}") from None
    if head.total is not None and head.total < found.volume_bytes:
        raise NotBootable(f"{where}: truncated: {head.total} bytes where its volume descriptor names "
                          f"{found.volume_bytes}")
    catalog = read_range(url, found.catalog_sector * SECTOR, SECTOR, timeout_s)
    if len(catalog.data) < SECTOR:
        raise NotBootable(f"{where}: truncated: its boot catalog (sector {found.catalog_sector}) is past the "
                          "end of the file")
    return eltorito.check(head.data, catalog.data, mode, where)


def bootable_refusal(url: str, mode: Platform | None, timeout_s: float = 15.0) -> str | None:
    """Why the installer would not boot the host (None: it boots, or it cannot be told from here)."""
    if not url.startswith(("http://", "https://")):
        return None
    try:
        check(url, mode, timeout_s)
    except NotBootable as exc:
        return str(exc)
    except TooFar:
        LOG.warning("installer %s: not checked for El Torito: the server ignores Range and the boot catalog "
                    "lies past %d MiB", url, MAX_SKIP >> 20)
    except urllib.error.HTTPError as exc:
        return f"installer {url}: HTTP {exc.code} reading its boot sectors"
    except (urllib.error.URLError, OSError) as exc:
        return f"installer {url}: reading its boot sectors: {getattr(exc, 'reason', exc)}"
    return None
