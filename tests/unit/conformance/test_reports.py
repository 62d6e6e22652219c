"""Reports: JUnit XML, JSON, terminal table and the self-contained HTML page (opened in headless Chromium)."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest
from rich.console import Console

from provision.conformance.model import Level, NodeReport, Outcome, RunReport, Threshold
from provision.conformance.report import from_json, render_html, render_junit, render_terminal, to_json
from tests.unit.conformance.helpers import fixture, run, spec
from tests.unit.parsers._fixtures import H100_590, section


def sample_run() -> RunReport:
    """Two nodes with real verdicts from captures, plus one unreachable node."""
    s = spec(**{"gpu.count": 1, "software.nvidia_driver.branch": "590", "software.nvidia_driver.version": "590.48.01",
                "software.fabric_manager.version": "590.48.01"})
    good = run(s, {"nvidia_smi_q": section(H100_590, "nvidia-smi -q", exact=True),
                   "nvidia_smi_nvlink": section(H100_590, "nvidia-smi nvlink -s", phase="capabilities")},
               Level.QUICK)
    bad = run(spec(), {"lscpu": fixture("lscpu/linuxhw/lscpu.2x-xeon-platinum-8280.cascadelake.txt"),
                       "kernel_modules": "@monolithic\nkernel\n"}, Level.QUICK)
    bad.waive("kernel.module.x", "kernel", "module <x> & \"quotes\"", "loaded", "LAB STAND-IN: no modules")
    bad.error("bmc.psu", "bmc", "PSUs present and healthy", 2, "BMC refused the credentials: login refused (401)")
    bad.tiered("bmc.temperatures", "bmc", "temperatures within limits", 37.0,
               Threshold(warn=35, fail=85, unit="C"), "System Temp above the internal ambient warning")
    return RunReport(level=Level.QUICK, seconds=1.25, nodes=(
        NodeReport(node="good01", profile="ml_prod_v4", gather_seconds=0.2,
                   results=tuple(r for r in good.results if r.area == "gpu")),
        NodeReport(node="bad02", profile="ml_prod_v4", lab=True, standins=("nvidia-smi",),
                   results=tuple(bad.results)),
        NodeReport(node="gone03", profile="ml_prod_v4", error="ssh root@10.203.3.2:22 failed: Connection refused"),
    ))


def test_run_verdicts() -> None:
    r = sample_run()
    assert not r.ok and r.nodes[0].ok and not r.nodes[1].ok and not r.nodes[2].ok
    counts = r.counts()
    assert counts[Outcome.FAIL] > 0 and counts[Outcome.PASS] > 0
    assert (counts[Outcome.WAIVED], counts[Outcome.WARN]) == (1, 1)
    assert counts[Outcome.ERROR] == len(r.nodes[1].errors) and "bmc.psu" in {x.id for x in r.nodes[1].errors}
    assert r.nodes[1].verdict is Outcome.FAIL and r.nodes[2].verdict is Outcome.ERROR and r.exit_code == 1


def test_junit_xml_counts_and_messages() -> None:
    r = sample_run()
    root = ET.fromstring(render_junit(r))
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"good01", "bad02", "gone03"}
    assert suites["good01"].get("failures") == "0"
    bad = suites["bad02"]
    assert int(bad.get("failures") or 0) == len(r.nodes[1].failed) > 0 and bad.get("skipped") == "1"
    failures = [c for c in bad.iter("testcase") if c.find("failure") is not None]
    assert {c.get("name") for c in failures} == {x.id for x in r.nodes[1].failed}
    # could not check -> <error>, never <failure>; waived -> <skipped> with the reason; warn -> passes, says WARN
    errors = {c.get("name"): c.find("error") for c in bad.iter("testcase") if c.find("error") is not None}
    assert set(errors) == {x.id for x in r.nodes[1].errors} and "bmc.psu" in errors
    assert bad.get("errors") == str(len(errors)) and "BMC refused the credentials" in (errors["bmc.psu"].text or "")
    skipped = [c for c in bad.iter("testcase") if c.find("skipped") is not None]
    assert [c.get("name") for c in skipped] == ["kernel.module.x"]
    assert skipped[0].find("skipped").get("message") == "waived: LAB STAND-IN: no modules"  # type: ignore[union-attr]
    warn = next(c for c in bad.iter("testcase") if c.get("name") == "bmc.temperatures")
    assert warn.find("failure") is None and warn.find("error") is None and warn.find("skipped") is None
    assert (warn.findtext("system-out") or "").startswith("WARN: ")
    assert root.get("errors") == str(len(errors) + 1)  # the unreachable node counts as one error
    model = next(c for c in failures if c.get("name") == "cpu.model").find("failure")
    assert model is not None and "expected Intel(R) Xeon(R) Platinum 8592+" in (model.get("message") or "")
    assert suites["gone03"].find("testcase/error") is not None
    assert root.get("failures") == str(sum(len(n.failed) for n in r.nodes))


def test_json_round_trip() -> None:
    r = sample_run()
    data = json.loads(json.dumps(to_json(r)))
    assert data["ok"] is False and data["level"] == "quick"
    assert [n["node"] for n in data["nodes"]] == ["good01", "bad02", "gone03"]
    assert data["nodes"][0]["ok"] is True and data["nodes"][2]["error"].startswith("ssh")
    row = data["nodes"][1]["results"][0]
    assert {"id", "area", "expected", "found", "outcome"} <= set(row) and "passed" not in row and "skipped" not in row
    outcomes = {x["id"]: x["outcome"] for x in data["nodes"][1]["results"]}
    assert (outcomes["bmc.psu"], outcomes["kernel.module.x"], outcomes["bmc.temperatures"]) == ("error", "waived",
                                                                                                  "warn")
    assert outcomes["cpu.model"] == "fail"
    assert data["nodes"][1]["totals"]["waived"] == 1 and data["nodes"][1]["verdict"] == "fail"
    assert (data["verdict"], data["exit_code"]) == ("fail", 1) and data["nodes"][2]["verdict"] == "error"
    assert from_json(data) == r


def test_terminal_lists_failed_errors_warnings_and_waivers() -> None:
    console = Console(record=True, width=220)
    r = sample_run()
    render_terminal(r, console)
    out = console.export_text()
    assert "good01" in out and "UNREACHABLE" in out and "cpu.model" in out and "kernel.module.x" in out
    assert "LAB STAND-IN" in out and "1 check(s) waived" in out
    rows = {cells[1]: cells[-1] for line in out.splitlines()
            if len(cells := [c.strip() for c in line.strip("│").split("│")]) == 5}
    assert (rows["bmc.psu"], rows["bmc.temperatures"], rows["cpu.model"]) == ("error", "warn", "fail")
    assert "kernel.module.x" not in rows  # waived ones are grouped by reason, not listed as findings
    c = r.counts()
    assert (f"{c[Outcome.PASS]} pass, {c[Outcome.WARN]} warn, {c[Outcome.WAIVED]} waived, {c[Outcome.ERROR]} error, "
            f"{c[Outcome.FAIL]} fail") in out


def test_html_is_self_contained_and_escaped() -> None:
    page = render_html(sample_run())
    assert page.startswith("<!DOCTYPE html>") and "Fleet overview" in page
    assert "<script" not in page and "http://" not in page and "https://" not in page
    assert "module &lt;x&gt; &amp; &quot;quotes&quot;" in page
    assert page.count("<h2 id='node-") == 3 and "Facts could not be gathered" in page
    # errors are shown apart from failures, and warnings too
    assert "<td class='error'>ERROR</td>" in page and "<td class='warn'>WARN</td>" in page
    assert "<td class='fail'>FAIL</td>" in page and "<td class='waived'>WAIVED</td>" in page
    assert "1 warned, 1 waived," in page and "could not be checked" in page


def _png_pixels(path: Path) -> tuple[int, int, bytes]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


def test_html_renders_in_headless_chromium(tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    page = tmp_path / "report.html"
    page.write_text(render_html(sample_run()), encoding="utf-8")
    shot = tmp_path / "shot.png"
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
         "--window-size=1280,1600", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, timeout=120, check=False,
    )
    assert shot.exists(), "chromium wrote no screenshot"
    width, height, raw = _png_pixels(shot)
    assert (width, height) == (1280, 1600)
    assert len(set(raw)) > 16, "the screenshot is blank"


def test_report_files_hold_node_data_and_are_0600_from_the_start(tmp_path: Path) -> None:
    """Reports name every node's hardware, serials and failures: on a shared controller no other user reads
    them, whatever the umask (they were written with the default umask, 0644 under umask 022)."""
    import os
    import stat

    from provision.conformance.report import write_html, write_json, write_junit

    old = os.umask(0o022)
    try:
        paths = {"junit": tmp_path / "r.xml", "json": tmp_path / "r.json", "html": tmp_path / "r.html"}
        write_junit(sample_run(), paths["junit"])
        write_json(sample_run(), paths["json"])
        write_html(sample_run(), paths["html"])
    finally:
        os.umask(old)
    modes = {name: stat.S_IMODE(p.stat().st_mode) for name, p in paths.items()}
    assert modes == {"junit": 0o600, "json": 0o600, "html": 0o600}
    assert json.loads(paths["json"].read_text())["nodes"]
