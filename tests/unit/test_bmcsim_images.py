"""The lab firmware image format."""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.lab.bmcsim.images import make_image, parse_image


def test_round_trip(tmp_path: Path) -> None:
    path = make_image(tmp_path / "bios.bin", "BIOS", "2.1", payload_size=10)
    header = parse_image(path.read_bytes())
    assert (header.component, header.version) == ("BIOS", "2.1")


@pytest.mark.parametrize("data", [b"", b"MZ\x90\x00", b"PROVISION-LAB-FIRMWARE v1\nnot a header\n",
                                  b"PROVISION-LAB-FIRMWARE v1\ncomponent: bios\n"])
def test_bad_images_are_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        parse_image(data)


def test_the_example_baseline_images_parse() -> None:
    firmware = Path(__file__).resolve().parents[2] / "firmware"
    images = sorted(firmware.glob("*.bin"))
    assert images
    headers = {parse_image(p.read_bytes()).component for p in images}
    assert {"bios", "bmc"} <= headers
