"""The lab's apt repository server (run as a plain script: stdlib only).

Usage: python3 repo_server.py DIRECTORY PORT_FILE ADDRESS [ADDRESS...]
Serves DIRECTORY read-only over HTTP on each ADDRESS (the twins' host-side veth addresses, never
0.0.0.0), all on one port: the first bind picks a free port, the others reuse it. The port is
written to PORT_FILE once every socket listens. SIGTERM stops it.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        sys.stderr.write(f"{self.client_address[0]} {format % args}\n")

    def do_PUT(self) -> None:  # read-only: only GET and HEAD are served
        self.send_error(405)


def serve(directory: Path, port_file: Path, addresses: list[str]) -> None:
    handler = functools.partial(QuietHandler, directory=str(directory))
    servers: list[ThreadingHTTPServer] = []
    port = 0
    for address in addresses:
        server = ThreadingHTTPServer((address, port), handler)
        port = server.server_address[1]
        servers.append(server)
    tmp = port_file.with_name(port_file.name + ".tmp")
    tmp.write_text(f"{port}\n")
    os.replace(tmp, port_file)
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers]
    for t in threads:
        t.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    for s in servers:
        s.shutdown()
        s.server_close()


if __name__ == "__main__":
    serve(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
