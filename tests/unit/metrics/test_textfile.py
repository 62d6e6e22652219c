"""The textfile-collector writer: exposition text, escaping, naming rules, atomic 0644 write, promtool."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from provision.errors import InputError
from provision.metrics import Family, render, write_textfile
from tests.reportcheck import check_metrics


def test_help_type_and_escaped_label_values() -> None:
    fam = Family("provision_test_info", 'a "help"\nwith a newline and a \\ backslash')
    fam.add(1, node='n"1', detail="a\\b\nc")
    text = render([fam])
    assert text.splitlines() == [
        '# HELP provision_test_info a "help"\\nwith a newline and a \\\\ backslash',
        "# TYPE provision_test_info gauge",
        'provision_test_info{detail="a\\\\b\\nc",node="n\\"1"} 1',
    ]


def test_values_are_plain_numbers() -> None:
    fam = Family("provision_test_seconds", "s").add(1.25, a="x").add(3.0, a="y").add(float("nan"), a="z")
    assert [line.rsplit(" ", 1)[1] for line in render([fam]).splitlines()[2:]] == ["1.25", "3", "NaN"]


def test_naming_rules_are_enforced() -> None:
    with pytest.raises(ValueError, match="_total"):
        Family("provision_test_total", "a gauge must not end in _total")
    with pytest.raises(ValueError, match="_total"):
        Family("provision_test_runs", "a counter must", type="counter")
    with pytest.raises(ValueError, match="metric name"):
        Family("provision-test", "dash")
    with pytest.raises(ValueError, match="label names"):
        Family("provision_test", "x").add(1, **{"__name": "reserved"})
    with pytest.raises(ValueError, match="twice"):
        render([Family("provision_a", "x").add(1), Family("provision_a", "y").add(2)])


def test_an_empty_family_writes_no_orphan_help() -> None:
    assert render([Family("provision_empty", "nothing"), Family("provision_one", "one").add(1)]).startswith(
        "# HELP provision_one ")


def test_write_is_atomic_0644_and_replaces(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        path = write_textfile(tmp_path / "m.prom", [Family("provision_test", "first").add(1)])
        inode = path.stat().st_ino
        write_textfile(path, [Family("provision_test", "second").add(2)])
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # node_exporter's user reads it; it holds no secret
    assert path.stat().st_ino != inode  # a new file renamed over the old one, never rewritten in place
    assert path.read_text().endswith("provision_test 2\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.prom"]  # no temporary file left
    check_metrics(path)


def test_write_into_a_missing_directory_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"--prom .*nope/m\.prom: directory .*nope does not exist"):
        write_textfile(tmp_path / "nope" / "m.prom", [Family("provision_test", "x").add(1)])


def test_promtool_catches_what_it_should(tmp_path: Path) -> None:
    """The promtool check can fail: a counter without _total and a gauge without HELP are refused."""
    bad = tmp_path / "bad.invalid.prom"
    bad.write_text("# HELP provision_runs runs\n# TYPE provision_runs counter\nprovision_runs 1\n"
                   "# TYPE provision_x gauge\nprovision_x 1\n")
    with pytest.raises(AssertionError, match="counter metrics should have \"_total\" suffix"):
        check_metrics(bad)


def test_every_report_a_test_leaves_is_validated(tmp_path_factory: pytest.TempPathFactory) -> None:
    """tests/conftest.py validates what a passing test left in its tmp_path with check_written: it finds
    reports by content, and refuses a broken one (this test uses another directory, or it would fail itself)."""
    import json

    from provision.conformance.report import write_json, write_junit
    from tests.reportcheck import check_written
    from tests.unit.conformance.test_reports import sample_run

    where = tmp_path_factory.mktemp("written")
    (where / "sub").mkdir()
    write_json(sample_run(), where / "sub" / "r.json")
    write_junit(sample_run(), where / "r.xml")
    write_textfile(where / "m.prom", [Family("provision_test", "x").add(1)])
    (where / "other.json").write_text('{"not": "a report"}')
    assert sorted(p.name for p in check_written(where)) == ["m.prom", "r.json", "r.xml"]
    data = json.loads((where / "sub" / "r.json").read_text())
    del data["schema_version"]
    (where / "sub" / "r.json").write_text(json.dumps(data))
    with pytest.raises(AssertionError, match="schema_version"):
        check_written(where)
