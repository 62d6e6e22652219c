"""One BMC session per verify: `provision verify` opens its own, honouring --insecure and the host's CA file;
the BMC check modules import each other in one direction only (the facts model has a module of its own), and
the checks never import the BMC source (the I/O is conformance's, the checks judge).

The BMC is a real HTTPS server on loopback (tests/unit/redfish/rf_fakebmc.py) with a certificate made by
the lab's CA code, serving the pruned Supermicro capture; the node side is a fake SSH runner.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from provision.cli import main
from tests.conftest import ROOT
from tests.unit.conformance.helpers import framed
from tests.unit.redfish.rf_fakebmc import Served
from tests.unit.tls_bmc import PASSWORD, point_node01

CONFORMANCE = ROOT / "provision" / "conformance"
BMC_MODULES = ("checks.bmc", "bmc_source", "checks.bmc_facts")
SESSIONS = "/redfish/v1/SessionService/Sessions"


# ---- the import graph ---------------------------------------------------------------------------------------
def _imports(module: str) -> set[str]:
    """Every BMC module of provision.conformance `module` imports, at the top or inside a function."""
    tree = ast.parse((CONFORMANCE / f"{module.replace('.', '/')}.py").read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    prefix = "provision.conformance."
    return {n[len(prefix):] for n in names if n.startswith(prefix) and n[len(prefix):] in BMC_MODULES}


def test_the_bmc_check_modules_import_without_a_cycle() -> None:
    graph = {m: _imports(m) for m in BMC_MODULES}
    assert graph == {"checks.bmc": {"checks.bmc_facts"}, "bmc_source": {"checks.bmc", "checks.bmc_facts"},
                     "checks.bmc_facts": set()}

    def reaches(start: str, goal: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph[start])

    assert not [m for m in BMC_MODULES if reaches(m, m)]


@pytest.mark.parametrize("module", BMC_MODULES)
def test_each_bmc_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    code = f"import provision.conformance.{module} as m; print(m.BmcFacts.__module__)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "provision.conformance.checks.bmc_facts"


# ---- provision verify: its own session, TLS as the operator says ---------------------------------------------
@pytest.fixture
def no_ssh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The node side answers nothing (its rows are errors); only the BMC rows are judged here."""
    import provision.conformance.node as runner

    monkeypatch.setattr(runner, "ssh_runner_for", lambda level: lambda host: lambda node, script: framed({}))


def _inventory(inv: Path, address: str, ca: Path | None, monkeypatch: pytest.MonkeyPatch) -> Path:
    return point_node01(inv, address, ca, monkeypatch, ansible_host="127.0.0.1")


def _verify(inv: Path, out: Path, *extra: str) -> tuple[int, list[dict[str, str]]]:
    rc = main(["verify", "node01", "-i", str(inv), "--json", str(out), *extra])
    report = json.loads(out.read_text())
    rows = [r for n in report["nodes"] for r in n["results"] if r["area"] == "bmc"]
    return rc, rows


def _logins(srv: Served) -> int:
    return sum(1 for s in srv.bmc.seen if s.method == "POST" and s.path == SESSIONS)


def test_verify_without_insecure_makes_an_untrusted_bmc_error_rows(
        inventory_copy: Path, tls_bmc: Served, no_ssh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rc, rows = _verify(_inventory(inventory_copy, tls_bmc.address, None, monkeypatch), tmp_path / "r.json")
    assert rc == 3
    assert rows and {r["outcome"] for r in rows} == {"error"}
    assert all(r["detail"].startswith("BMC TLS verification failed") for r in rows), rows[0]
    assert not tls_bmc.bmc.seen  # the handshake failed: nothing, credentials least of all, was sent


def test_verify_insecure_reaches_the_untrusted_bmc_over_one_session(
        inventory_copy: Path, tls_bmc: Served, no_ssh: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    inv = _inventory(inventory_copy, tls_bmc.address, None, monkeypatch)
    _rc, rows = _verify(inv, tmp_path / "r.json", "--insecure")
    out, err = capsys.readouterr()
    assert err.count("TLS certificate verification is OFF") == 1, err  # once per BMC per command
    judged = [r for r in rows if r["outcome"] in ("pass", "fail", "warn")]
    assert judged, rows  # the BMC was read: its PSUs, fans and temperatures are judged
    assert not any("TLS" in r["detail"] for r in rows)
    assert _logins(tls_bmc) == 1  # one session for the node's BMC checks, logged out after
    assert sum(1 for s in tls_bmc.bmc.seen if s.method == "DELETE" and s.path.startswith(SESSIONS)) == 1
    assert PASSWORD not in out + err + (tmp_path / "r.json").read_text()


def test_verify_trusts_the_bmc_through_the_hosts_ca_file(
        inventory_copy: Path, tls_bmc: Served, lab_ca: tuple[Path, Path, Path], no_ssh: None, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    _rc, rows = _verify(_inventory(inventory_copy, tls_bmc.address, lab_ca[0], monkeypatch), tmp_path / "r.json")
    assert [r for r in rows if r["outcome"] in ("pass", "fail", "warn")], rows
    assert not any("TLS" in r["detail"] for r in rows) and _logins(tls_bmc) == 1
