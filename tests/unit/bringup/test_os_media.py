"""The os stage's installer check over HTTP: real xorriso images served by the ImageServer (byte ranges) and
by a server that ignores Range (200, the whole body, of which the check reads only what it needs), an HTML
page, truncated files, a TLS server whose certificate is not trusted; and the refusal in the preflight."""

from __future__ import annotations

import base64
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import pytest

from provision.bringup.eltorito import Platform
from provision.bringup.stages import os_media
from provision.errors import ChecksIncomplete, ProvisionError
from provision.redfish.image_server import ImageServer
from provision.spec.fleet import InstallerAccess
from tests.unit.bringup.isos import isos, needs_xorriso
from tests.unit.redfish.rf_fakebmc import make_cert

pytestmark = needs_xorriso
__all__ = ["isos"]  # the fixture
BIOS, UEFI = Platform.BIOS, Platform.UEFI


class Served:
    """A loopback ThreadingHTTPServer for `handler`, serving while in a `with` block."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]

    def __enter__(self) -> Self:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class Plain(Served):
    """A server that ignores Range: 200 and the whole body, counting what it managed to write."""

    def __init__(self, body: bytes, kind: str = "application/octet-stream", tls: tuple[Path, Path] | None = None,
                 length: bool = True) -> None:
        self.body, self.kind, self.length, self.written = body, kind, length, 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", owner.kind)
                if owner.length:
                    self.send_header("Content-Length", str(len(owner.body)))
                self.end_headers()
                try:
                    for at in range(0, len(owner.body), 1 << 16):
                        self.wfile.write(owner.body[at:at + (1 << 16)])
                        owner.written = at + len(owner.body[at:at + (1 << 16)])
                except OSError:  # the client stopped reading and closed
                    pass

        super().__init__(Handler)
        if tls is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.server.server_address[1]}/install.iso"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Callable[[bytes], str]]:
    """URL of bytes served by an ImageServer (with ranges)."""
    with ImageServer() as srv:
        def serve(data: bytes, name: str = "install.iso") -> str:
            (tmp_path / name).write_bytes(data)
            return srv.url_for(tmp_path / name)
        yield serve


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Range headers the check sent."""
    seen: list[str] = []
    real = os_media._open

    def spy(req: urllib.request.Request, *args: Any) -> Any:
        seen.append(str(req.get_header("Range")))
        return real(req, *args)

    monkeypatch.setattr(os_media, "_open", spy)
    return seen


@pytest.mark.parametrize(("kind", "mode", "refused"), [
    ("efi", UEFI, None), ("efi", None, None), ("efi", BIOS, "no bootable El Torito entry for BIOS "
                                                           "(the catalog boots UEFI)"),
    ("bios", BIOS, None), ("bios", UEFI, "no bootable El Torito entry for UEFI (the catalog boots BIOS)"),
    ("both", UEFI, None), ("both", BIOS, None),
    ("data", None, "ISO 9660 but not bootable from CD (no El Torito boot record at sector 17)"),
])
def test_an_image_served_with_ranges(isos: dict[str, Path], served: Callable[[bytes], str], asked: list[str],
                                     kind: str, mode: Platform | None, refused: str | None) -> None:
    url = served(isos[kind].read_bytes())
    got = os_media.preflight(url, mode)
    assert got == (f"installer {url}: {refused}" if refused else None)
    # one request: sectors 16-47, which hold the descriptors and the catalog (sector 33 in xorriso's layout)
    assert asked == ["bytes=32768-98303"]


@pytest.mark.parametrize("ranges", [True, False])
def test_a_catalog_past_the_first_range_takes_one_more_ranged_read(
        isos: dict[str, Path], served: Callable[[bytes], str], asked: list[str], monkeypatch: pytest.MonkeyPatch,
        ranges: bool) -> None:
    monkeypatch.setattr(os_media, "FIRST_SECTORS", 2)  # only the descriptors: the catalog (33) lies beyond
    image = isos["efi"].read_bytes()
    if ranges:
        assert os_media.preflight(served(image), UEFI) is None
    else:
        with Plain(image) as srv:
            assert os_media.preflight(srv.url, UEFI) is None
    assert asked == ["bytes=32768-36863", "bytes=67584-69631"]


@pytest.mark.parametrize("length", [True, False])
def test_a_server_that_ignores_range_is_read_only_as_far_as_the_catalog(isos: dict[str, Path], length: bool) -> None:
    big = isos["efi"].read_bytes() + bytes(32 << 20)  # an appended partition: larger than its volume is fine
    with Plain(big, length=length) as srv:
        assert os_media.preflight(srv.url, UEFI) is None
        assert os_media.check(srv.url, UEFI).platforms == {UEFI}
    assert srv.written < 8 << 20, f"{srv.written} of {len(big)} bytes went out: the whole file was read"


def test_an_html_page_is_not_an_iso(isos: dict[str, Path], served: Callable[..., str]) -> None:
    page = b"<html><body><h1>Sign in to continue</h1></body></html>\n"
    with Plain(page, kind="text/html; charset=utf-8") as srv:
        assert os_media.preflight(srv.url, None) == (
            f"installer {srv.url}: not an ISO 9660 image (no primary volume descriptor at sector 16); the server "
            f"sent text/html, {len(page)} bytes")
    url = served(page, "index.html")  # answered 416 by a server that takes ranges: shorter than sector 16
    assert os_media.preflight(url, None) == (
        f"installer {url}: not an ISO 9660 image (no primary volume descriptor at sector 16)")


@pytest.mark.parametrize("cut", [20_000, 36_864, 40_000, 67_584, 70_000])
def test_a_truncated_image(isos: dict[str, Path], served: Callable[[bytes], str], cut: int) -> None:
    image = isos["efi"].read_bytes()
    for url in (served(image[:cut]), None):
        if url is None:
            with Plain(image[:cut]) as srv:
                got = os_media.preflight(srv.url, UEFI)
                url = srv.url
        else:
            got = os_media.preflight(url, UEFI)
        if cut < 36_864:  # not even the two descriptors
            assert got == f"installer {url}: not an ISO 9660 image (no primary volume descriptor at sector 16)"
        else:
            assert got == f"installer {url}: truncated: {cut} bytes where its volume descriptor names {len(image)}"


def test_a_catalog_past_the_end_of_a_file_of_unknown_size_is_truncated(isos: dict[str, Path]) -> None:
    image = isos["efi"].read_bytes()
    with Plain(image[:40_000], length=False) as srv:  # close-delimited: the size is found only at the end
        assert os_media.preflight(srv.url, UEFI) == (
            f"installer {srv.url}: truncated: its boot catalog (sector 33) is past the end of the file")


def test_tls_is_verified_against_the_site_ca(isos: dict[str, Path], lab_ca: tuple[Path, Path, Path],
                                            tmp_path: Path) -> None:
    ca, cert, key = lab_ca  # the lab BMC simulator's CA code: a throwaway CA and a cert for 127.0.0.1
    with Plain(isos["efi"].read_bytes(), tls=(cert, key)) as srv:
        got = os_media.preflight(srv.url, UEFI, timeout_s=5)
        assert got is not None and "\n" not in got
        assert got.startswith(f"installer {srv.url}: TLS certificate not trusted (")
        assert "certificate" in got.split(": ", 1)[1] and got.endswith("provision_os_installer_ca_file")
        assert os_media.preflight(srv.url, UEFI, InstallerAccess(ca_file=ca), timeout_s=5) is None
        other, _, _ = make_cert(tmp_path)  # another CA: still not trusted
        assert "TLS certificate not trusted" in (
            os_media.preflight(srv.url, UEFI, InstallerAccess(ca_file=other), timeout_s=5) or "")
        junk = tmp_path / "junk.pem"
        junk.write_text("not a certificate\n")
        assert (os_media.preflight(srv.url, UEFI, InstallerAccess(ca_file=junk), timeout_s=5) or "").startswith(
            f"installer {srv.url}: provision_os_installer_ca_file {junk} is not a CA bundle (")


@pytest.mark.parametrize("relative", [True, False])
def test_the_ca_file_is_an_inventory_variable(inventory_copy: Path, lab_ca: tuple[Path, Path, Path],
                                              relative: bool) -> None:
    from provision.spec import load_fleet

    ca = inventory_copy.parent / "site-ca.pem"
    ca.write_bytes(lab_ca[0].read_bytes())
    hv = inventory_copy.parent / "host_vars" / "node01.yml"
    hv.write_text(hv.read_text() + f"provision_os_installer_ca_file: {'site-ca.pem' if relative else ca}\n")
    host = load_fleet(inventory_copy).select(["node01"])[0]
    assert host.installer.ca_file == ca


def test_what_is_not_http_is_the_bmcs_to_fetch_and_errors_are_one_line(served: Callable[[bytes], str]) -> None:
    assert os_media.preflight("nfs://server/export/install.iso", UEFI) is None
    url = served(b"x").replace("install.iso", "gone.iso")
    assert os_media.preflight(url, UEFI) == f"installer {url}: HTTP 404"


class Status(Served):
    """A server answering every GET with `code` (after `delay_s`), recording the requests it got."""

    def __init__(self, code: int, delay_s: float = 0.0) -> None:
        self.seen: list[tuple[str, str | None, str | None]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                owner.seen.append((self.command, self.headers.get("Range"), self.headers.get("Authorization")))
                time.sleep(delay_s)
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_HEAD = do_GET

        super().__init__(Handler)


@pytest.mark.parametrize("code", [404, 416, 500, 503])
def test_an_error_answer_is_one_line_naming_the_url_with_its_password_masked(code: int) -> None:
    with Status(code) as srv:
        url = f"http://ops:s3cret-pw@127.0.0.1:{srv.port}/images/install.iso"
        got = os_media.preflight(url, UEFI)
        shown = f"http://ops:<redacted>@127.0.0.1:{srv.port}/images/install.iso"
        assert got == (f"installer {shown}: not an ISO 9660 image (no primary volume descriptor at sector 16)"
                       if code == 416 else f"installer {shown}: HTTP {code}")
        # one GET, its range the descriptors' and the catalog's, the credentials sent as basic auth
        assert srv.seen == [("GET", "bytes=32768-98303", "Basic " + base64.b64encode(b"ops:s3cret-pw").decode())]
    assert "s3cret-pw" not in (got or "")


def test_credentials_go_to_the_urls_host_only_not_where_it_redirects(isos: dict[str, Path]) -> None:
    with Status(404) as other:
        class Redirect(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                got.append(self.headers.get("Authorization"))
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{other.port}/install.iso")
                self.send_header("Content-Length", "0")
                self.end_headers()

        got: list[str | None] = []
        with Served(Redirect) as first:
            url = f"http://ops:s3cret-pw@127.0.0.1:{first.port}/install.iso"
            assert os_media.preflight(url, UEFI) == (
                f"installer http://ops:<redacted>@127.0.0.1:{first.port}/install.iso: HTTP 404")
    assert got == ["Basic " + base64.b64encode(b"ops:s3cret-pw").decode()]
    assert other.seen == [("GET", "bytes=32768-98303", None)]  # followed, without the credentials


def test_a_server_that_does_not_answer_in_time_or_at_all(isos: dict[str, Path]) -> None:
    with Status(200, delay_s=3) as srv:
        url = f"http://u:hunter22@127.0.0.1:{srv.port}/install.iso"
        started = time.monotonic()
        got = os_media.preflight(url, UEFI, timeout_s=0.5)
        assert time.monotonic() - started < 2.5
    assert got == f"installer http://u:<redacted>@127.0.0.1:{srv.port}/install.iso does not answer: timed out"
    got = os_media.preflight(url, UEFI, timeout_s=2)  # the server is gone
    assert got is not None and got.startswith(
        f"installer http://u:<redacted>@127.0.0.1:{srv.port}/install.iso does not answer: ")
    assert "\n" not in got and "hunter22" not in got


class Trickle(Served):
    """A server that ignores Range and sends the body 512 bytes every 0.1 s: every read answers in time."""

    def __init__(self, body: bytes) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    for at in range(0, len(body), 512):
                        self.wfile.write(body[at:at + 512])
                        self.wfile.flush()
                        time.sleep(0.1)
                except OSError:
                    pass

        super().__init__(Handler)
        self.url = f"http://u:hunter22@127.0.0.1:{self.port}/install.iso"


@pytest.mark.parametrize("skip", [False, True])
def test_a_server_that_trickles_its_answer_is_stopped_by_the_whole_preflights_deadline(
        isos: dict[str, Path], skip: bool) -> None:
    with Trickle(isos["efi"].read_bytes()) as srv:  # the catalog's bytes would take ~13 s at this pace
        started = time.monotonic()
        got = os_media.preflight(srv.url, UEFI, InstallerAccess(skip_boot_check=skip), timeout_s=5, deadline_s=1)
        took = time.monotonic() - started
    shown = srv.url.replace("hunter22", "<redacted>")
    assert got == f"installer {shown} does not answer: its answer did not arrive within the preflight's deadline"
    assert took < 3, took


def test_a_catalog_that_cannot_be_checked_is_refused_not_passed_as_bootable(
        isos: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os_media, "MAX_SKIP", 40_000)
    monkeypatch.setattr(os_media, "FIRST_SECTORS", 2)  # the catalog (sector 33, byte 67584) needs a second read
    with Plain(isos["efi"].read_bytes()) as srv:
        assert os_media.preflight(srv.url, UEFI) == (
            f"installer {srv.url}: could not be checked for El Torito: the server ignores Range and byte 67584 "
            "lies past the 40000 bytes read at most (serve it with byte ranges, or set "
            "provision_os_installer_skip_boot_check: true to install unchecked)")
        with pytest.raises(ChecksIncomplete, match="ignores Range"):
            os_media.check(srv.url, UEFI)


def test_the_modules_exceptions_are_provision_errors() -> None:
    for exc in (os_media.TooFar, os_media.BadRange, os_media.Unchecked):
        assert issubclass(exc, ChecksIncomplete) and issubclass(exc, ProvisionError)


def test_skipping_the_boot_check_still_proves_the_url_answers(
        isos: dict[str, Path], served: Callable[..., str], asked: list[str], caplog: pytest.LogCaptureFixture) -> None:
    skip = InstallerAccess(skip_boot_check=True)
    url = served(isos["data"].read_bytes())  # boots nothing: passed all the same, with a warning
    assert os_media.preflight(url, UEFI, skip) is None
    assert asked == ["bytes=32768-98303"]
    assert f"installer {url}: not checked for El Torito (provision_os_installer_skip_boot_check)" in caplog.text
    missing = url.replace("install.iso", "gone.iso")
    assert os_media.preflight(missing, UEFI, skip) == f"installer {missing}: HTTP 404"


@pytest.mark.parametrize(("value", "skip"), [("true", True), ("yes", True), ("false", False), (None, False)])
def test_the_skip_is_an_inventory_variable(inventory_copy: Path, value: str | None, skip: bool) -> None:
    from provision.spec import load_fleet

    if value is not None:
        hv = inventory_copy.parent / "host_vars" / "node01.yml"
        hv.write_text(hv.read_text() + f"provision_os_installer_skip_boot_check: {value}\n")
    host = load_fleet(inventory_copy).select(["node01"])[0]
    assert host.installer.skip_boot_check is skip


@pytest.mark.parametrize(("setting", "mode"), [("uefi", UEFI), ("UEFI", UEFI), ("legacy", BIOS), (None, None)])
def test_the_boot_mode_is_the_profiles(make_host: Callable[..., Any], setting: str | None,
                                       mode: Platform | None) -> None:
    from provision.spec.firmware import Bios

    host = make_host()
    bios = Bios(settings={"boot_mode": setting} if setting else {})
    host = host.model_copy(update={"spec": host.spec.model_copy(update={"bios": bios})})
    assert os_media.boot_mode(host) is mode
