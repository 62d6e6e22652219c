"""LAB ONLY: a lab VM's network, restricted to what the lab forwards (stdlib only: qemu runs this file).

qemu's user-mode network (slirp) with `restrict=on`: the guest reaches nothing on the host or beyond,
no DNS, no route out (its router, GATEWAY, forwards nothing), except what is forwarded here:

- `hostfwd`: 127.0.0.1:<ssh_port> on the host to the guest's port 22 (how the lab reaches the node);
- `guestfwd`: HOST_FROM_GUEST:<port> in the guest to 127.0.0.1:<port> on the host, one per lab service
  the guest may use (the node's apt repository). For each connection the guest opens, qemu runs this file
  as a program (guestfwd's `cmd:`), the connection its stdin, stdout and stderr; it copies both ways
  to the host's port until both sides have closed.
"""

from __future__ import annotations

import os
import selectors
import shlex
import socket
import sys
from collections.abc import Sequence

GATEWAY = "10.0.2.2"  # slirp's router; unrestricted, it would be the host's loopback as the guest sees it
# Where the guest finds the host's forwarded lab services: an address of slirp's network that is neither its
# router nor its DNS server (libslirp refuses a guestfwd to either).
HOST_FROM_GUEST = "10.0.2.100"
LOOPBACK = "127.0.0.1"
CHUNK = 65536
CONNECT_TIMEOUT_S = 10.0


def netdev(ssh_port: int, guest_ports: Sequence[int], python: str = sys.executable) -> str:
    """The `-netdev`/`-nic` user options: restricted, SSH forwarded in, `guest_ports` forwarded out."""
    rules = [f"hostfwd=tcp:{LOOPBACK}:{ssh_port}-:22"]
    rules += [f"guestfwd=tcp:{HOST_FROM_GUEST}:{port}-cmd:{_forwarder(python, port)}" for port in guest_ports]
    return ",".join(["user", "restrict=on", *rules])


def _forwarder(python: str, port: int) -> str:
    """The program qemu runs per connection (its commas doubled: qemu's option syntax)."""
    command = shlex.join([python, "-I", os.path.abspath(__file__), LOOPBACK, str(port)])
    return command.replace(",", ",,")


def copy_both_ways(guest: socket.socket, upstream: socket.socket) -> None:
    """Copy each side's bytes to the other; an end of one side is passed on as a half-close."""
    peer = {guest: upstream, upstream: guest}
    with selectors.DefaultSelector() as selector:
        for sock in peer:
            selector.register(sock, selectors.EVENT_READ)
        reading = set(peer)
        while reading:
            for key, _ in selector.select():
                src = key.fileobj
                assert isinstance(src, socket.socket)
                data = src.recv(CHUNK)
                if data:
                    peer[src].sendall(data)
                    continue
                selector.unregister(src)
                reading.discard(src)
                peer[src].shutdown(socket.SHUT_WR)


def main(argv: Sequence[str]) -> int:
    """`guestnet.py HOST PORT`: forward the connection on fd 0 to HOST:PORT. Silent: its stderr is the guest's."""
    try:
        host, port = argv[0], int(argv[1])
        guest = socket.socket(fileno=os.dup(0))
        with guest, socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S) as upstream:
            upstream.settimeout(None)
            copy_both_ways(guest, upstream)
    except (OSError, ValueError, IndexError):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
