"""The base of every spec model and the constrained scalars they share."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]


Version = Annotated[str, Field(min_length=1)]


class Frozen(BaseModel):
    """Base of every spec model: immutable, unknown keys refused."""

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)
