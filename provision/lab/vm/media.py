"""LAB ONLY: `python -m provision.lab.vm.media READY FILE...`: the lab's installer CDs served over HTTP on
127.0.0.1 by the project's ImageServer (byte ranges, HEAD), in the background until SIGTERM.

Once it listens it writes READY (JSON: its pid and each file's URL, by file name), atomically; `provision
lab up --vm` starts it and reads the URLs, `provision lab down` stops it (provision/lab/vm/lab_up.py).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

from provision.redfish.image_server import ImageServer

MARKER = "provision.lab.vm.media"


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m provision.lab.vm.media READY FILE...", file=sys.stderr)
        return 2
    ready, files = Path(argv[0]), [Path(a).resolve() for a in argv[1:]]
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    with ImageServer() as srv:
        urls = {f.name: srv.url_for(f) for f in files}
        tmp = ready.with_name(ready.name + ".tmp")
        tmp.write_text(json.dumps({"pid": os.getpid(), "urls": urls}))
        tmp.replace(ready)
        stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
