"""CLI commands against a loopback BMC serving a real capture (exit codes, JSON, one-line errors), and
the SimpleUpdate image server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
from rf_fakebmc import FakeBmc, Served
from rf_support import point_at, tree

from provision.cli import main as cli_main
from provision.redfish.image_server import ImageServer


def test_bmc_inventory_json_and_drift_exit(inventory_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Served(FakeBmc(tree=tree("supermicro"))) as srv:
        point_at(inventory_copy, srv.address)
        code = cli_main(["bmc", "inventory", "node01", "-i", str(inventory_copy), "--json"])
    out = capsys.readouterr()
    data = json.loads(out.out)
    assert code == 1 and "differ from the spec" in out.err  # the capture has 8462Y+ CPUs, 2 DIMMs
    assert len(data["inventory"]["gpus"]) == 8 and data["vendor"] == "supermicro"
    assert {d["key"] for d in data["drift"] if d["verdict"] == "drift"} >= {"cpu.model", "memory.dimm_count"}


def test_firmware_status_and_plan(inventory_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Served(FakeBmc(tree=tree("supermicro"))) as srv:
        point_at(inventory_copy, srv.address)
        code = cli_main(["firmware", "status", "node01", "-i", str(inventory_copy), "--json"])
        status = json.loads(capsys.readouterr().out)
        assert code == 1 and {c["component"]: c["verdict"] for c in status["components"]}["bios"] == "older"
        code = cli_main(["firmware", "update", "node01", "-i", str(inventory_copy), "--plan", "--json"])
        plan = json.loads(capsys.readouterr().out)
    assert code == 0 and plan["applied"] is False
    assert [s["component"] for s in plan["plan"]["firmware"]["steps"]] == ["bmc", "bios", "gpu", "nvswitch"]
    assert not [s for s in srv.bmc.seen if s.method in ("POST", "PATCH") and "Sessions" not in s.path]


def test_bios_apply_plan_changes_nothing(inventory_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Served(FakeBmc(tree=tree("supermicro"))) as srv:
        point_at(inventory_copy, srv.address)
        code = cli_main(["bios", "apply", "node01", "-i", str(inventory_copy), "--plan", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["applied"] is False and data["plan"]["changes"]
    assert srv.bmc.patches == []


def test_unknown_node_and_unreachable_bmc_are_one_line(
    inventory_copy: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from provision.redfish.ops import session
    from provision.redfish.retry import RetryPolicy

    monkeypatch.setattr(session, "RetryPolicy", lambda: RetryPolicy(attempts=2, base_delay_s=0.05))
    assert cli_main(["sel", "nodeXX", "-i", str(inventory_copy)]) == 2
    err = capsys.readouterr().err
    assert "nodeXX" in err and "Traceback" not in err
    point_at(inventory_copy, "http://127.0.0.1:9")
    assert cli_main(["power", "node01", "status", "-i", str(inventory_copy)]) == 1
    err = capsys.readouterr().err
    assert "node01 BMC" in err and "s3cret-Pa55" not in err and len(err.strip().splitlines()) <= 3


def test_image_server_serves_only_registered_files(tmp_path: Path) -> None:
    image = tmp_path / "bmc.bin"
    image.write_bytes(b"firmware")
    (tmp_path / "secret.txt").write_text("no")
    with ImageServer() as srv:
        url = srv.url_for(image)
        assert url.startswith("http://127.0.0.1:")
        assert requests.get(url, timeout=5).content == b"firmware"
        base = url.rsplit("/", 1)[0]
        assert requests.get(f"{base}/secret.txt", timeout=5).status_code == 404
        assert requests.get(url.replace(srv.prefix, "guess"), timeout=5).status_code == 404
    assert srv.served == ["bmc.bin"]
