"""A firmware baseline line is validated by one source (spec/images.py) whether the spec's `firmware:` list or a
campaign file holds it: the same refusals, each file's own reading of a version, and the spec's in-band images
(updated_by: os) exempt from naming FirmwareInventory entries."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from provision.campaign.catalog import Component
from provision.spec.firmware import FirmwareComponent

SHA = "0" * 64
NAMED = {"platforms": [{"manufacturer": "Supermicro", "model": "SYS-821GE-TNHR"}]}
LINE: dict[str, Any] = {"component": "bmc", "version": "1.2.3", "image": "a.bin", "sha256": SHA, "applies_to": "any"}


def _error(model: type[BaseModel], **over: Any) -> str:
    with pytest.raises(ValidationError) as err:
        model.model_validate({**LINE, **over})
    return str(err.value)


@pytest.mark.parametrize("model", [FirmwareComponent, Component])
@pytest.mark.parametrize(("over", "said"), [
    ({"sha256": "abc"}, "sha256"),
    ({"applies_to": None}, "say which platforms the image is for"),
    ({"applies_to": NAMED}, "name the FirmwareInventory entries"),
    ({"version": "1.2.3", "version_scheme": "date"}, "is not a date version"),
])
def test_both_files_refuse_the_same_lines(model: type[BaseModel], over: dict[str, Any], said: str) -> None:
    assert said in _error(model, **over)


def test_each_file_reads_versions_its_own_way_and_only_the_spec_has_in_band_images() -> None:
    assert Component.model_validate({**LINE, "version": "v1_2"}).version == "v1_2"
    assert "is not a version (expected digits" in _error(FirmwareComponent, version="v1_2")
    spec_os = FirmwareComponent.model_validate({**LINE, "applies_to": NAMED, "updated_by": "os"})
    assert spec_os.target.entries == () and not spec_os.flashed_by_bmc
    for model in (FirmwareComponent, Component):
        assert model.model_validate(LINE).target.any_platform
