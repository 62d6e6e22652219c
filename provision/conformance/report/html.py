"""One self-contained HTML page per run: fleet overview, then per node every check.

No external assets (inline CSS, no scripts): the file opens offline and can be archived as is.
Every value is HTML-escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from provision.conformance.model import CheckResult, NodeReport, Outcome, RunReport
from provision.private import write_private

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1b1f24;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px} .meta{color:#57606a;margin-bottom:16px}
table{border-collapse:collapse;width:100%;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa} td.num{text-align:right}
.pass{background:#dafbe1;color:#116329;font-weight:600} .fail{background:#ffebe9;color:#a40e26;font-weight:600}
.warn{background:#fff8c5;color:#7d4e00;font-weight:600} .waived{background:#ddf4ff;color:#0a3069;font-weight:600}
.error{background:#fbefff;color:#8250df;font-weight:600}
.badge{display:inline-block;padding:2px 10px;border-radius:12px}
.banner{padding:12px 16px;border-radius:8px;font-size:18px;font-weight:700;margin:12px 0}
.lab{background:#ddf4ff;color:#0a3069;padding:8px 12px;border-radius:6px;margin:8px 0}
.detail{color:#57606a;font-size:12px}
"""


def _cls(outcome: Outcome) -> str:
    return outcome.value


COLUMNS = (Outcome.PASS, Outcome.WARN, Outcome.WAIVED, Outcome.ERROR, Outcome.FAIL)
# Failures first, then checks that could not be made, warnings, waivers, passes.
ORDER = {Outcome.FAIL: 0, Outcome.ERROR: 1, Outcome.WARN: 2, Outcome.WAIVED: 3, Outcome.PASS: 4}


def _verdict(n: NodeReport) -> tuple[str, str]:
    """(text, css class) of a node's verdict."""
    if n.error:
        return "UNREACHABLE", "error"
    verdict = Outcome.PASS if n.verdict is Outcome.WAIVED else n.verdict
    return verdict.value.upper(), _cls(verdict)


def _overview(run: RunReport) -> str:
    rows = []
    for n in run.nodes:
        counts = n.counts()
        text, css = _verdict(n)
        cells = "".join(f"<td class=num>{counts[o]}</td>" for o in COLUMNS)
        rows.append(
            f"<tr><td><a href='#node-{escape(n.node)}'>{escape(n.node)}</a>{' (lab)' if n.lab else ''}</td>"
            f"<td>{escape(n.profile)}</td><td class=num>{len(n.results)}</td>{cells}"
            f"<td class=num>{n.gather_seconds:.2f}</td><td class='{css}'>{text}</td></tr>"
        )
    names = ("node", "profile", "checks", *(o.value for o in COLUMNS), "gather s", "result")
    head = "".join(f"<th>{h}</th>" for h in names)
    return f"<table id=overview><tr>{head}</tr>{''.join(rows)}</table>"


def _row(r: CheckResult) -> str:
    detail = f"<div class=detail>{escape(r.detail)}</div>" if r.detail else ""
    return (
        f"<tr class='check {_cls(r.outcome)}-row'><td>{escape(r.area)}</td><td><code>{escape(r.id)}</code></td>"
        f"<td>{escape(r.description)}</td><td>{escape(r.expected)}</td><td>{escape(r.found)}{detail}</td>"
        f"<td class='{_cls(r.outcome)}'>{r.outcome.value.upper()}</td></tr>"
    )


def _node(n: NodeReport) -> str:
    parts = [f"<h2 id='node-{escape(n.node)}'>{escape(n.node)} <span class=detail>{escape(n.profile)}</span></h2>"]
    if n.lab:
        tools = ", ".join(n.standins) or "its hardware tools"
        parts.append(f"<div class=lab>Lab twin: {escape(tools)} are LAB STAND-INs (simulated hardware).</div>")
    if n.error:
        parts.append(f"<div class='banner error'>Facts could not be gathered: {escape(n.error)}</div>")
        return "".join(parts)
    ordered = sorted(n.results, key=lambda r: ORDER[r.outcome])
    head = "".join(f"<th>{h}</th>" for h in ("area", "check", "description", "expected", "found", "result"))
    parts.append(f"<table class=checks><tr>{head}</tr>{''.join(_row(r) for r in ordered)}</table>")
    return "".join(parts)


def render_html(run: RunReport) -> str:
    counts = run.counts()
    banners = {Outcome.FAIL: ("CHECKS FAILED", "fail"), Outcome.ERROR: ("SOME CHECKS COULD NOT BE MADE", "error"),
               Outcome.WARN: ("ALL CHECKS PASSED, WITH WARNINGS", "warn")}
    verdict, css = banners.get(run.verdict, ("ALL CHECKS PASSED", "pass"))
    title = f"provision verify --level {run.level.value}"
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{escape(title)}</h1>"
        f"<div class=meta>{escape(run.started.isoformat(timespec='seconds'))} &middot; {len(run.nodes)} node(s) "
        f"&middot; {run.seconds:.2f} s &middot; {counts[Outcome.PASS]} passed, {counts[Outcome.WARN]} warned, "
        f"{counts[Outcome.WAIVED]} waived, {counts[Outcome.ERROR]} could not be checked, "
        f"{counts[Outcome.FAIL]} failed</div>"
        f"<div class='banner {css}'>{verdict}</div>"
        f"<h2>Fleet overview</h2>{_overview(run)}"
        f"{''.join(_node(n) for n in run.nodes)}"
        "</body></html>\n"
    )


def write_html(run: RunReport, path: Path) -> None:
    write_private(path, render_html(run))
