"""A plain http:// BMC address is refused (the password would travel in clear) unless the host or group
opts in with provision_bmc_insecure_http: true, and then it is warned about once per BMC per command."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from provision.cli import main
from provision.errors import InputError
from provision.redfish import transport_warnings
from provision.redfish.connector import ConnectorOptions
from provision.redfish.ops import session
from provision.spec import load_fleet
from provision.spec.fleet import BmcEndpoint


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


def _said(caught: list[warnings.WarningMessage], caplog: pytest.LogCaptureFixture, what: str) -> list[str]:
    """Every time `what` was said: as a Python warning and as a log record (the CLI prints both)."""
    return [str(w.message) for w in caught if what in str(w.message)] + [
        r.getMessage() for r in caplog.records if what in r.getMessage()]


def test_the_opt_in_warns_once_per_bmc_per_command(caplog: pytest.LogCaptureFixture) -> None:
    transport_warnings.reset()
    bmc = BmcEndpoint(address="http://10.0.0.1", username="u", password="p", insecure_http=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opts = session.options_for("n1", bmc)
        session.options_for("n1", bmc)  # a second connector to the same BMC in the same command
        session.options_for("n2", bmc.model_copy(update={"address": "http://10.0.0.2"}))
        session.options_for("n3", BmcEndpoint(address="https://10.0.0.3", username="u", password="p"))
    assert opts.insecure_http
    plain = _said(caught, caplog, "plain HTTP")
    assert len(plain) == 2 and "n1 BMC (http://10.0.0.1)" in plain[0] and "n2 BMC (http://10.0.0.2)" in plain[1]
    caplog.clear()
    transport_warnings.reset()  # the next command says it again
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        session.options_for("n1", bmc)
    assert len(_said(again, caplog, "plain HTTP")) == 1


def test_one_command_prints_the_plain_http_warning_once(inventory_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.conftest import ROOT
    from tests.unit.redfish.rf_fakebmc import FakeBmc, Served, load_tree

    bmc = FakeBmc(tree=load_tree(ROOT / "tests" / "fixtures" / "redfish" / "supermicro"))
    with Served(bmc) as srv:
        _set_host_vars(inventory_copy, "node01", provision_bmc_address=srv.address, provision_bmc_username=bmc.username,
                       provision_bmc_password=bmc.password, provision_bmc_insecure_http=True)
        for _ in range(2):  # each command says it once: the second is not silenced by the first
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                assert main(["power", "node01", "status", "-i", str(inventory_copy)]) == 0
            err = capsys.readouterr().err
            assert err.count("plain HTTP") + len([w for w in caught if "plain HTTP" in str(w.message)]) == 1, err


def test_loading_the_inventory_registers_every_bmc_password(inventory_copy: Path) -> None:
    from provision.redact import MASK, scrub

    _set_host_vars(inventory_copy, "node02", provision_bmc_password="Inv-Pa55-" + "w0rd9")
    load_fleet(inventory_copy)
    assert scrub("hook said Inv-Pa55-w0rd9") == f"hook said {MASK}"


def test_the_lab_opts_in_only_for_its_http_only_bmcs(tmp_path: Path) -> None:
    from provision.lab.inventory_writer import _host_vars
    from provision.lab.state import NodeState

    http_only = _host_vars(tmp_path, NodeState(name="n1", https_port=None, http_port=8000), "pw")
    both = _host_vars(tmp_path, NodeState(name="n2", https_port=8443, http_port=8000), "pw")
    assert http_only["provision_bmc_address"].startswith("http://") and http_only["provision_bmc_insecure_http"]
    assert both["provision_bmc_address"].startswith("https://") and "provision_bmc_insecure_http" not in both


def _ini_inventory(inv: Path, flag: str, where: str) -> Path:
    """The example inventory as INI (group_vars and host_vars beside it, as Ansible reads them), node02's BMC at
    a plain http:// address and provision_bmc_insecure_http given as INI text, on node02's line or as a group var."""
    _set_host_vars(inv, "node02", provision_bmc_address="http://bmc-node02.oob.example.net")
    hosts = "\n".join(f"node{i:02d}" + (f" provision_bmc_insecure_http={flag}" if i == 2 and where == "host" else "")
                      for i in range(1, 9))
    group = f"\n[ml_prod_v4:vars]\nprovision_bmc_insecure_http={flag}\n" if where == "group" else ""
    ini = inv.parent / "hosts.ini"
    ini.write_text(f"[ml_prod_v4]\n{hosts}\n{group}\n[gpu_nodes:children]\nml_prod_v4\n")
    return ini


@pytest.mark.parametrize(("flag", "where"), [
    ("false", "host"), ("no", "host"), ("0", "host"), ("False", "host"), ("off", "host"), ("NO", "host"),
    ("false", "group"), ("no", "group"), ("0", "group"),
])
def test_an_ini_no_is_no_opt_in_to_plain_http(inventory_copy: Path, flag: str, where: str) -> None:
    """An INI inventory gives its values as text (or as Python literals: False, 0): none of these says yes."""
    ini = _ini_inventory(inventory_copy, flag, where)
    with pytest.raises(InputError, match=r"host node02: provision_bmc_address http://bmc-node02\S* is plain HTTP"):
        load_fleet(ini)


@pytest.mark.parametrize(("flag", "where"), [("true", "host"), ("yes", "host"), ("1", "host"), ("True", "group")])
def test_an_ini_yes_opts_in_to_plain_http(inventory_copy: Path, flag: str, where: str) -> None:
    bmc = load_fleet(_ini_inventory(inventory_copy, flag, where)).hosts["node02"].bmc
    assert bmc.insecure_http and bmc.address == "http://bmc-node02.oob.example.net"


def _ini_verify_tls(inv: Path, flag: str) -> Path:
    """The example inventory as INI with provision_bmc_verify_tls given as INI text on node02's line."""
    hosts = "\n".join(f"node{i:02d}" + (f" provision_bmc_verify_tls={flag}" if i == 2 else "") for i in range(1, 9))
    ini = inv.parent / "hosts.ini"
    ini.write_text(f"[ml_prod_v4]\n{hosts}\n\n[gpu_nodes:children]\nml_prod_v4\n")
    return ini


@pytest.mark.parametrize(("flag", "verified"), [
    ("true", True), ("yes", True), ("1", True), ("on", True), ("True", True),
    ("false", False), ("no", False), ("0", False), ("off", False), ("False", False),
])
def test_an_ini_verify_tls_reads_yes_and_no(inventory_copy: Path, flag: str, verified: bool) -> None:
    """INI gives text: 'false' turns verification off as a YAML false does, and 'true' keeps it on."""
    fleet = load_fleet(_ini_verify_tls(inventory_copy, flag))
    assert (fleet.hosts["node02"].bmc.verify_tls, fleet.hosts["node01"].bmc.verify_tls) == (verified, True)


@pytest.mark.parametrize("flag", ["", "maybe", "2"])
def test_an_ini_verify_tls_neither_yes_nor_no_is_refused(inventory_copy: Path, flag: str) -> None:
    """An empty or unknown value is refused in one line naming host and key, never read as 'off'."""
    with pytest.raises(InputError, match=r"host node02: provision_bmc_verify_tls: .* is not true or false"):
        load_fleet(_ini_verify_tls(inventory_copy, flag))
