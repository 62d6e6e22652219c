"""A plain http:// BMC address is refused (the password would travel in clear) unless the host or group
opts in with provision_bmc_insecure_http: true, and then it is warned about once per run."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from provision.cli import main
from provision.redfish.connector import ConnectorOptions
from provision.redfish.ops import session
from provision.spec import load_fleet
from provision.spec.model import BmcEndpoint


def _set_host_vars(inv: Path, host: str, **values: object) -> None:
    path = inv.parent / "host_vars" / f"{host}.yml"
    data = yaml.safe_load(path.read_text()) if path.exists() else {}
    data.update(values)
    path.write_text("---\n" + yaml.safe_dump(data))


def test_provision_against_an_http_bmc_exits_2_naming_the_host(
    inventory_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _set_host_vars(inventory_copy, "node02", provision_bmc_address="http://bmc-node02.oob.example.net")
    rc = main(["power", "node02", "status", "-i", str(inventory_copy)])
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "host node02" in err and "http://bmc-node02.oob.example.net" in err and "plain HTTP" in err
    assert "provision_bmc_insecure_http" in err


def test_the_opt_in_from_a_group_is_accepted(inventory_copy: Path) -> None:
    _set_host_vars(inventory_copy, "node02", provision_bmc_address="http://bmc-node02.oob.example.net")
    group = inventory_copy.parent / "group_vars" / "ml_prod_v4.yml"
    group.write_text(group.read_text() + "provision_bmc_insecure_http: true\n")
    bmc = load_fleet(inventory_copy).hosts["node02"].bmc
    assert bmc.insecure_http and bmc.address.startswith("http://")


def test_https_needs_no_opt_in(inventory_copy: Path) -> None:
    fleet = load_fleet(inventory_copy)
    assert all(h.bmc.address.startswith("https://") and not h.bmc.insecure_http for h in fleet.hosts.values())


def test_models_refuse_plain_http_without_the_opt_in() -> None:
    with pytest.raises(ValidationError, match="plain HTTP"):
        BmcEndpoint(address="http://10.0.0.1", username="u", password="p")
    with pytest.raises(ValidationError, match="plain HTTP"):
        ConnectorOptions(address="http://10.0.0.1", username="u", password="p", name="n1")
    assert ConnectorOptions(address="http://10.0.0.1", username="u", password="p", insecure_http=True)


def test_the_opt_in_warns_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "_PLAIN_HTTP_WARNED", set())
    bmc = BmcEndpoint(address="http://10.0.0.1", username="u", password="p", insecure_http=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opts = session.options_for("n1", bmc)
        session.options_for("n2", bmc.model_copy(update={"address": "http://10.0.0.2"}))
    assert opts.insecure_http
    plain = [str(w.message) for w in caught if "plain HTTP" in str(w.message)]
    assert len(plain) == 1 and "n1 BMC (http://10.0.0.1)" in plain[0]
    with warnings.catch_warnings(record=True) as later:
        warnings.simplefilter("always")
        session.options_for("n3", BmcEndpoint(address="https://10.0.0.3", username="u", password="p"))
    assert not [w for w in later if "plain HTTP" in str(w.message)]


def test_loading_the_inventory_registers_every_bmc_password(inventory_copy: Path) -> None:
    from provision.redfish.redact import MASK, scrub

    _set_host_vars(inventory_copy, "node02", provision_bmc_password="Inv-Pa55-" + "w0rd9")
    load_fleet(inventory_copy)
    assert scrub("hook said Inv-Pa55-w0rd9") == f"hook said {MASK}"


def test_the_lab_opts_in_only_for_its_http_only_bmcs(tmp_path: Path) -> None:
    from provision.lab import manager

    http_only = manager._host_vars(tmp_path, manager.NodeState(name="n1", https_port=None, http_port=8000), "pw")
    both = manager._host_vars(tmp_path, manager.NodeState(name="n2", https_port=8443, http_port=8000), "pw")
    assert http_only["provision_bmc_address"].startswith("http://") and http_only["provision_bmc_insecure_http"]
    assert both["provision_bmc_address"].startswith("https://") and "provision_bmc_insecure_http" not in both
