"""Transport security of the firmware image server (SimpleUpdate): it serves only the files registered with
it, read-only, bound to the configured address, and only inside its `with` block."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from provision.redfish.image_server import ImageServer, ImageServerError


@pytest.fixture
def images(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "fw").mkdir()
    image = tmp_path / "fw" / "bmc_11.02.05.bin"
    image.write_bytes(b"PROVISION-LAB-FIRMWARE v1\ncomponent: bmc\nversion: 11.02.05\n")
    secret = tmp_path / "fw" / "not-in-the-catalog.key"
    secret.write_text("private\n")
    return image, secret


def _request(host: str, port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection(host, port, timeout=5)
    try:
        conn.request(method, path, body=body)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def test_serves_the_registered_file(images: tuple[Path, Path]) -> None:
    image, _ = images
    with ImageServer(bind="127.0.0.1") as srv:
        url = urlsplit(srv.url_for(image))
        assert _request("127.0.0.1", srv.actual_port, "GET", url.path) == (200, image.read_bytes())
        assert srv.served == [image.name]


def test_head_answers_the_length_without_the_body_and_is_not_a_download(images: tuple[Path, Path]) -> None:
    image, secret = images
    with ImageServer(bind="127.0.0.1") as srv:
        path = urlsplit(srv.url_for(image)).path
        conn = http.client.HTTPConnection("127.0.0.1", srv.actual_port, timeout=5)
        try:
            conn.request("HEAD", path)
            resp = conn.getresponse()
            assert (resp.status, resp.getheader("Content-Length"), resp.read()) == (
                200, str(image.stat().st_size), b"")
        finally:
            conn.close()
        assert _request("127.0.0.1", srv.actual_port, "HEAD", path.replace(image.name, secret.name))[0] == 404
        assert srv.served == []  # a HEAD (a BMC probing the URL) is not the BMC having fetched the image


# A child process serves a sparse file of 256 MiB to itself and reports how much its peak memory grew:
# streamed, it grows by about a chunk; read whole into memory (what the server once did), by the whole file.
_PEAK_RSS_CHILD = textwrap.dedent("""
    import http.client, resource, sys
    from pathlib import Path
    from urllib.parse import urlsplit
    from provision.redfish.image_server import ImageServer
    image = Path(sys.argv[1])
    with open(image, "wb") as f:
        f.truncate(256 << 20)
    with ImageServer() as srv:
        path = urlsplit(srv.url_for(image)).path
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        conn = http.client.HTTPConnection("127.0.0.1", srv.actual_port, timeout=60)
        conn.request("GET", path)
        resp = conn.getresponse()
        length, got = int(resp.getheader("Content-Length")), 0
        while chunk := resp.read(1 << 16):
            got += len(chunk)
        conn.close()
        grew_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(length, got, grew_kib)
""")


def test_a_large_image_is_streamed_not_read_into_memory(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-c", _PEAK_RSS_CHILD, str(tmp_path / "big.iso")],
                         capture_output=True, text=True, timeout=120, check=True).stdout  # fmt: skip
    length, got, grew_kib = (int(x) for x in out.split())
    assert length == got == 256 << 20
    assert grew_kib < 64 << 10, f"peak RSS grew by {grew_kib} KiB serving a 256 MiB file"


def test_serves_nothing_else(images: tuple[Path, Path]) -> None:
    image, secret = images
    with ImageServer(bind="127.0.0.1") as srv:
        path = urlsplit(srv.url_for(image)).path
        prefix = path.rsplit("/", 1)[0]
        for probe in ("/", prefix, f"{prefix}/", f"{prefix}/{secret.name}", f"/{image.name}",
                      f"/wrong-prefix/{image.name}", f"{prefix}/../{secret.name}", f"{prefix}/..%2f{secret.name}",
                      f"{prefix}/%2e%2e/%2e%2e/etc/passwd", f"{prefix}/{image.name}/x", "/etc/passwd"):
            status, body = _request("127.0.0.1", srv.actual_port, "GET", probe)
            assert status == 404, probe
            assert b"private" not in body
        assert srv.served == []


@pytest.mark.parametrize("method", ["PUT", "POST", "DELETE", "PATCH"])
def test_read_only(images: tuple[Path, Path], method: str) -> None:
    image, _ = images
    before = image.read_bytes()
    with ImageServer(bind="127.0.0.1") as srv:
        path = urlsplit(srv.url_for(image)).path
        status, _ = _request("127.0.0.1", srv.actual_port, method, path, body=b"overwritten")
    assert status >= 400
    assert image.read_bytes() == before
    assert sorted(p.name for p in image.parent.iterdir()) == sorted([image.name, "not-in-the-catalog.key"])


def test_bound_to_the_configured_address_only(images: tuple[Path, Path]) -> None:
    image, _ = images
    # Hold 127.0.0.1:P bound (not listening) so no other process can answer there while the server
    # is bound to 127.0.0.2:P: a connection to 127.0.0.1:P is refused unless the server listens on it.
    with socket.socket() as placeholder:
        placeholder.bind(("127.0.0.1", 0))
        port = placeholder.getsockname()[1]
        with ImageServer(bind="127.0.0.2", port=port) as srv:
            assert srv._server is not None and srv._server.server_address == ("127.0.0.2", port)
            url = urlsplit(srv.url_for(image))
            assert url.hostname == "127.0.0.2"
            assert _request("127.0.0.2", srv.actual_port, "GET", url.path)[0] == 200
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_advertised_address_changes_the_url_not_the_bind(images: tuple[Path, Path]) -> None:
    image, _ = images
    with ImageServer(bind="127.0.0.1", advertise="127.0.0.3") as srv:
        assert urlsplit(srv.url_for(image)).hostname == "127.0.0.3"
        assert srv._server is not None and srv._server.server_address[0] == "127.0.0.1"


def test_only_while_needed(images: tuple[Path, Path]) -> None:
    image, _ = images
    srv = ImageServer(bind="127.0.0.1")
    with pytest.raises(ImageServerError, match="not started"):
        srv.url_for(image)  # not started: no URL to hand out
    with srv:
        port = srv.actual_port
        path = urlsplit(srv.url_for(image)).path
        assert _request("127.0.0.1", port, "GET", path)[0] == 200
    # Closed: refused, or (on a busy machine another process may take the port at once) not our file.
    try:
        status, body = _request("127.0.0.1", port, "GET", path)
    except ConnectionRefusedError:
        return
    assert (status, body) != (200, image.read_bytes())


def test_each_server_has_its_own_unguessable_prefix(images: tuple[Path, Path]) -> None:
    image, _ = images
    with ImageServer() as a, ImageServer() as b:
        pa, pb = urlsplit(a.url_for(image)).path, urlsplit(b.url_for(image)).path
        assert pa != pb and len(pa.split("/")[1]) >= 16
        assert _request("127.0.0.1", b.actual_port, "GET", pa)[0] == 404


def _eventually(cond: Callable[[], bool]) -> bool:
    """`cond` within 5 s: the server records a body as sent after its last byte, which the client may
    have read first."""
    deadline = time.monotonic() + 5
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.01)
    return cond()


def _ask(srv: ImageServer, path: str, method: str = "GET", rng: str | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", srv.actual_port, timeout=5)
    try:
        conn.request(method, path, headers={"Range": rng} if rng is not None else {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


@pytest.fixture
def ranged(tmp_path: Path) -> tuple[Path, bytes]:
    data = bytes(range(256)) * 40  # 10240 bytes, each offset's byte telling where it came from
    (tmp_path / "install.iso").write_bytes(data)
    return tmp_path / "install.iso", data


@pytest.mark.parametrize(("rng", "want"), [
    ("bytes=0-0", range(0, 1)),
    ("bytes=32-2079", range(32, 2080)),
    ("bytes=10000-", range(10000, 10240)),
    ("bytes=10000-99999", range(10000, 10240)),  # past the end: up to the end
    ("bytes=-100", range(10140, 10240)),
    ("bytes=-99999", range(0, 10240)),
])
def test_a_byte_range_is_answered_206_with_its_content_range(ranged: tuple[Path, bytes], rng: str,
                                                            want: range) -> None:
    image, data = ranged
    with ImageServer() as srv:
        status, headers, body = _ask(srv, urlsplit(srv.url_for(image)).path, rng=rng)
    assert status == 206 and body == data[want.start:want.stop]
    assert headers["content-range"] == f"bytes {want.start}-{want.stop - 1}/{len(data)}"
    assert headers["content-length"] == str(len(want)) and headers["accept-ranges"] == "bytes"


@pytest.mark.parametrize("rng", ["bytes=10240-", "bytes=20000-20001", "bytes=-0"])
def test_a_range_past_the_end_is_416_naming_the_size(ranged: tuple[Path, bytes], rng: str) -> None:
    image, data = ranged
    with ImageServer() as srv:
        status, headers, body = _ask(srv, urlsplit(srv.url_for(image)).path, rng=rng)
        assert srv.served == [] and srv.sent == []
    assert (status, headers["content-range"], body) == (416, f"bytes */{len(data)}", b"")


@pytest.mark.parametrize("rng", ["bytes=0-1,5-6", "items=0-1", "bytes=9-2", "bytes=-", "bytes=x-"])
def test_a_range_it_does_not_take_is_ignored_and_the_file_sent_whole(ranged: tuple[Path, bytes], rng: str) -> None:
    image, data = ranged
    with ImageServer() as srv:
        status, headers, body = _ask(srv, urlsplit(srv.url_for(image)).path, rng=rng)
        assert _eventually(lambda: srv.sent == [image.name])
    assert (status, body, headers["accept-ranges"]) == (200, data, "bytes") and "content-range" not in headers


def test_head_advertises_ranges_and_answers_a_ranged_head_without_a_body(ranged: tuple[Path, bytes]) -> None:
    image, _ = ranged
    with ImageServer() as srv:
        path = urlsplit(srv.url_for(image)).path
        status, headers, body = _ask(srv, path, "HEAD")
        assert (status, headers["accept-ranges"], headers["content-length"], body) == (200, "bytes", "10240", b"")
        status, headers, body = _ask(srv, path, "HEAD", rng="bytes=100-199")
        assert (status, headers["content-range"], headers["content-length"], body) == (
            206, "bytes 100-199/10240", "100", b"")
        assert srv.served == [] and srv.sent == []


def test_ranges_that_cover_the_file_count_as_sent_once(ranged: tuple[Path, bytes]) -> None:
    image, _ = ranged
    with ImageServer() as srv:
        path = urlsplit(srv.url_for(image)).path
        for rng in ("bytes=4096-8191", "bytes=0-10", "bytes=8192-", "bytes=0-4095"):
            assert not srv.sent  # a BMC part-way through its reads has not got the image yet
            assert _ask(srv, path, rng=rng)[0] == 206
        assert _eventually(lambda: srv.sent == [image.name]) and srv.served == [image.name] * 4
    spans = ImageServer()
    for start, stop in ((4096, 8192), (0, 11), (8192, 10240), (20, 30), (0, 4096), (0, 1), (0, 10240)):
        spans._wrote("x", start, stop, 10240)
    assert spans.sent == ["x", "x"]  # covered by (0, 4096) once, then a whole read: each a download


def test_byte_range_table() -> None:
    from provision.redfish.image_server import byte_range

    assert byte_range(None, 10) is None and byte_range("bytes=3-1", 10) is None
    assert byte_range("bytes=2-4", 10) == range(2, 5) and byte_range("bytes = 2-4", 10) == range(2, 5)
    assert byte_range("bytes=0-", 0) == range(0) and byte_range("bytes=-5", 3) == range(0, 3)
