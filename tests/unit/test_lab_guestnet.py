"""The lab VM's restricted network: qemu's options, and the per-connection forwarder run as qemu runs it
(its stdin, stdout and stderr one end of a socket pair, as libslirp's guestfwd `cmd:` gives it)."""

from __future__ import annotations

import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from provision.lab import guestnet


def rules(netdev: str) -> list[str]:
    return netdev.replace(",,", "\0").split(",")


def test_the_network_is_restricted_with_ssh_forwarded_in_and_each_lab_service_out() -> None:
    opts = rules(guestnet.netdev(2222, [8080, 9090], python="/venv/bin/python3"))
    assert opts[:3] == ["user", "restrict=on", "hostfwd=tcp:127.0.0.1:2222-:22"]
    assert [o.split("-cmd:")[0] for o in opts[3:]] == ["guestfwd=tcp:10.0.2.100:8080", "guestfwd=tcp:10.0.2.100:9090"]
    program = shlex.split(opts[3].split("-cmd:")[1])
    assert program == ["/venv/bin/python3", "-I", str(Path(guestnet.__file__).resolve()), "127.0.0.1", "8080"]
    assert "restrict=off" not in guestnet.netdev(2222, [])


def test_a_comma_in_the_forwarders_path_is_doubled_for_qemus_option_parser() -> None:
    netdev = guestnet.netdev(2222, [8080], python="/opt/a,b/python3")
    assert "/opt/a,,b/python3" in netdev and len(rules(netdev)) == 4


@pytest.fixture
def upstream() -> Iterator[tuple[int, list[bytes]]]:
    """A loopback server that reads a request to its end, answers it reversed, and closes."""
    got: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            data = b""
            while chunk := conn.recv(4096):
                data += chunk
            got.append(data)
            conn.sendall(data[::-1])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], got
    server.close()
    thread.join(timeout=5)


def run_forwarder(port: int) -> tuple[socket.socket, subprocess.Popen[bytes]]:
    """The forwarder with one end of a socket pair as its fds 0-2; the other end is the guest's connection."""
    guest, child_end = socket.socketpair()
    with child_end:
        proc = subprocess.Popen([sys.executable, "-I", guestnet.__file__, "127.0.0.1", str(port)],
                                stdin=child_end, stdout=child_end, stderr=child_end)  # fmt: skip
    guest.settimeout(10)
    return guest, proc


def read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(4096):
        data += chunk
    return data


def test_the_forwarder_copies_both_ways_and_passes_each_end_on(upstream: tuple[int, list[bytes]]) -> None:
    port, got = upstream
    guest, proc = run_forwarder(port)
    with guest:
        request = b"GET /Packages HTTP/1.0\r\n\r\n" * 5000  # more than one read's worth
        guest.sendall(request)
        guest.shutdown(socket.SHUT_WR)  # the guest's end: passed on, so the server answers
        assert read_all(guest) == request[::-1]  # the server's close: passed on, so the guest sees the end
    assert proc.wait(timeout=10) == 0
    assert got == [request]


def test_a_service_that_does_not_answer_closes_the_guests_connection_silently() -> None:
    with socket.create_server(("127.0.0.1", 0)) as placeholder:
        port = placeholder.getsockname()[1]
    guest, proc = run_forwarder(port)  # nothing listens on `port` now
    with guest:
        assert proc.wait(timeout=10) == 1
        assert read_all(guest) == b""  # no traceback written into the guest's connection
