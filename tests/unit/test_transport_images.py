"""Transport security of the firmware image server (SimpleUpdate): it serves only the files registered with
it, read-only, bound to the configured address, and only inside its `with` block."""

from __future__ import annotations

import http.client
import socket
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
