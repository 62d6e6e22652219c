"""One formatter for pydantic errors (provision.spec.validation), used by the inventory and campaign loaders."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from provision.spec.validation import describe


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    size: int


class Doc(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[Item]


def _error(raw: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Doc.model_validate(raw)
    return caught.value


@pytest.mark.parametrize(("raw", "prefix", "shown"), [
    ({"items": [{"name": "a", "size": "big"}]}, "",
     "items.0.size: Input should be a valid integer, unable to parse string as an integer (got 'big')"),
    ({"items": [{"name": "a", "size": 1, "colour": "red"}]}, "provision_x", "provision_x.items.0.colour: unknown key"),
    ({"items": [{"name": "a"}]}, "", "items.0.size: Field required"),
    ({"items": [{}]}, "", "items.0.name: Field required (and 1 more problem(s))"),
    ({"items": [{"name": "a", "size": 1, "new\nline": 1}]}, "", "items.0.new\\nline: unknown key"),
    ([], "", "(top level): Input should be a valid dictionary or instance of Doc"),
])
def test_the_first_error_in_one_line(raw: object, prefix: str, shown: str) -> None:
    assert describe(_error(raw), prefix) == shown


def test_a_list_item_named_as_the_caller_names_it() -> None:
    exc = _error({"items": [{"name": "gpu", "size": "x"}]})
    names = {0: "gpu"}
    shown = describe(exc, name_loc=lambda loc: [names.get(p, str(p)) if isinstance(p, int) else p for p in loc])
    assert shown.startswith("items.gpu.size: ")
