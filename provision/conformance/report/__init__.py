"""Renderings of a RunReport: terminal table, JUnit XML, JSON, one self-contained HTML page."""

from provision.conformance.report.html import render_html, write_html
from provision.conformance.report.json import from_json, to_json, write_json
from provision.conformance.report.junit import render_junit, write_junit
from provision.conformance.report.terminal import render_terminal

__all__ = [
    "from_json",
    "render_html",
    "render_junit",
    "render_terminal",
    "to_json",
    "write_html",
    "write_json",
    "write_junit",
]
