"""The os stage's installer preflight: does the installer URL answer, with an image the host boots from CD?

One request path (preflight): a ranged GET of sectors 16 to 16 + FIRST_SECTORS - 1 both proves the URL
answers and reads what provision/bringup/eltorito.py decides from: the volume descriptors (16-17) and, in
most images, the boot catalog's sector; only a catalog past that range takes a second ranged GET. A
server that ignores Range (200 with the whole body) is read as a stream up to the end of the wanted
bytes, then closed, never further; one whose bytes lie past MAX_SKIP is not read for minutes: the image
could not be checked, a refusal (never passed as bootable) unless the host's inventory sets
provision_os_installer_skip_boot_check (then only the first read is made: the URL answers). TLS is
always verified, against provision_os_installer_ca_file where the inventory names a site CA (else the
system's CAs), each read bounded by its timeout and the whole preflight by DEADLINE_S (a server that
trickles its bytes does not hold the stage). Credentials in the URL go as basic
auth and are masked in every message. Non-HTTP URLs (NFS, CIFS) are the BMC's to fetch: not checked.
"""

from __future__ import annotations

import base64
import http.client
import logging
import re
import ssl
import time
import urllib.error
import urllib.request
from http.client import HTTPResponse
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict

from provision.bringup import eltorito
from provision.bringup.eltorito import SECTOR, NotBootable, Platform
from provision.errors import ChecksIncomplete
from provision.redact import redact_url, register_secret
from provision.spec import HostEntry
from provision.spec.fleet import InstallerAccess

LOG = logging.getLogger("provision.bringup")
CHUNK = 1 << 16
FIRST_SECTORS = 32
"""Sectors read by the first request from sector 16: the descriptors and a catalog up to sector 47."""
MAX_SKIP = 64 << 20
"""The most bytes read and dropped to reach a range from a server that ignores Range."""
DEADLINE_S = 60.0
"""The longest the whole preflight may take, however the server paces its answer."""
_RANGE = re.compile(r"^bytes (\d+)-(\d+)/(\d+|\*)$")


class Piece(BaseModel):
    """Bytes read from `start` (fewer than asked at the end of the file), and the file's size if told."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    data: bytes
    total: int | None = None
    content_type: str = ""


class Unchecked(ChecksIncomplete):
    """The image could not be checked for El Torito (not: it does not boot); the message says why."""


class TooFar(Unchecked):
    """The server ignores Range and the bytes wanted lie past MAX_SKIP."""


class BadRange(Unchecked):
    """The server answered a Range request with another range."""


def boot_mode(host: HostEntry) -> Platform | None:
    """The firmware mode the profile pins (bios.settings.boot_mode), None: not pinned (either will do)."""
    mode = str(host.spec.bios.settings.get("boot_mode", "")).lower()
    return Platform.UEFI if mode == "uefi" else Platform.BIOS if mode in ("legacy", "bios") else None


def _block(resp: HTTPResponse, n: int, until: float | None) -> bytes:
    """What one receive gives (at most `n` bytes; b"": the body ended); TimeoutError past `until`."""
    if until is not None and time.monotonic() > until:
        raise TimeoutError("its answer did not arrive within the preflight's deadline")
    return resp.read1(n)


def _read(resp: HTTPResponse, n: int, until: float | None = None) -> bytes:
    out = bytearray()
    while len(out) < n:
        block = _block(resp, min(CHUNK, n - len(out)), until)
        if not block:
            break
        out += block
    return bytes(out)


def _request(url: str, headers: dict[str, str]) -> urllib.request.Request:
    """The request for `url`; a user and password in it (user:password@host) go as basic auth."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        userinfo, host = parts.netloc.rsplit("@", 1)
        user, _, password = userinfo.partition(":")
        register_secret(unquote(password))
        token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
        headers = {**headers, "Authorization": f"Basic {token}"}
        url = urlunsplit(parts._replace(netloc=host))
    return urllib.request.Request(url, headers=headers)


class _Redirect(urllib.request.HTTPRedirectHandler):
    """Follows redirects as urllib does, but the basic auth of the URL's credentials goes to its host only."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and urlsplit(newurl).netloc != urlsplit(req.full_url).netloc:
            new.remove_header("Authorization")
        return new


def _open(req: urllib.request.Request, timeout_s: float, tls: ssl.SSLContext | None) -> Any:
    """The answer to `req` (HTTPError for an error status), TLS verified by `tls` (None: the default)."""
    return urllib.request.build_opener(urllib.request.HTTPSHandler(context=tls), _Redirect).open(
        req, timeout=timeout_s)


def read_range(url: str, start: int, length: int, timeout_s: float,
               tls: ssl.SSLContext | None = None, until: float | None = None) -> Piece:
    """`length` bytes of `url` from `start` (none past the end: 416); HTTPError / URLError / OSError pass.
    `tls`: the context verifying an https:// server (None: the default, the system's CAs); `until`: the
    time.monotonic() past which it stops with TimeoutError (None: each read bounded by `timeout_s` only)."""
    req = _request(url, {"Range": f"bytes={start}-{start + length - 1}"})
    if until is not None:
        left = until - time.monotonic()
        if left <= 0:
            raise TimeoutError("its answer did not arrive within the preflight's deadline")
        timeout_s = min(timeout_s, left)
    try:
        resp = _open(req, timeout_s, tls)
    except urllib.error.HTTPError as exc:
        if exc.code != 416:
            raise
        told = re.match(r"^bytes \*/(\d+)$", (exc.headers.get("Content-Range") or "").strip())
        return Piece(data=b"", total=int(told.group(1)) if told else None,
                     content_type=exc.headers.get("Content-Type", ""))
    with resp:
        return _piece(resp, start, length, until)


def _piece(resp: HTTPResponse, start: int, length: int, until: float | None) -> Piece:
    kind = resp.headers.get("Content-Type", "")
    if resp.status == 206:
        told = _RANGE.match(resp.headers.get("Content-Range", "").strip())
        if told is None or int(told.group(1)) != start:
            raise BadRange(f"the server answered Range bytes={start}- with Content-Range "
                           f"{resp.headers.get('Content-Range')!r}")
        total = int(told.group(3)) if told.group(3) != "*" else None
        return Piece(data=_read(resp, length, until), total=total, content_type=kind)
    size = resp.headers.get("Content-Length")
    total = int(size) if size and size.isdigit() else None
    if start > MAX_SKIP and (total is None or start < total):
        raise TooFar(f"the server ignores Range and byte {start} lies past the {MAX_SKIP} bytes read at most")
    skipped = _drop(resp, start, until)  # the server ignores Range: read up to the bytes wanted, then stop
    data = _read(resp, length, until) if skipped == start else b""
    return Piece(data=data, total=total if total is not None or skipped == start else skipped, content_type=kind)


def _drop(resp: HTTPResponse, n: int, until: float | None) -> int:
    """Read and drop `n` bytes; how many were read (fewer: the body ended)."""
    done = 0
    while done < n:
        block = _block(resp, min(CHUNK, n - done), until)
        if not block:
            break
        done += len(block)
    return done


def _sent(piece: Piece) -> str:
    kind = piece.content_type.split(";", 1)[0].strip()
    size = f", {piece.total} bytes" if piece.total is not None else ""
    return f"; the server sent {kind}{size}" if kind.startswith("text/") else ""


def tls_context(access: InstallerAccess) -> ssl.SSLContext | None:
    """The context verifying against the site CA (None: no CA file, the default context); ssl.SSLError
    for a file that is no CA bundle."""
    return ssl.create_default_context(cafile=str(access.ca_file)) if access.ca_file is not None else None


def check(url: str, mode: Platform | None, timeout_s: float = 15.0, tls: ssl.SSLContext | None = None,
          deadline_s: float = DEADLINE_S) -> eltorito.Bootable:
    """The platforms the installer boots on; NotBootable (one line) when it boots none in `mode`;
    TimeoutError when the reads together take longer than `deadline_s`."""
    where = f"installer {redact_url(url)}"
    until = time.monotonic() + deadline_s
    head = read_range(url, eltorito.PVD_SECTOR * SECTOR, FIRST_SECTORS * SECTOR, timeout_s, tls, until)
    try:
        found = eltorito.descriptors(head.data, where)
    except NotBootable as exc:
        raise NotBootable(f"{exc}{_sent(head)}") from None
    if head.total is not None and head.total < found.volume_bytes:
        raise NotBootable(f"{where}: truncated: {head.total} bytes where its volume descriptor names "
                          f"{found.volume_bytes}")
    catalog = _catalog(url, head, found.catalog_sector, timeout_s, tls, until)
    if len(catalog.data) < SECTOR:
        raise NotBootable(f"{where}: truncated: its boot catalog (sector {found.catalog_sector}) is past the "
                          "end of the file")
    return eltorito.check(head.data, catalog.data, mode, where)


def _catalog(url: str, head: Piece, sector: int, timeout_s: float, tls: ssl.SSLContext | None,
             until: float) -> Piece:
    """The catalog's sector: from the first read when it holds it, else a second ranged read."""
    at = (sector - eltorito.PVD_SECTOR) * SECTOR
    if at + SECTOR <= len(head.data):
        return head.model_copy(update={"data": head.data[at:at + SECTOR]})
    return read_range(url, sector * SECTOR, SECTOR, timeout_s, tls, until)


def preflight(url: str, mode: Platform | None, access: InstallerAccess = InstallerAccess(),
              timeout_s: float = 15.0, deadline_s: float = DEADLINE_S) -> str | None:
    """Why the installer would not boot the host, in one line naming the URL (masked): it does not answer
    (HTTP error, refused, timed out, TLS) or serves no image the host boots from CD. None: it boots, or
    it cannot be told from here (not HTTP). An image that could not be checked is refused too, unless
    `access` skips the boot check. Each read waits `timeout_s` at most, all of them `deadline_s`."""
    if not url.startswith(("http://", "https://")):
        return None
    shown = redact_url(url)
    try:
        tls = tls_context(access)
    except (ssl.SSLError, OSError) as exc:
        return f"installer {shown}: provision_os_installer_ca_file {access.ca_file} is not a CA bundle ({exc})"
    try:
        if access.skip_boot_check:
            read_range(url, eltorito.PVD_SECTOR * SECTOR, FIRST_SECTORS * SECTOR, timeout_s, tls,
                       time.monotonic() + deadline_s)  # it answers
            LOG.warning("installer %s: not checked for El Torito (provision_os_installer_skip_boot_check)", shown)
        else:
            check(url, mode, timeout_s, tls, deadline_s)
    except NotBootable as exc:
        return str(exc)
    except Unchecked as exc:
        return (f"installer {shown}: could not be checked for El Torito: {exc} (serve it with byte ranges, or "
                "set provision_os_installer_skip_boot_check: true to install unchecked)")
    except urllib.error.HTTPError as exc:
        exc.close()
        return f"installer {shown}: HTTP {exc.code}"
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, ssl.SSLCertVerificationError):
            return (f"installer {shown}: TLS certificate not trusted ({reason.verify_message}); give the site CA "
                    "with provision_os_installer_ca_file")
        return f"installer {shown} does not answer: {str(reason).replace(url, shown) or type(reason).__name__}"
    return None
