"""A short-lived HTTP server that hands firmware images to a BMC's SimpleUpdate.

Serves only the files registered with it, under an unguessable path prefix, bound to a configurable
address (loopback by default), for as long as the `with` block lasts. Files are streamed in chunks (an image
of several GiB does not pass through memory), with Content-Length; HEAD answers the headers alone.

Byte ranges (RFC 9110 section 14), as BMCs read virtual media (iLO, iDRAC and XCC fetch an ISO by ranges as the
host reads it): `Range: bytes=a-b`, `a-` or `-n` is answered 206 with Content-Range, one that starts past the
end 416 with `Content-Range: bytes */size`; a Range this server does not take (several ranges, another
unit, bad syntax) is ignored, the whole file sent (200), as the RFC allows. Every answer advertises
`Accept-Ranges: bytes`. A file whose every byte went out, by one GET or by ranges, counts as sent.
"""

from __future__ import annotations

import io
import logging
import os
import re
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote, unquote

from provision.errors import RedfishError

LOG = logging.getLogger("provision.redfish")
CHUNK = 1 << 20  # bytes read from the file and written to the socket at a time
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def byte_range(header: str | None, size: int) -> range | None:
    """The bytes a Range header asks of a file of `size` (None: no Range this server takes, send it
    whole; an empty range: unsatisfiable, 416)."""
    found = _RANGE.match((header or "").replace(" ", ""))
    if found is None or found.groups() == ("", ""):
        return None
    first, last = found.groups()
    if not first:  # -n: the last n bytes
        return range(max(size - int(last), 0), size) if int(last) else range(0)
    start = int(first)
    stop = min(int(last) + 1, size) if last else size
    if last and int(last) < start:
        return None  # invalid: ignored
    return range(start, stop) if start < size else range(0)


def _merge(spans: list[tuple[int, int]], new: tuple[int, int]) -> list[tuple[int, int]]:
    """`spans` (sorted, disjoint [start, stop) pairs) with `new` added."""
    out: list[tuple[int, int]] = []
    for start, stop in sorted([*spans, new]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], stop))
        else:
            out.append((start, stop))
    return out


class ImageServerError(RedfishError):
    """The image server could not listen, or was used outside its `with` block."""


class ImageServer:
    """`with ImageServer(bind="127.0.0.1") as srv: url = srv.url_for(path)`."""

    def __init__(self, bind: str = "127.0.0.1", port: int = 0, advertise: str | None = None) -> None:
        self.bind = bind
        self.port = port
        self.advertise = advertise or bind
        self.prefix = secrets.token_urlsafe(12)
        self.files: dict[str, Path] = {}
        self.served: list[str] = []
        self.sent: list[str] = []
        """Names whose whole body was written (a download that completed, as far as this side can tell),
        by one GET or by ranges that cover it."""
        self._spans: dict[str, list[tuple[int, int]]] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def url_for(self, path: Path) -> str:
        """Register `path` and return the URL the BMC should download it from."""
        name = path.name
        self.files[name] = path
        host = f"[{self.advertise}]" if ":" in self.advertise else self.advertise
        return f"http://{host}:{self.actual_port}/{self.prefix}/{quote(name)}"

    @property
    def actual_port(self) -> int:
        if self._server is None:
            raise ImageServerError(f"image server on {self.bind}: not started (use it inside its `with` block)")
        return int(self._server.server_address[1])

    def _wrote(self, name: str, start: int, stop: int, size: int) -> None:
        """Bytes [start, stop) of `name` went out: once all of them have, it counts as sent."""
        with self._lock:
            if (start, stop) == (0, size):
                self.sent.append(name)
                return
            before = self._spans.get(name, [])
            spans = self._spans[name] = _merge(before, (start, stop))
            if spans == [(0, size)] and before != spans:
                self.sent.append(name)

    def __enter__(self) -> ImageServer:
        try:
            self._server = ThreadingHTTPServer((self.bind, self.port), _handler(self))
        except OSError as exc:  # address in use, not an address of this host, not allowed
            why = exc.strerror or str(exc)
            raise ImageServerError(f"image server: cannot listen on {self.bind}:{self.port}: {why}") from None
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="image-server", daemon=True)
        self._thread.start()
        LOG.info("image server on %s:%d", self.bind, self.actual_port)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)


def _handler(owner: ImageServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt: str, *args: Any) -> None:
            LOG.debug("image server: " + fmt, *args)

        def do_GET(self) -> None:
            self._answer(body=True)

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def _answer(self, body: bool) -> None:
            parts = unquote(self.path.split("?", 1)[0]).strip("/").split("/")
            path = owner.files.get(parts[1]) if len(parts) == 2 and parts[0] == owner.prefix else None
            try:
                f = path.open("rb") if path is not None and path.is_file() else None
            except OSError:  # gone or unreadable since it was registered
                f = None
            if path is None or f is None:
                self.send_error(404)
                return
            with f:
                size = os.fstat(f.fileno()).st_size
                want = byte_range(self.headers.get("Range"), size)
                if want is not None and not want:
                    self._unsatisfiable(size)
                    return
                if body:
                    owner.served.append(path.name)  # before the body: a client that has it sees it recorded
                part = want if want is not None else range(size)
                self.send_response(200 if want is None else 206)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("Content-Length", str(len(part)))
                if want is not None:
                    self.send_header("Content-Range", f"bytes {part.start}-{part.stop - 1}/{size}")
                self.end_headers()
                if body:
                    written = _copy(f, self.wfile, part)
                    self.wfile.flush()
                    owner._wrote(path.name, part.start, part.start + written, size)

        def _unsatisfiable(self, size: int) -> None:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Handler


def _copy(src: BinaryIO, dst: io.BufferedIOBase, part: range) -> int:
    """Bytes `part` of `src` to `dst`, CHUNK at a time; how many were written."""
    src.seek(part.start)
    left = len(part)
    while left:
        block = src.read(min(CHUNK, left))
        if not block:
            break  # the file shrank while served: the client sees the body cut short
        dst.write(block)
        left -= len(block)
    return len(part) - left
