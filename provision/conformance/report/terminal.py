"""Rich terminal summary: one row per node counting each outcome, then every check that failed,
could not be made (error) or warned; waived checks are grouped by their reason."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from provision.conformance.model import NodeReport, Outcome, RunReport
from provision.conformance.report.fleet import by_check

STYLE = {Outcome.PASS: "green", Outcome.WARN: "yellow", Outcome.WAIVED: "cyan", Outcome.ERROR: "magenta",
         Outcome.FAIL: "red"}
COLUMNS = (Outcome.PASS, Outcome.WARN, Outcome.WAIVED, Outcome.ERROR, Outcome.FAIL)
SHOWN = frozenset({Outcome.FAIL, Outcome.ERROR, Outcome.WARN})


def verdict_text(node: NodeReport) -> str:
    """UNREACHABLE, FAIL, ERROR (could not check), WARN or PASS, styled."""
    if node.error:
        return "[magenta]UNREACHABLE[/magenta]"
    verdict = node.verdict
    if verdict is Outcome.WAIVED:
        verdict = Outcome.PASS
    return f"[{STYLE[verdict]}]{verdict.value.upper()}[/{STYLE[verdict]}]"


def render_terminal(run: RunReport, console: Console, show_all: bool = False) -> None:
    """Print the fleet summary, then every failed / error / warned check (every check with show_all)."""
    summary = Table(title=f"provision verify --level {run.level.value}  ({run.seconds:.2f} s)")
    numeric = ("checks", *(o.value for o in COLUMNS), "gather s")
    for col in ("node", "profile", *numeric, "result"):
        summary.add_column(col, justify="right" if col in numeric else "left")
    for node in run.nodes:
        counts = node.counts()
        summary.add_row(escape(node.node) + (" (declared)" if node.notice else ""), escape(node.profile),
                        str(len(node.results)), *(str(counts[o]) for o in COLUMNS), f"{node.gather_seconds:.2f}",
                        verdict_text(node))
    console.print(summary)
    detail = Table(title="checks" if show_all else "checks that failed, could not be made, or warned")
    for col in ("node", "check", "expected", "found", "result"):
        detail.add_column(col, overflow="fold")
    rows = 0
    waived: dict[tuple[str, str], list[str]] = {}
    for node in run.nodes:
        if node.error:
            detail.add_row(escape(node.node), "gather facts", "reachable", escape(node.error),
                           "[magenta]error[/magenta]")
            rows += 1
        for r in node.results:
            if r.outcome is Outcome.WAIVED and not show_all:
                waived.setdefault((node.node, r.detail), []).append(r.id)
            elif show_all or r.outcome in SHOWN:
                style = STYLE[r.outcome]
                extra = r.detail and r.outcome is not Outcome.PASS and r.detail not in r.found
                found = escape(r.found) + (f" [dim]({escape(r.detail)})[/dim]" if extra else "")  # data, never markup
                detail.add_row(escape(node.node), escape(r.id), escape(r.expected), found,
                               f"[{style}]{r.outcome.value}[/{style}]")
                rows += 1
    if rows:
        console.print(detail)
    for (name, why), ids in waived.items():
        shown = ", ".join(ids[:4]) + (f" and {len(ids) - 4} more" if len(ids) > 4 else "")
        console.print(f"[cyan]{escape(name)}: {len(ids)} check(s) waived[/cyan] ({escape(shown)}): {escape(why)}",
                      highlight=False)
    if len(run.nodes) > 1:
        _fleet(run, console)
    totals = run.counts()
    console.print(", ".join(f"{totals[o]} {o.value}" for o in COLUMNS), highlight=False)
    _notices(run, console)


def _notices(run: RunReport, console: Console) -> None:
    """Each notice the inventory declares (provision_lab_notice), once, with the nodes it was declared for."""
    declared: dict[str, list[str]] = {}
    for node in run.nodes:
        if node.notice:
            declared.setdefault(node.notice, []).append(node.node)
    for notice, names in declared.items():
        console.print(f"[yellow]declared for {escape(', '.join(names))}: {escape(notice)}[/yellow]", highlight=False)


def _fleet(run: RunReport, console: Console, shown: int = 4) -> None:
    """Checks that failed or could not be made, with how many nodes and which (the fleet summary by check)."""
    rows = [r for r in by_check(run) if r.count(Outcome.FAIL) or r.count(Outcome.ERROR)]
    if not rows:
        return
    table = Table(title="fleet summary by check")  # data cells as Text: a check id or node name is never markup
    for col in ("check", "fail", "error", "nodes"):
        table.add_column(col, justify="right" if col in ("fail", "error") else "left", overflow="fold")
    for r in rows:
        names = (*r.nodes[Outcome.FAIL], *r.nodes[Outcome.ERROR])
        listed = ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")
        table.add_row(*(Text(v) for v in (r.id, str(r.count(Outcome.FAIL)), str(r.count(Outcome.ERROR)), listed)))
    console.print(table)
