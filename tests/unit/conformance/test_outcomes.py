"""Outcomes, verdicts and exit codes as tables; threshold tiers."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from provision.cli import main
from provision.cli.verify import raise_for
from provision.conformance.model import CheckResult, Level, NodeReport, Outcome, RunReport, Threshold, worst
from provision.errors import CheckFailed, ChecksIncomplete

P, W, V, E, F = Outcome.PASS, Outcome.WARN, Outcome.WAIVED, Outcome.ERROR, Outcome.FAIL


def result(outcome: Outcome, i: int = 0) -> CheckResult:
    return CheckResult(node="n1", id=f"x.{i}", area="x", description="d", expected="e", found="f", outcome=outcome)


def report(*nodes: tuple[Outcome, ...], gather_error: str | None = None) -> RunReport:
    built = [NodeReport(node=f"n{k}", profile="p", results=tuple(result(o, i) for i, o in enumerate(outs)))
             for k, outs in enumerate(nodes)]
    if gather_error is not None:
        built.append(NodeReport(node="gone", profile="p", error=gather_error))
    return RunReport(level=Level.FULL, nodes=tuple(built))


@pytest.mark.parametrize(
    ("nodes", "verdict", "code"),
    [
        (((P, P, P),), P, 0),            # all pass -> 0
        (((P, W, P),), W, 0),            # one warning -> 0, the warning shows
        (((P, V),), V, 0),               # waived -> 0
        (((V, V),), V, 0),
        (((P, E, W),), E, 3),            # one error (could not check) -> 3
        (((P, E, F),), F, 1),            # error and fail -> 1
        (((P, P), (E,)), E, 3),          # over nodes too
        (((P, P), (F,), (E,)), F, 1),
        (((W,), (V,)), W, 0),
        ((), P, 0),
    ],
)
def test_exit_code_table(nodes: tuple[tuple[Outcome, ...], ...], verdict: Outcome, code: int) -> None:
    run = report(*nodes)
    assert (run.verdict, run.exit_code, run.ok) == (verdict, code, code == 0)


def test_an_unreachable_node_is_an_error_not_a_pass() -> None:
    run = report((P, P), gather_error="ssh root@10.0.0.1:22 failed: Connection refused")
    assert run.nodes[-1].verdict is E and run.exit_code == 3 and not run.ok
    assert report((F,), gather_error="down").exit_code == 1


@pytest.mark.parametrize(
    ("outcomes", "expected"),
    [((), P), ((P, V), V), ((V, W), W), ((W, E), E), ((E, F, P), F)],
)
def test_worst(outcomes: tuple[Outcome, ...], expected: Outcome) -> None:
    assert worst(outcomes) is expected


def test_counts_each_outcome() -> None:
    run = report((P, W, V, E, F, E))
    assert run.counts() == {P: 1, W: 1, V: 1, E: 2, F: 1}
    node = run.nodes[0]
    assert (len(node.errors), len(node.warnings), len(node.waived), len(node.failed)) == (2, 1, 1, 1)


@pytest.mark.parametrize(
    ("nodes", "exc", "needle"),
    [
        (((P, W, V),), None, ""),
        (((P, E),), ChecksIncomplete, "could not be fully checked: n0 (no check failed)"),
        (((P, E), (F,)), CheckFailed, "1 of 2 node(s) not conformant: n1"),
    ],
)
def test_verify_raises_by_exit_code(nodes: tuple[tuple[Outcome, ...], ...], exc: type[Exception] | None,
                                    needle: str) -> None:
    run = report(*nodes)
    if exc is None:
        raise_for(run)
        return
    with pytest.raises(exc, match=needle.replace("(", r"\(").replace(")", r"\)")) as got:
        raise_for(run)
    assert getattr(got.value, "exit_code") == run.exit_code  # noqa: B009


def test_checks_incomplete_exits_3_through_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    import provision.cli.verify as verify_cli

    def boom(*_a: object, **_k: object) -> None:
        raise ChecksIncomplete("1 of 1 node(s) could not be fully checked: node01 (no check failed)")

    monkeypatch.setattr(verify_cli, "load_hosts", boom)
    assert main(["verify", "node01", "-i", "inventory/hosts.yml"]) == 3


def test_verify_help_documents_the_exit_codes() -> None:
    from typer.testing import CliRunner

    from provision.cli import app

    text = " ".join(CliRunner().invoke(app, ["verify", "--help"], terminal_width=200).output.split())
    assert "0 every check passed, warned or was waived; 1 a check failed; 3 no check failed" in text


# ---- threshold tiers ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("threshold", "value", "expected"),
    [
        (Threshold(warn=35, fail=42), 35, P),         # the limit itself passes
        (Threshold(warn=35, fail=42), 35.5, W),       # an internal ambient above 35 C warns
        (Threshold(warn=35, fail=42), 42, W),
        (Threshold(warn=35, fail=42), 42.5, F),
        (Threshold(fail=80), 80, P),                  # a single tier: max_percentage_used 80 allows 80
        (Threshold(fail=80), 81, F),
        (Threshold(warn=35, fail=35), 36, F),         # equal tiers: the failure wins
        (Threshold(warn=20, fail=10, above=False), 50, P),  # smaller is worse: NVMe available spare
        (Threshold(warn=20, fail=10, above=False), 20, P),  # at its limits: spare 20% is not below 20%
        (Threshold(warn=20, fail=10, above=False), 19, W),
        (Threshold(warn=20, fail=10, above=False), 10, W),  # ... nor 10% below the drive's threshold of 10%
        (Threshold(warn=20, fail=10, above=False), 9, F),
    ],
)
def test_threshold_tiers(threshold: Threshold, value: float, expected: Outcome) -> None:
    assert threshold.judge(value) is expected


def test_threshold_tiers_must_be_ordered() -> None:
    with pytest.raises(ValidationError, match="warning tier 50 lies above the failure tier 40"):
        Threshold(warn=50, fail=40)
    with pytest.raises(ValidationError, match="lies below"):
        Threshold(warn=5, fail=10, above=False)


def test_threshold_describes_itself() -> None:
    assert Threshold(warn=35, fail=42, unit="C").describe() == "<= 42 C (warn above 35 C)"
    assert Threshold(fail=80, unit="%").describe() == "<= 80%"
    assert Threshold(warn=20, fail=10, above=False, unit="%").describe() == ">= 10% (warn below 20%)"
