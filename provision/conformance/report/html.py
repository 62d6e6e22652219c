"""One self-contained HTML page per run: provenance, the fleet summary by check, the overview per node,
then per node every check.

No external assets (inline CSS, no scripts): the file opens offline and can be archived as is. Passing
checks are folded in <details> (closed; the browser opens them, no JavaScript). Every value is HTML-escaped.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from provision.conformance.model import SEVERITY, CheckResult, NodeReport, Outcome, RunReport
from provision.conformance.report.fleet import CheckSummary, by_check, unreachable
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
.declared{background:#ddf4ff;color:#0a3069;padding:8px 12px;border-radius:6px;margin:8px 0}
.detail{color:#57606a;font-size:12px}
details{margin:4px 0 16px} summary{cursor:pointer;color:#57606a;font-weight:600}
dl.prov{display:grid;grid-template-columns:max-content auto;gap:2px 12px;font-size:13px;margin:8px 0}
dl.prov dt{color:#57606a} dl.prov dd{margin:0;font-family:ui-monospace,monospace;word-break:break-all}
#fleet-summary{border-left:6px solid #953800;padding-left:12px}
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
            f"<tr><td><a href='#node-{escape(n.node)}'>{escape(n.node)}</a>{' (declared)' if n.notice else ''}</td>"
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
    if n.notice:
        parts.append(f"<div class=declared>Declared by the inventory: {escape(n.notice)}</div>")
    if n.error:
        parts.append(f"<div class='banner error'>Facts could not be gathered: {escape(n.error)}</div>")
        return "".join(parts)
    ordered = sorted(n.results, key=lambda r: ORDER[r.outcome])
    head = "".join(f"<th>{h}</th>" for h in ("area", "check", "description", "expected", "found", "result"))
    shown = [r for r in ordered if r.outcome is not Outcome.PASS]
    passed = [r for r in ordered if r.outcome is Outcome.PASS]
    if shown:
        parts.append(f"<table class=checks><tr>{head}</tr>{''.join(_row(r) for r in shown)}</table>")
    if passed:
        parts.append(f"<details class=passed><summary>{len(passed)} passing check(s)</summary>"
                     f"<table class=checks><tr>{head}</tr>{''.join(_row(r) for r in passed)}</table></details>")
    return "".join(parts)


NODES_SHOWN = 10  # a check failing on a whole fleet lists its first nodes; the rest are folded


def _links(names: tuple[str, ...]) -> str:
    return ", ".join(f"<a href='#node-{escape(x)}'>{escape(x)}</a>" for x in names)


def _nodes_cell(names: tuple[str, ...]) -> str:
    links = _links(names[:NODES_SHOWN])
    if len(names) > NODES_SHOWN:
        rest = names[NODES_SHOWN:]
        links += f"<details><summary>and {len(rest)} more</summary>{_links(rest)}</details>"
    return f"<td class=num>{len(names)}</td><td>{links}</td>"


SUMMARY_COLUMNS = tuple(o for o in SEVERITY if o is not Outcome.PASS)  # worst first


def _summary_row(row: CheckSummary) -> str:
    cells = "".join(_nodes_cell(row.nodes[o]) for o in SUMMARY_COLUMNS)
    return (f"<tr class='check {_cls(row.worst)}-row'><td><code>{escape(row.id)}</code></td><td>{escape(row.area)}"
            f"</td><td>{escape(row.description)}</td>{cells}<td class=num>{row.count(Outcome.PASS)}</td></tr>")


def _summary(run: RunReport) -> str:
    """Which checks failed, could not be made, warned or were waived on how many nodes, and which nodes."""
    rows = by_check(run)
    flagged = [r for r in rows if not r.all_passed]
    clean = [r for r in rows if r.all_passed]
    names = ["check", "area", "description"]
    for o in SUMMARY_COLUMNS:
        names += [o.value, f"{o.value} nodes"]
    head = "<tr>" + "".join(f"<th>{h}</th>" for h in [*names, "pass"]) + "</tr>"
    parts = ["<section id=fleet-summary><h2>Fleet summary by check</h2>"]
    if flagged:
        parts.append(f"<table id=summary-checks>{head}{''.join(_summary_row(r) for r in flagged)}</table>")
    else:
        parts.append("<p class=pass>Every check that ran passed on every node.</p>")
    down = unreachable(run)
    if down:
        parts.append(f"<p class='banner error'>{len(down)} node(s) could not be checked at all (facts not "
                     f"gathered): {escape(', '.join(down))}</p>")
    if clean:
        body = "".join(f"<tr><td><code>{escape(r.id)}</code></td><td>{escape(r.area)}</td>"
                       f"<td>{escape(r.description)}</td><td class=num>{r.count(Outcome.PASS)}</td></tr>"
                       for r in clean)
        parts.append(f"<details id=summary-passed><summary>{len(clean)} check(s) passed on every node that ran "
                     f"them</summary><table><tr><th>check</th><th>area</th><th>description</th><th>nodes</th></tr>"
                     f"{body}</table></details>")
    parts.append("</section>")
    return "".join(parts)


def _provenance(run: RunReport) -> str:
    p = run.provenance
    items = [("started", run.started.isoformat(timespec="seconds")), ("level", run.level.value)]
    if p is not None:
        items += [("provision", p.provision_version), ("inventory", p.inventory), ("spec digest", p.spec_digest),
                  ("command", p.command), ("controller", p.host)]
    body = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in items)
    return f"<dl class=prov id=provenance>{body}</dl>"


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
        f"{_provenance(run)}"
        f"<div class='banner {css}'>{verdict}</div>"
        f"{_summary(run)}"
        f"<h2>Fleet overview</h2>{_overview(run)}"
        f"{''.join(_node(n) for n in run.nodes)}"
        "</body></html>\n"
    )


def write_html(run: RunReport, path: Path) -> None:
    write_private(path, render_html(run))
