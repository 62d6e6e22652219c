"""`--output json` where the siblings have it (provision/cli/output.py): bios diff, firmware plan, exec and
collect print the same JSON with `--output json` as with `--json`, in the shape asserted here; `--output
plain` prints a plan's table as tab-separated lines."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from provision.cli import main
from provision.remote.ssh import CommandResult
from tests.conftest import EXAMPLE_INVENTORY
from tests.unit.redfish.rf_fakebmc import FakeBmc, Served
from tests.unit.tls_bmc import PASSWORD, TREE, point_node01

INV = str(EXAMPLE_INVENTORY / "hosts.yml")


@contextlib.contextmanager
def _plain_http_bmc(inventory: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    with Served(FakeBmc(tree=dict(TREE), password=PASSWORD)) as srv:
        point_node01(inventory, srv.address, None, monkeypatch, provision_bmc_insecure_http=True)
        yield srv


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, Any]:
    rc = main(argv)
    out = capsys.readouterr().out
    return rc, json.loads(out)


@pytest.mark.parametrize(("argv", "keys"), [
    (["bios", "diff", "node01"], {"node", "plan"}),
    (["firmware", "plan", "node01"], {"node", "plan", "host_reset"}),
])  # fmt: skip
def test_bmc_plans_print_the_same_json_with_output_json(inventory_copy: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch, argv: list[str],
                                                        keys: set[str]) -> None:
    with _plain_http_bmc(inventory_copy, monkeypatch):
        rc, data = _json(capsys, [*argv, "-i", str(inventory_copy), "--output", "json"])
        rc_old, old = _json(capsys, [*argv, "-i", str(inventory_copy), "--json"])
    assert (rc, data) == (rc_old, old) and set(data) == keys and data["node"] == "node01"
    if argv[0] == "bios":
        assert {"changes", "invalid", "unmapped", "vendor"} <= set(data["plan"])
        assert data["plan"]["changes"] and {"key", "attribute", "current", "target"} <= set(data["plan"]["changes"][0])
    else:
        assert isinstance(data["host_reset"], bool) and {"firmware", "bios"} <= set(data["plan"])
        steps = data["plan"]["firmware"]["steps"]
        assert steps and {"component", "version", "method", "apply_time", "entries"} <= set(steps[0])


def test_firmware_plan_plain_is_tab_separated(inventory_copy: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with _plain_http_bmc(inventory_copy, monkeypatch):
        main(["firmware", "plan", "node01", "-i", str(inventory_copy), "--output", "plain"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "#\tcomponent\tto\tmethod\tapply\thost reset\tentries"
    assert lines[1].split("\t")[0] == "1" and len(lines[1].split("\t")) == 7


def test_exec_output_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def run_many(hosts: list[Any], command: str, concurrency: int) -> list[CommandResult]:
        return [CommandResult(node=h.name, command=command, exit_code=i, stdout=f"{h.name} [out]\n", stderr="",
                              seconds=0.1) for i, h in enumerate(hosts)]

    monkeypatch.setattr("provision.cli.remote.run_many", run_many)
    rc, data = _json(capsys, ["exec", "node0[1:2]", "-i", INV, "--output", "json", "--", "uname", "-r"])
    assert rc == 1  # node02 exited 1
    assert [(r["node"], r["exit_code"], r["ok"]) for r in data] == [("node01", 0, True), ("node02", 1, False)]
    assert set(data[0]) == {"node", "command", "exit_code", "stdout", "stderr", "seconds", "ok"}
    assert data[0]["command"] == "uname -r" and data[0]["stdout"] == "node01 [out]\n"
    assert _json(capsys, ["exec", "node0[1:2]", "-i", INV, "--json", "--", "uname", "-r"]) == (rc, data)


def test_collect_output_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                             tmp_path: Path) -> None:
    made: list[str] = []

    def collect(host: Any, out: Path) -> Path:
        made.append(host.name)
        return out / f"{host.name}-20261202T030000.tar.gz"

    monkeypatch.setattr("provision.cli.remote.collect", collect)
    rc, data = _json(capsys, ["collect", "node01", "-i", INV, "--out", str(tmp_path), "--output", "json"])
    assert rc == 0 and data == {"node": "node01", "bundle": str(tmp_path / "node01-20261202T030000.tar.gz")}
    assert main(["collect", "node01", "-i", INV, "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "node01-20261202T030000.tar.gz") and made == ["node01"] * 2
