"""The simulator's multipart/form-data parser, against bodies as real clients build them."""

from __future__ import annotations

import pytest
from requests_toolbelt import MultipartEncoder

from provision.lab.bmcsim import multipart


def _encoded(fields: dict) -> tuple[str, bytes]:
    enc = MultipartEncoder(fields=fields)
    return enc.content_type, enc.to_string()


def test_parts_of_an_update_as_requests_toolbelt_sends_it() -> None:
    image = b"\x00\x01--not-a-boundary\r\n\r\nbinary\xff"
    ctype, raw = _encoded({
        "UpdateParameters": ("parameters.json", b'{"Targets": []}', "application/json"),
        "UpdateFile": ("bmc.bin", image, "application/octet-stream"),
    })
    parts = {p.name: p for p in multipart.parse(ctype, raw)}
    assert parts["UpdateParameters"].payload == b'{"Targets": []}'
    assert parts["UpdateFile"].payload == image
    assert parts["UpdateFile"].filename == "bmc.bin"


def test_quoted_boundary_preamble_and_a_part_without_filename() -> None:
    raw = (b"preamble\r\n--b 1\r\nContent-Disposition: form-data; name=note\r\n\r\nhello\r\n"
           b"--b 1--\r\nepilogue")
    parts = multipart.parse('multipart/form-data; boundary="b 1"', raw)
    assert [(p.name, p.filename, p.payload) for p in parts] == [("note", None, b"hello")]


@pytest.mark.parametrize(("ctype", "raw"), [
    ("multipart/form-data", b"--x\r\n\r\nbody\r\n--x--"),  # no boundary parameter
    ("multipart/form-data; boundary=x", b"no delimiter at all"),
    ("multipart/form-data; boundary=x", b"--x\r\nContent-Disposition: form-data; name=a\r\nbody--x--"),
])
def test_malformed_bodies_are_refused(ctype: str, raw: bytes) -> None:
    with pytest.raises(multipart.MultipartError):
        multipart.parse(ctype, raw)
