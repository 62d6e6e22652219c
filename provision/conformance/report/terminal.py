"""Rich terminal summary: one row per node, then the failed (and not run) checks."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from provision.conformance.model import Outcome, RunReport

_STYLE = {Outcome.PASS: "green", Outcome.FAIL: "red", Outcome.SKIP: "yellow"}


def render_terminal(run: RunReport, console: Console, show_all: bool = False) -> None:
    """Print the fleet summary, then every failed / not-run check (every check with show_all)."""
    summary = Table(title=f"provision verify --level {run.level.value}  ({run.seconds:.2f} s)")
    for col in ("node", "profile", "checks", "pass", "fail", "not run", "gather s", "result"):
        summary.add_column(col, justify="right" if col in ("checks", "pass", "fail", "not run", "gather s") else "left")
    for node in run.nodes:
        n = len(node.results)
        fails, skips = len(node.failed), len(node.skipped)
        verdict = "[red]UNREACHABLE[/red]" if node.error else ("[green]PASS[/green]" if node.ok else "[red]FAIL[/red]")
        summary.add_row(node.node + (" (lab)" if node.lab else ""), node.profile, str(n), str(n - fails - skips),
                        str(fails), str(skips), f"{node.gather_seconds:.2f}", verdict)
    console.print(summary)
    detail = Table(title="checks" if show_all else "failed checks", show_lines=False)
    for col in ("node", "check", "expected", "found", "result"):
        detail.add_column(col, overflow="fold")
    rows = 0
    not_run: dict[tuple[str, str], list[str]] = {}
    for node in run.nodes:
        if node.error:
            detail.add_row(node.node, "gather facts", "reachable", node.error, "[red]error[/red]")
            rows += 1
        for r in node.results:
            if r.outcome is Outcome.SKIP and not show_all:
                not_run.setdefault((node.node, r.detail), []).append(r.id)
            elif show_all or r.outcome is Outcome.FAIL:
                style = _STYLE[r.outcome]
                found = r.found + (f" [dim]({r.detail})[/dim]" if r.detail and r.outcome is not Outcome.PASS else "")
                detail.add_row(node.node, r.id, r.expected, found, f"[{style}]{r.outcome.value}[/{style}]")
                rows += 1
    if rows:
        console.print(detail)
    for (name, why), ids in not_run.items():
        shown = ", ".join(ids[:4]) + (f" and {len(ids) - 4} more" if len(ids) > 4 else "")
        console.print(f"[yellow]{name}: {len(ids)} check(s) not run[/yellow] ({shown}): {why}", highlight=False)
    if any(n.lab for n in run.nodes):
        console.print("[yellow]lab twins: their hardware tools are LAB STAND-INs (simulated hardware)[/yellow]")
