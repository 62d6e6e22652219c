"""Discovery's inputs, pure: address ranges (CIDR, lists, ports, --max) and the files vendors and DHCP servers
give (CSV, ISC dhcpd leases, dnsmasq leases), on small samples shaped as the real files are."""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.discover.leases import (
    Lease,
    LeaseFormat,
    guess_format,
    parse_csv,
    parse_dhcpd,
    parse_dnsmasq,
    read_leases,
)
from provision.discover.targets import parse_range
from provision.errors import InputError


# -- ranges ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "kwargs", "urls"), [
    ("127.0.5.0/30", {}, ["https://127.0.5.1", "https://127.0.5.2"]),  # network and broadcast left out
    ("127.0.5.8/31:8443", {}, ["https://127.0.5.8:8443", "https://127.0.5.9:8443"]),
    ("127.0.5.3", {"port": 8443}, ["https://127.0.5.3:8443"]),
    ("127.0.5.3:9000, 127.0.5.4", {"port": 8443}, ["https://127.0.5.3:9000", "https://127.0.5.4:8443"]),
    ("127.0.5.3,127.0.5.3", {}, ["https://127.0.5.3"]),  # each once
    ("http://127.0.5.3:8000", {}, ["http://127.0.5.3:8000"]),
    ("[::1]:8443", {}, ["https://[::1]:8443"]),
    ("::1", {}, ["https://[::1]"]),
    ("127.0.5.0/22", {"max_addresses": 1024}, None),
])
def test_ranges(text: str, kwargs: dict[str, int], urls: list[str] | None) -> None:
    targets = parse_range(text, **kwargs)  # type: ignore[arg-type]
    if urls is None:
        assert len(targets) == 1022 and targets[0].url == "https://127.0.4.1"  # strict=False: the /22 it lies in
    else:
        assert [t.url for t in targets] == urls


@pytest.mark.parametrize(("text", "kwargs", "says"), [
    ("10.0.0.0/8", {}, "16777216 addresses, more than --max 4096"),
    ("10.0.0.0/20,10.1.0.1", {}, "4097 addresses, more than --max 4096"),
    ("127.0.5.0/28", {"max_addresses": 8}, "16 addresses, more than --max 8"),
    ("bmc1.example.net", {}, "not an IP address or network"),
    ("127.0.5.1:99999", {}, "port 99999"),
    ("ftp://127.0.5.1", {}, "scheme 'ftp'"),
    (" , ", {}, "empty"),
])
def test_bad_ranges_are_one_line(text: str, kwargs: dict[str, int], says: str) -> None:
    with pytest.raises(InputError) as err:
        parse_range(text, **kwargs)  # type: ignore[arg-type]
    assert says in str(err.value) and "\n" not in str(err.value)


# -- files ----------------------------------------------------------------------------------------------------
DHCPD = """\
# The format of this file is documented in the dhcpd.leases(5) manual page.
# This lease file was written by isc-dhcp-4.4.3-P1

# authoring-byte-order entry is generated, DO NOT DELETE
authoring-byte-order little-endian;

server-duid "\\000\\001\\000\\001,\\215\\252\\016RT\\000\\022\\0344";

lease 10.20.0.11 {
  starts 4 2026/12/03 10:01:02;
  ends 4 2026/12/03 22:01:02;
  cltt 4 2026/12/03 10:01:02;
  binding state active;
  next binding state free;
  rewind binding state free;
  hardware ethernet 3c:ec:ef:9a:10:01;
  uid "\\001<\\354\\357\\232\\020\\001";
  client-hostname "SMC-BMC";
}
lease 10.20.0.12 {
  starts 4 2026/12/03 10:01:05;
  ends 4 2026/12/03 22:01:05;
  binding state active;
  hardware ethernet 3C:EC:EF:9A:10:02;
}
lease 10.20.0.13 {
  starts 3 2026/12/02 09:00:00;
  ends 3 2026/12/02 21:00:00;
  binding state free;
  hardware ethernet 3c:ec:ef:9a:10:03;
}
lease 10.20.0.11 {
  starts 4 2026/12/03 11:01:02;
  ends 4 2026/12/03 23:01:02;
  binding state active;
  hardware ethernet 3c:ec:ef:9a:10:01;
  client-hostname "XCC-7Z23-J30012AB";
}
lease 10.20.0.12 {
  starts 4 2026/12/03 12:00:00;
  ends 4 2026/12/03 12:00:00;
  binding state expired;
  hardware ethernet 3c:ec:ef:9a:10:02;
}
"""

DNSMASQ = """\
1733389262 3c:ec:ef:9a:10:01 10.20.0.11 SMC-BMC 01:3c:ec:ef:9a:10:01
1733389270 b8:83:03:5a:aa:02 10.20.0.12 * *
duid 00:01:00:01:2c:8d:aa:0e:52:54:00:12:34:56
1733389300 4100443 fd00::12 * 00:01:00:01:2c:8d:aa:0e:52:54:00:aa:aa:02
1733389999 b8:83:03:5a:aa:02 10.20.0.12 ilo-5a *
"""

CSV = """\
Rack,Slot,Serial Number,BMC MAC,BMC IP
r01,1,S411337X3A12345,3c:ec:ef:9a:10:01,10.20.0.11
r01,2,S411337X3A12346,3C-EC-EF-9A-10-02,10.20.0.12

r01,3,,,10.20.0.13
"""


def test_dhcpd_last_block_wins_and_gone_leases_are_left_out() -> None:
    assert parse_dhcpd(DHCPD) == [
        Lease(ip="10.20.0.11", mac="3c:ec:ef:9a:10:01", hostname="XCC-7Z23-J30012AB"),  # the later block
    ]  # .12's last block is expired, .13 free


def test_dnsmasq_lines_skip_duid_and_dhcpv6() -> None:
    assert parse_dnsmasq(DNSMASQ) == [
        Lease(ip="10.20.0.11", mac="3c:ec:ef:9a:10:01", hostname="SMC-BMC"),
        Lease(ip="10.20.0.12", mac="b8:83:03:5a:aa:02", hostname="ilo-5a"),
    ]


def test_csv_columns_by_header_any_order() -> None:
    assert parse_csv(CSV) == [
        Lease(ip="10.20.0.11", mac="3c:ec:ef:9a:10:01", serial="S411337X3A12345"),
        Lease(ip="10.20.0.12", mac="3c:ec:ef:9a:10:02", serial="S411337X3A12346"),
        Lease(ip="10.20.0.13"),
    ]


@pytest.mark.parametrize(("text", "fmt"), [(DHCPD, LeaseFormat.DHCPD), (DNSMASQ, LeaseFormat.DNSMASQ),
                                           (CSV, LeaseFormat.CSV)])
def test_format_guessed_from_content(text: str, fmt: LeaseFormat) -> None:
    assert guess_format(text) is fmt


@pytest.mark.parametrize(("text", "fmt", "says"), [
    ("rack,serial\nr01,X1\n", LeaseFormat.CSV, "line 1: no ip column"),
    ("ip,mac\n10.20.0.11,zz:zz\n", LeaseFormat.CSV, "line 2: 'zz:zz' is not a MAC address"),
    ("ip\nbmc01\n", LeaseFormat.CSV, "line 2: 'bmc01' is not an IP address"),
    ("1733389262 3c:ec:ef:9a:10:01\n", LeaseFormat.DNSMASQ, "line 1: not EXPIRY MAC IP"),
    ("lease 10.20.0.999 {\n  binding state active;\n}\n", LeaseFormat.DHCPD, "line 1: '10.20.0.999'"),
    ("# nothing yet\n", LeaseFormat.DNSMASQ, "no BMC address in the file"),
])
def test_bad_files_are_one_line_naming_file_and_line(tmp_path: Path, text: str, fmt: LeaseFormat,
                                                      says: str) -> None:
    path = tmp_path / "leases"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_leases(path, fmt)
    assert str(path) in str(err.value) and says in str(err.value) and "\n" not in str(err.value)


def test_unreadable_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read the lease file"):
        read_leases(tmp_path / "absent.leases")
    binary = tmp_path / "binary.leases"
    binary.write_bytes(b"\xff\xfe\x00lease")
    with pytest.raises(InputError, match=r"binary\.leases: cannot read the lease file"):
        read_leases(binary)


# -- SSDP answers -------------------------------------------------------------------------------------------
def _ssdp(al: str, st: str = "urn:dmtf-org:service:redfish-rest:1", status: str = "HTTP/1.1 200 OK") -> bytes:
    return (f"{status}\r\nCACHE-CONTROL: max-age=1800\r\nST: {st}\r\n"
            f"USN: uuid:1e90aa6e-6d05-9589-2253-ce7672d02d26::{st}\r\nAL: {al}\r\nEXT:\r\n\r\n").encode()


@pytest.mark.parametrize(("data", "source", "url"), [
    (_ssdp("https://10.20.0.11/redfish/v1/"), "10.20.0.11", "https://10.20.0.11"),
    (_ssdp("<https://10.20.0.11:8443/redfish/v1/>"), "10.20.0.11", "https://10.20.0.11:8443"),
    (_ssdp("https://10.20.0.99/redfish/v1/"), "10.20.0.11", None),  # AL names a third address
    (_ssdp("https://10.20.0.11/redfish/v1/", st="urn:schemas-upnp-org:device:MediaServer:1"), "10.20.0.11", None),
    (_ssdp("https://10.20.0.11/redfish/v1/", status="HTTP/1.1 404 Not Found"), "10.20.0.11", None),
    (_ssdp("https://10.20.0.11:99999/redfish/v1/"), "10.20.0.11", None),
    (b"\xff\xfe garbage", "10.20.0.11", None),
])
def test_ssdp_answers(data: bytes, source: str, url: str | None) -> None:
    from provision.discover.ssdp import parse_answer

    answer = parse_answer(data, source)
    assert (answer.target.url if answer else None) == url
    if answer is not None:
        assert answer.uuid == "1e90aa6e-6d05-9589-2253-ce7672d02d26"


def test_the_msearch_is_dsp0266s() -> None:
    from provision.discover.ssdp import msearch

    assert msearch(2) == (b'M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: "ssdp:discover"\r\nMX: 2\r\n'
                          b"ST: urn:dmtf-org:service:redfish-rest:1\r\n\r\n")


@pytest.mark.parametrize(("args", "says"), [
    (["--ssdp", "no-such-if0"], "--ssdp no-such-if0: no such network interface; nothing sent"),
    (["--ssdp", "lo", "-r", "127.0.5.1"], "give exactly one of --range RANGE, --from-file FILE or --ssdp"),
    ([], "give exactly one of"),
])
def test_ssdp_and_source_usage_is_one_line(args: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    from provision.cli import main

    assert main(["discover", *args, "-i", "/nonexistent/hosts.yml"]) == 2
    err = capsys.readouterr().err
    assert says in " ".join(err.split()) and err.count("\n") == 1
