"""One rule for versions in a spec (provision/spec/versions.py): the software pins and the container sources
accept and refuse the same Debian package versions; only the container sources may leave theirs unpinned."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from provision.spec.containers import DockerSource
from provision.spec.software import Pin
from provision.spec.versions import check_apt_version, check_version

APT_OK = ["5:27.4.1-1~debian.12~bookworm", "550.127.08-1", "2.27.3-1+cuda12.4", "1.0"]
APT_BAD = ["latest", "v1.2", "1.2 3", ":1.0", "1:", "-1", "1.0;rm"]


@pytest.mark.parametrize("value", APT_OK)
def test_a_debian_version_is_accepted_by_every_field_that_pins_one(value: str) -> None:
    assert check_apt_version(value) == value
    assert Pin(version="550.127.08", apt_version=value).apt_version == value
    assert DockerSource(apt_version=value).apt_version == value


@pytest.mark.parametrize("value", APT_BAD)
def test_a_non_debian_version_is_refused_by_every_field_alike(value: str) -> None:
    with pytest.raises(ValueError, match="not a Debian package version"):
        check_apt_version(value)
    for build in (lambda: Pin(version="550.127.08", apt_version=value), lambda: DockerSource(apt_version=value)):
        with pytest.raises(ValidationError, match="not a Debian package version"):
            build()


def test_only_a_container_source_may_be_unpinned() -> None:
    assert check_apt_version("", unpinned_ok=True) == ""
    assert DockerSource().apt_version == ""
    with pytest.raises(ValueError, match="not a Debian package version"):
        check_apt_version("")
    with pytest.raises(ValidationError, match="not a Debian package version"):
        Pin(version="550.127.08", apt_version="")


@pytest.mark.parametrize(("value", "ok"), [("550.127.08", True), ("2.27.3-1", True), ("12", True),
                                           ("v550", False), ("550..1", False), ("", False), ("550.", False)])  # fmt: skip
def test_an_upstream_version(value: str, ok: bool) -> None:
    if ok:
        assert check_version(value) == value
    else:
        with pytest.raises(ValueError, match="is not a version"):
            check_version(value)
