"""The checks one line of a firmware baseline makes, wherever it is written: the spec's `firmware:` list
(spec.firmware.FirmwareComponent) and a campaign file's `components:` (campaign.catalog.Component) both validate
through `ImageChecks`, so that the two cannot drift apart."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

from pydantic import BaseModel, field_validator, model_validator

from provision.spec.digests import check_sha256
from provision.spec.platforms import AppliesTo, entries_named, missing_applies_to
from provision.spec.versions import VersionScheme, check_scheme, check_version


class ImageChecks(BaseModel):
    """Validators only, no fields: each model declares and documents its own `version`, `sha256`,
    `version_scheme` and `applies_to`. A model says how its versions read (`check_image_version`) and whether an
    image goes through the BMC (`flashed_by_bmc`: then named platforms must name the entries it updates)."""

    if TYPE_CHECKING:  # the fields every model using these checks declares
        version: str
        version_scheme: VersionScheme | None
        applies_to: AppliesTo | None

    entries_first: ClassVar[bool] = False
    """Which of two errors a line with both reports: a missing entries list (True: a campaign file's order, kept
    as it was) or a version out of its scheme (the spec's)."""

    @staticmethod
    def check_image_version(value: str) -> str:
        """An upstream version (spec.versions); a model whose versions read otherwise overrides this."""
        return check_version(value)

    @property
    def flashed_by_bmc(self) -> bool:
        return True

    @field_validator("version", check_fields=False)
    @classmethod
    def _version(cls, value: str) -> str:
        return cls.check_image_version(value)

    @field_validator("sha256", check_fields=False)
    @classmethod
    def _sha(cls, value: str) -> str:
        return check_sha256(value)

    @field_validator("applies_to", check_fields=False)
    @classmethod
    def _applies_to(cls, value: AppliesTo | None) -> AppliesTo:
        return missing_applies_to(value)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        """The version reads in its scheme; an image through the BMC for named platforms names its entries."""
        if self.entries_first:
            entries_named(self, self.flashed_by_bmc)
        check_scheme(self.version, self.version_scheme)
        return entries_named(self, self.flashed_by_bmc)

    @property
    def target(self) -> AppliesTo:
        """`applies_to`, never None once validated."""
        return missing_applies_to(self.applies_to)
