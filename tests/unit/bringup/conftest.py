"""Shared pieces of the stage tests: a host whose spec the test sets, and the fake BMC's node."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import pytest

from provision.spec import HostEntry, load_fleet
from provision.spec.firmware import Bios as BiosSpec
from provision.spec.firmware import FirmwareComponent
from provision.spec.platforms import AppliesTo
from tests.conftest import EXAMPLE_INVENTORY

IMAGE = b"firmware image bytes"
ANY = AppliesTo(any_platform=True)
SHA = hashlib.sha256(IMAGE).hexdigest()
_HOSTS: dict[str, HostEntry] = {}


def component(tmp: Path, name: str, version: str, immediate: bool = False) -> FirmwareComponent:
    image = tmp / f"{name}-{version}.bin"
    image.write_bytes(IMAGE)
    return FirmwareComponent(component=name, version=version, image=str(image), sha256=SHA, applies_to=ANY,
                             apply_time="Immediate" if immediate else "OnReset", needs_host_reset=not immediate)


@pytest.fixture
def make_host(tmp_path: Path) -> Callable[..., HostEntry]:
    """node01 of the example inventory with the firmware baseline and BIOS values a test names."""
    if not _HOSTS:
        _HOSTS["node01"] = load_fleet(EXAMPLE_INVENTORY / "hosts.yml").select(["node01"])[0]
    base = _HOSTS["node01"]

    def make(bmc: str = "1.50", bios: str = "1.50", attributes: dict[str, str] | None = None) -> HostEntry:
        firmware = (component(tmp_path, "bmc", bmc, immediate=True), component(tmp_path, "bios", bios))
        spec = base.spec.model_copy(update={
            "firmware": firmware,
            "bios": BiosSpec(settings={}, vendor_attributes={"generic": dict(attributes or {})}),
        })
        return base.model_copy(update={"spec": spec})

    return make
