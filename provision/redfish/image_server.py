"""A short-lived HTTP server that hands firmware images to a BMC's SimpleUpdate.

Serves only the files registered with it, under an unguessable path prefix, bound to a configurable
address (loopback by default), for as long as the `with` block lasts. Files are streamed in chunks (an image
of several GiB does not pass through memory), with Content-Length; HEAD answers the headers alone.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from provision.errors import RedfishError

LOG = logging.getLogger("provision.redfish")
CHUNK = 1 << 20  # bytes read from the file and written to the socket at a time


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
        """Names whose whole body was written (a download that completed, as far as this side can tell)."""
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
                if body:
                    owner.served.append(path.name)  # before the body: a client that has it sees it recorded
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(os.fstat(f.fileno()).st_size))
                self.end_headers()
                if body:
                    shutil.copyfileobj(f, self.wfile, CHUNK)
                    self.wfile.flush()
                    owner.sent.append(path.name)

    return Handler
