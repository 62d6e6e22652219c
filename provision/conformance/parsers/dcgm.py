"""`dcgmi diag -r N`: the result table, test name -> Pass/Fail/Skip/Warn (per GPU).

Written from DCGM's documented output (no capture was available): a `+---+` bordered table
whose `|-----  Category  ---|` separators group the tests; the Metadata group holds
key/value facts; `Warning`/`Info` rows and blank-name rows continue the previous test.
The table must end with its bottom border, which catches truncated output.
"""

from __future__ import annotations

import re

from provision.conformance.parsers._base import Model, fail, lines_of, tool_parser

TOOL = "dcgmi diag"

_CATEGORY = re.compile(r"^[|+]-+\s+(?P<name>[A-Za-z][\w ]*?)\s+-+\+-+[|+]$")
_BORDER = re.compile(r"^\+[-=]+\+[-=]+\+$")
_ROW = re.compile(r"^\|(?P<name>[^|]*)\|(?P<value>.*)\|$")
_RESULT = re.compile(r"^(?P<result>Pass|Fail|Skip|Warn)(?:\s*-\s*(?P<scope>All|GPUs?:\s*[\d,\s]+))?$")
_DETAIL_NAMES = frozenset({"Warning", "Info", "Error"})


class DcgmResult(Model):
    """A result for some GPUs (`gpus` None means all)."""

    result: str
    gpus: tuple[int, ...] | None


class DcgmTest(Model):
    """One test row (plus its continuation rows)."""

    name: str
    category: str
    results: tuple[DcgmResult, ...]
    details: tuple[str, ...]

    @property
    def outcome(self) -> str:
        """The worst result across GPUs: Fail > Warn > Pass > Skip."""
        seen = {r.result for r in self.results}
        return next(r for r in ("Fail", "Warn", "Pass", "Skip") if r in seen)


class DcgmDiag(Model):
    """The whole table."""

    metadata: dict[str, str]
    tests: tuple[DcgmTest, ...]

    @property
    def passed(self) -> bool:
        """No test failed."""
        return all(t.outcome != "Fail" for t in self.tests)

    def test(self, name: str) -> DcgmTest:
        """The test called `name`; ParseError if the run did not include it."""
        found = next((t for t in self.tests if t.name == name), None)
        if found is None:
            fail(TOOL, f"no test named {name!r} in the table")
        return found


def _result(value: str) -> DcgmResult | None:
    match = _RESULT.match(value)
    if not match:
        return None
    scope = match["scope"]
    if scope is None or scope == "All":
        return DcgmResult(result=match["result"], gpus=None)
    numbers = scope.split(":", 1)[1]
    return DcgmResult(result=match["result"], gpus=tuple(int(n) for n in numbers.replace(",", " ").split()))


def _table(text: str) -> list[str]:
    lines = [line.strip() for line in lines_of(text) if line.strip().startswith(("|", "+"))]
    if not lines:
        fail(TOOL, "no result table" + (f": {text.strip().splitlines()[0][:120]}" if text.strip() else ""))
    if not _BORDER.match(lines[-1]):
        fail(TOOL, "result table has no bottom border (truncated output?)")
    head = next((i for i, line in enumerate(lines) if line.startswith("+=")), None)
    if head is None:
        fail(TOOL, "result table has no header separator")
    return lines[head + 1 :]


@tool_parser(TOOL)
def parse_dcgmi_diag(text: str) -> DcgmDiag:
    """Parse the table printed by `dcgmi diag -r N`."""
    metadata: dict[str, str] = {}
    tests: list[DcgmTest] = []
    category = ""
    for line in _table(text):
        if cat := _CATEGORY.match(line):
            category = cat["name"].strip()
            continue
        if _BORDER.match(line):
            continue
        row = _ROW.match(line)
        if row is None:
            fail(TOOL, f"unexpected table line {line[:120]!r}")
        name, value = row["name"].strip(), row["value"].strip()
        if category == "Metadata":
            metadata[name] = value
        elif name and name not in _DETAIL_NAMES:
            result = _result(value)
            if result is None:
                fail(TOOL, f"test {name!r}: result {value!r} is not Pass/Fail/Skip/Warn")
            tests.append(DcgmTest(name=name, category=category, results=(result,), details=()))
        elif not tests:
            fail(TOOL, f"continuation row {line[:80]!r} before any test")
        else:
            tests[-1] = _continue(tests[-1], name, value)
    if not tests:
        fail(TOOL, "result table lists no test")
    return DcgmDiag(metadata=metadata, tests=tuple(tests))


def _continue(test: DcgmTest, name: str, value: str) -> DcgmTest:
    result = _result(value) if not name else None
    if result is not None:
        return test.model_copy(update={"results": (*test.results, result)})
    if name:  # Warning / Info row starts a new detail
        return test.model_copy(update={"details": (*test.details, f"{name}: {value}")})
    if not test.details:
        return test.model_copy(update={"details": (value,)})
    return test.model_copy(update={"details": (*test.details[:-1], f"{test.details[-1]} {value}")})
