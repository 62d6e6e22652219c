"""Transport security, BMC side, through the CLI: TLS verified by default against the lab's CA; a client
without that CA fails with one clear line; `--insecure` only when asked, and it warns.

The BMC is a real HTTPS server on loopback (tests/unit/redfish/rf_fakebmc.py) with a certificate made by
the lab's own CA code (provision.lab.ca), serving the real Supermicro capture.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from provision.cli import main
from provision.lab.ca import make_ca_and_server
from provision.spec import load_fleet
from tests.unit.redfish.rf_fakebmc import Served
from tests.unit.tls_bmc import PASSWORD, point_node01


def _power_status(inv: Path, *extra: str) -> int:
    return main(["power", "node01", "status", "-i", str(inv), *extra])


def test_verification_is_on_by_default(inventory_copy: Path, tls_bmc: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    inv = point_node01(inventory_copy, tls_bmc.address, None, monkeypatch)
    assert load_fleet(inv).select(["node01"])[0].bmc.verify_tls is True


def test_with_the_lab_ca_the_bmc_answers(inventory_copy: Path, tls_bmc: Served, lab_ca: tuple[Path, Path, Path],
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    inv = point_node01(inventory_copy, tls_bmc.address, lab_ca[0], monkeypatch)
    assert _power_status(inv) == 0
    out, err = capsys.readouterr()
    assert "node01: On" in out and "OFF" not in err


def test_without_the_ca_it_fails_with_one_clear_line(inventory_copy: Path, tls_bmc: Served,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    inv = point_node01(inventory_copy, tls_bmc.address, None, monkeypatch)
    assert _power_status(inv) == 1
    out, err = capsys.readouterr()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "TLS verification failed" in lines[0] and "provision_bmc_ca_file" in lines[0], lines[0]
    assert "Traceback" not in err and PASSWORD not in out + err
    assert not any(s.method != "GET" for s in tls_bmc.bmc.seen), "nothing may be sent to an unverified BMC"
    assert not tls_bmc.bmc.seen  # the handshake failed: no request reached the server at all


def test_a_ca_that_did_not_sign_the_bmc_is_refused(inventory_copy: Path, tls_bmc: Served, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    other_ca, _, _ = make_ca_and_server(tmp_path)  # another lab's CA
    inv = point_node01(inventory_copy, tls_bmc.address, other_ca, monkeypatch)
    assert _power_status(inv) == 1
    assert "TLS verification failed" in capsys.readouterr().err


def test_insecure_only_when_asked_and_it_warns_once(inventory_copy: Path, tls_bmc: Served,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    inv = point_node01(inventory_copy, tls_bmc.address, None, monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _power_status(inv, "--insecure") == 0
    out, err = capsys.readouterr()
    assert "node01: On" in out
    said = err.count("TLS certificate verification is OFF") + len(
        [w for w in caught if "verification is OFF" in str(w.message)])
    assert said == 1, err  # once per BMC per command: not through the log and again as a Python warning
    assert PASSWORD not in out + err
