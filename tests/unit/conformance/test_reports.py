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

from provision.conformance.model import Level, NodeReport, Outcome, Provenance, RunReport, Threshold
from provision.conformance.provenance import run_digest, spec_digest
from provision.conformance.report import from_json, render_html, render_junit, render_terminal, to_json
from provision.conformance.report.fleet import by_check
from provision.lab.declaration import lab_notice
from tests.reportcheck import check_json_report, check_junit
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
    digest = spec_digest(s)
    nodes = (
        NodeReport(node="good01", profile="ml_prod_v4", gather_seconds=0.2, spec_digest=digest,
                   results=tuple(r for r in good.results if r.area == "gpu")),
        NodeReport(node="bad02", profile="ml_prod_v4", lab=True, standins=("nvidia-smi",),
                   notice=lab_notice(("nvidia-smi",)), spec_digest=digest,
                   results=tuple(bad.results)),
        NodeReport(node="gone03", profile="ml_prod_v4", spec_digest=digest,
                   error="ssh root@10.203.3.2:22 failed: Connection refused"),
    )
    prov = Provenance(provision_version="0.1.0", inventory="inventory/<lab>/hosts.yml", spec_digest=run_digest(nodes),
                      command="provision verify good01 bad02 gone03 --level quick", host="controller01")
    return RunReport(level=Level.QUICK, seconds=1.25, nodes=nodes, provenance=prov)


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
    assert root.get("skipped") is None  # junit-10.xsd has no skipped on <testsuites>
    props = {p.get("name"): p.get("value") for p in bad.iter("property")}
    assert props["provision_version"] == "0.1.0" and props["run_spec_digest"] == r.provenance.spec_digest  # type: ignore[union-attr]
    assert props["command"].startswith("provision verify") and props["spec_digest"] == r.nodes[1].spec_digest


def test_junit_is_valid_against_the_jenkins_xunit_schema(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_text(render_junit(sample_run()), encoding="utf-8")
    check_junit(path)
    # the check can fail: the attribute the old writer put on <testsuites> is refused by junit-10.xsd
    old = tmp_path / "old.invalid.xml"
    old.write_text(path.read_text().replace("<testsuites ", '<testsuites skipped="1" ', 1), encoding="utf-8")
    with pytest.raises(AssertionError, match="skipped"):
        check_junit(old)


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
    assert data["schema_version"] == "1.1" and data["provenance"]["provision_version"] == "0.1.0"
    check_json_report(data)


def test_json_fleet_summary_by_check() -> None:
    data = to_json(sample_run())
    checks = {c["id"]: c for c in data["checks"]}
    assert checks["cpu.model"]["nodes"]["fail"] == ["bad02"] and checks["cpu.model"]["worst"] == "fail"
    assert checks["bmc.psu"]["counts"]["error"] == 1 and checks["bmc.psu"]["nodes"]["error"] == ["bad02"]
    assert data["unreachable"] == ["gone03"]
    order = [c["worst"] for c in data["checks"]]
    assert order == sorted(order, key=lambda o: ["fail", "error", "warn", "waived", "pass"].index(o))
    assert sum(c["counts"]["fail"] for c in data["checks"]) == data["totals"]["fail"]


def test_fleet_rows_rank_most_failing_nodes_first() -> None:
    base = sample_run()
    bad = base.nodes[1]
    twin = bad.model_copy(update={"node": "bad04", "results": tuple(r for r in bad.results if r.id == "cpu.threads")})
    rows = by_check(base.model_copy(update={"nodes": (*base.nodes, twin)}))
    assert rows[0].id == "cpu.threads" and rows[0].nodes[Outcome.FAIL] == ("bad02", "bad04")
    gpu = next(r for r in rows if r.id == "gpu.count")
    assert gpu.nodes[Outcome.PASS] == ("good01",) and gpu.worst is Outcome.ERROR


def test_html_summary_folds_long_node_lists() -> None:
    base = sample_run()
    bad = base.nodes[1]
    many = tuple(bad.model_copy(update={"node": f"bad{i:03d}"}) for i in range(25))
    page = render_html(base.model_copy(update={"nodes": many}))
    row = next(r for r in page.split("<tr") if "<code>cpu.model</code>" in r)
    assert "<td class=num>25</td>" in row and "<details><summary>and 15 more</summary>" in row
    shown, folded = row.split("<details>")
    assert "#node-bad009" in shown and "#node-bad010" not in shown and "#node-bad024" in folded


def test_json_schema_refuses_what_it_should(tmp_path: Path) -> None:
    """The published schema is a real contract: a report without its version or with an unknown outcome fails."""
    data = to_json(sample_run())
    for broken in ({k: v for k, v in data.items() if k != "schema_version"},
                   {**data, "verdict": "passed"},
                   {**data, "nodes": [{**data["nodes"][0], "surprise": 1}, *data["nodes"][1:]]}):
        with pytest.raises(AssertionError):
            check_json_report(json.loads(json.dumps(broken)))


def test_terminal_lists_failed_errors_warnings_and_waivers() -> None:
    console = Console(record=True, width=220)
    r = sample_run()
    render_terminal(r, console)
    out = console.export_text()
    assert "good01" in out and "UNREACHABLE" in out and "cpu.model" in out and "kernel.module.x" in out
    assert f"declared for bad02: {lab_notice(('nvidia-smi',))}" in out and "1 check(s) waived" in out
    assert "bad02 (declared)" in out and "good01 (declared)" not in out
    rows = {cells[1]: cells[-1] for line in out.splitlines()
            if len(cells := [c.strip() for c in line.strip("│").split("│")]) == 5}
    assert (rows["bmc.psu"], rows["bmc.temperatures"], rows["cpu.model"]) == ("error", "warn", "fail")
    assert "kernel.module.x" not in rows  # waived ones are grouped by reason, not listed as findings
    c = r.counts()
    assert (f"{c[Outcome.PASS]} pass, {c[Outcome.WARN]} warn, {c[Outcome.WAIVED]} waived, {c[Outcome.ERROR]} error, "
            f"{c[Outcome.FAIL]} fail") in out


def test_terminal_fleet_summary_counts_nodes_per_check() -> None:
    console = Console(record=True, width=220)
    base = sample_run()
    twins = tuple(base.nodes[1].model_copy(update={"node": f"bad{i:02d}"}) for i in range(6))
    render_terminal(base.model_copy(update={"nodes": (base.nodes[0], *twins)}), console)
    out = console.export_text()
    summary = out[out.index("fleet summary by check"):]
    row = next(line for line in summary.splitlines() if " cpu.model " in line)
    cells = [c.strip() for c in row.strip().strip("│").split("│")]
    assert cells == ["cpu.model", "6", "0", "bad00, bad01, bad02, bad03 and 2 more"]
    assert " gpu.count " in summary and "kernel.module.x" not in summary  # waived is no finding
    single = Console(record=True, width=220)
    render_terminal(base.model_copy(update={"nodes": base.nodes[1:2]}), single)
    assert "fleet summary by check" not in single.export_text()  # one node: its own list says it all


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


def test_html_fleet_summary_folds_passing_checks_and_shows_provenance() -> None:
    r = sample_run()
    page = render_html(r)
    summary = page[page.index("<section id=fleet-summary>"):page.index("</section>")]
    assert page.index("id=fleet-summary") < page.index("Fleet overview")  # the summary comes first
    assert "<code>cpu.model</code>" in summary and "<a href='#node-bad02'>bad02</a>" in summary
    assert "1 node(s) could not be checked at all" in summary and "gone03" in summary
    # good01's gpu checks passed everywhere they ran: folded; none fails on good01, so its table is folded whole
    assert "<details id=summary-passed><summary>" in summary
    good = page[page.index("<h2 id='node-good01'>"):page.index("<h2 id='node-bad02'>")]
    assert "<details class=passed><summary>" in good and "<table class=checks>" in good.split("<details")[1]
    assert "<table class=checks>" not in good.split("<details")[0]
    assert " open" not in page.replace("opens", "")  # folded by default, no JavaScript
    for value in ("0.1.0", "inventory/&lt;lab&gt;/hosts.yml", r.provenance.spec_digest, "controller01"):  # type: ignore[union-attr]
        assert value in page[page.index("id=provenance"):page.index("id=fleet-summary")]


def _png_rgb(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and the RGB(A) rows of an 8-bit PNG (the filters undone: None, Sub, Up, Average, Paeth)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, kind_rgb = 8, b"", 0, 0, 6
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, kind_rgb = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and kind_rgb in (2, 6), "expected an 8-bit RGB or RGBA screenshot"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 4 if kind_rgb == 6 else 3
    raw, stride, rows = zlib.decompress(idat), width * bpp, []
    prev = bytearray(stride)
    for y in range(height):
        ftype, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if ftype == 1:
                line[i] = (line[i] + a) & 0xFF
            elif ftype == 2:
                line[i] = (line[i] + b) & 0xFF
            elif ftype == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        rows.append(bytes(line) if bpp == 3 else bytes(v for j, v in enumerate(line) if j % 4 != 3))
        prev = line
    return width, height, rows


SUMMARY_MARK = bytes((0x95, 0x38, 0x00))  # the fleet summary's left border (#953800), nowhere else on the page


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium; scripts/bootstrap.sh installs it)")
    return subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )


def test_html_renders_in_headless_chromium_with_the_summary_on_top(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(render_html(sample_run()), encoding="utf-8")
    # the DOM as Chromium parsed it: the summary table names the failing check and its node; folds stay closed
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri()).stdout
    summary = dom[dom.index('<section id="fleet-summary">'):]
    assert "cpu.model" in summary.split("</section>")[0] and "bad02" in summary.split("</section>")[0]
    assert dom.count("<details") >= 2 and "<details open" not in dom
    shot = tmp_path / "shot.png"
    _chromium(tmp_path, "--window-size=1280,1600", f"--screenshot={shot}", page.as_uri())
    assert shot.exists(), "chromium wrote no screenshot"
    width, height, rows = _png_rgb(shot)
    assert (width, height) == (1280, 1600)
    marked = [y for y, row in enumerate(rows) if any(row[x : x + 3] == SUMMARY_MARK for x in range(0, 60 * 3, 3))]
    assert marked, "the fleet summary is not on the screenshot"
    assert marked[0] < height // 3, f"the fleet summary starts at y={marked[0]}, not near the top"
    assert len({row for row in rows[marked[0] : marked[-1]]}) > 16, "the summary area is blank"


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


def test_the_declared_notice_is_the_inventorys_text_and_changes_no_verdict() -> None:
    """The reports print what the declaration says, word for word, and nothing lab-specific of their own;
    the same node report without the declaration has the same verdicts and counts."""
    import inspect

    from provision.conformance.report import html, terminal

    declared = sample_run()
    plain = declared.model_copy(update={"nodes": tuple(n.model_copy(update={"notice": "", "lab": False,
                                                                             "standins": ()})
                                                       for n in declared.nodes)})
    assert [(n.verdict, n.counts()) for n in declared.nodes] == [(n.verdict, n.counts()) for n in plain.nodes]
    assert (declared.exit_code, declared.counts()) == (plain.exit_code, plain.counts())
    custom = declared.model_copy(update={"nodes": tuple(n.model_copy(update={"notice": "rack 7: borrowed PSUs"})
                                                        if n.notice else n for n in declared.nodes)})
    for source in (terminal, html):
        assert "STAND-IN" not in inspect.getsource(source) and ".lab" not in inspect.getsource(source)
    page = render_html(custom)
    assert "rack 7: borrowed PSUs" in page and "STAND-IN" not in page.replace("LAB STAND-IN: no modules", "")
    assert "(declared)" not in render_html(plain) and "Declared by the inventory" not in render_html(plain)
    console = Console(record=True, width=220)
    render_terminal(custom, console)
    out = console.export_text()
    assert "declared for bad02: rack 7: borrowed PSUs" in out
    quiet = Console(record=True, width=220)
    render_terminal(plain, quiet)
    assert "declared" not in quiet.export_text()
