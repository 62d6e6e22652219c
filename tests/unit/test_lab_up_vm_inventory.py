"""`provision lab up --vm`, without a VM: the inventory it writes for a VM node (BMC, SSH endpoint, an empty
known_hosts, the installer URL the os stage reads with no --os-image), and what it refuses before it starts
anything (too many VM nodes, missing qemu/OVMF/xorriso)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr

from provision.bringup.options import BringupOptions
from provision.bringup.stages.os_stage import installer_of
from provision.cli import main
from provision.errors import InputError, LabError
from provision.lab import manager
from provision.lab.bmcsim.config import BmcConfig, SimConfig
from provision.lab.inventory_writer import write_inventory
from provision.lab.state import LabState, NodeState
from provision.lab.vm import lab_up, node
from provision.spec import load_fleet

ROOT = Path(__file__).resolve().parents[2]
URL = "http://127.0.0.1:40123/abcdef/install.iso"


def _written(lab: Path) -> Path:
    lab.mkdir()
    (lab / "ca.pem").write_text("not a real CA\n")
    vm = lab_up.VmLabNode(ssh_port=40022, key_file=lab / "vm" / "ssh" / "id_ed25519",
                          known_hosts=lab / "vm" / "known_hosts", installer_url=URL,
                          host_dir=lab / "vm" / "node01" / "host")  # fmt: skip
    state = LabState(
        lab_dir=lab, pid=1, control_port=1, profile="ml_prod_v4", tree="supermicro", as_captured=False,
        twins=False, vm=True, inventory=lab / "inventory" / "hosts.yml",
        nodes=[NodeState(name="node01", https_port=40443, http_port=40080, vm=vm)],
    )  # fmt: skip
    cfg = SimConfig(lab_dir=lab, nodes=[BmcConfig(name="node01", index=1, password=SecretStr("pw-node01"))],
                    control_token=SecretStr("t"), ready_file=lab / "r", log_file=lab / "l")  # fmt: skip
    return write_inventory(lab, "ml_prod_v4", ROOT / "inventory" / "group_vars", cfg, state)


def test_the_vm_node_s_host_vars_name_its_bmc_its_forwarded_ssh_port_and_the_lab_key(tmp_path: Path) -> None:
    hosts = _written(tmp_path / "lab")
    path = hosts.parent / "host_vars" / "node01.yml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    hv = yaml.safe_load(path.read_text())
    lab = tmp_path / "lab"
    assert hv["provision_bmc_address"] == "https://127.0.0.1:40443"
    assert hv["provision_bmc_password"] == "pw-node01" and hv["provision_bmc_ca_file"] == str(lab / "ca.pem")
    assert (hv["ansible_host"], hv["ansible_port"], hv["ansible_user"]) == ("127.0.0.1", 40022, "root")
    assert hv["ansible_ssh_private_key_file"] == str(lab / "vm" / "ssh" / "id_ed25519")
    assert hv["provision_ssh_known_hosts"] == str(lab / "vm" / "known_hosts")
    assert "StrictHostKeyChecking=yes" in hv["ansible_ssh_common_args"]
    assert not (hosts.parent / "group_vars" / "all" / "lab.yml").exists()  # no twin: no twin role settings


def test_the_os_stage_finds_the_lab_s_installer_with_no_os_image(tmp_path: Path) -> None:
    hosts = _written(tmp_path / "lab")
    fleet = load_fleet(hosts)
    host = fleet.hosts["node01"]
    assert installer_of(host, BringupOptions(inventory=hosts)) == URL
    assert installer_of(host, BringupOptions(inventory=hosts, os_image="http://x/y.iso")) == "http://x/y.iso"
    assert host.ssh is not None and host.ssh.port == 40022
    project = load_fleet(ROOT / "inventory" / "hosts.yml").hosts["node01"]
    assert project.spec.software.os_installer is None  # the copy carries it, the project's specs do not
    assert host.spec.model_copy(update={"software": project.spec.software}) == project.spec.model_copy(
        update={"firmware": host.spec.firmware})  # nothing else of the spec changed


def test_pin_installer_names_a_missing_profile(tmp_path: Path) -> None:
    (tmp_path / "x.yml").write_text("---\nother: 1\n")
    with pytest.raises(LabError, match="no provision_profile_nope"):
        lab_up.pin_installer(tmp_path, "nope", URL)


def test_more_than_one_vm_node_is_refused() -> None:
    with pytest.raises(InputError, match=r"--vm --nodes 2: at most 1 VM node"):
        lab_up.check(2)


def test_missing_vm_tools_are_named_with_the_bootstrap_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(node, "OVMF_CODE", tmp_path / "OVMF_CODE_4M.fd")
    with pytest.raises(LabError) as err:
        manager.up(manager.UpOptions(lab_dir=tmp_path / "lab", nodes=1, vm=True))
    line = str(err.value)
    assert "\n" not in line and "PROVISION_TEST_VM=1 scripts/bootstrap.sh" in line
    for what in ("qemu-system-x86_64", "OVMF", "xorriso"):
        assert what in line
    assert not (tmp_path / "lab").exists()  # refused before anything was made


@pytest.mark.parametrize(("tools", "rc", "says"), [
    (True, 2, "--vm --nodes 2: at most 1 VM node"),
    (False, 1, "PROVISION_TEST_VM=1 scripts/bootstrap.sh"),
])  # fmt: skip
def test_the_cli_refuses_in_one_line_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str], tools: bool, rc: int,
                                                       says: str) -> None:
    if not tools:
        monkeypatch.setenv("PATH", str(tmp_path))
        monkeypatch.setattr(node, "OVMF_CODE", tmp_path / "OVMF_CODE_4M.fd")
    lab = tmp_path / "lab"
    assert main(["lab", "up", "--vm", "--nodes", "2" if tools else "1", "--lab-dir", str(lab)]) == rc
    err = capsys.readouterr().err.strip()
    assert says in " ".join(err.split()) and len(err.splitlines()) == 1, err
    assert not lab.exists()
