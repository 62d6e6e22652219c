"""`provision netboot up --write-only` from an inventory, and its refusals: one line, exit 2, nothing written
or started; `down` removes what up wrote; the loader refuses a method it does not know."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from provision.cli import main
from provision.netboot import service
from tests.conftest import EXAMPLE_INVENTORY

ARGS = ["--interface", "pv0", "--network", "10.77.0.0/24", "--range", "10.77.0.100-10.77.0.150"]


def inventory(tmp: Path, host_vars: dict[str, str]) -> Path:
    inv = tmp / "inv"
    shutil.copytree(EXAMPLE_INVENTORY, inv)
    (tmp / "firmware").symlink_to(EXAMPLE_INVENTORY.parent / "firmware")  # the profiles' images, ../firmware
    for host, extra in host_vars.items():
        path = inv / "host_vars" / f"{host}.yml"
        path.write_text(path.read_text() + extra)
    return inv / "hosts.yml"


PXE1 = "provision_os_install_method: pxe\nprovision_provisioning_mac: 52-54-00-00-00-01\n"
PXE2 = "provision_os_install_method: pxe\nprovision_provisioning_mac: '52:54:00:00:00:02'\n"


def test_write_only_renders_one_entry_per_network_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = inventory(tmp_path, {"node01": PXE1, "node02": PXE2})
    loader = tmp_path / "ipxe.efi"
    loader.write_bytes(b"MZ loader")
    d = tmp_path / "nb"
    assert main(["netboot", "up", "-i", str(inv), *ARGS, "--loader", str(loader), "--dir", str(d),
                 "--write-only"]) == 0
    out = capsys.readouterr().out
    assert "2 node(s) [node01 52:54:00:00:00:01, node02 52:54:00:00:00:02]; files only" in out
    # only the network-install nodes: node03..08 install from virtual media
    assert (d / "hosts").read_text() == "52:54:00:00:00:01,set:pv-node01\n52:54:00:00:00:02,set:pv-node02\n"
    assert (d / "tftp" / "ipxe.efi").read_bytes() == b"MZ loader"
    assert "interface=pv0" in (d / "dnsmasq.conf").read_text()
    assert service.running_pid(d) is None
    assert main(["netboot", "status", "--dir", str(d), "-o", "table"]) == 0
    assert "dnsmasq not running (written only); nodes: pv-node01, pv-node02" in capsys.readouterr().out
    assert main(["netboot", "status", "--dir", str(d)]) == 0  # in a pipe: a field per line, tab-separated
    assert capsys.readouterr().out.splitlines() == [f"directory\t{d}", "written\tyes", "dnsmasq_pid\t-",
                                                    "nodes\tpv-node01,pv-node02", "leases\t-", "installing\t-"]
    assert main(["netboot", "status", "--dir", str(d), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["nodes"] == ["pv-node01", "pv-node02"]
    assert main(["netboot", "down", "--dir", str(d)]) == 0
    assert not d.exists()


@pytest.mark.parametrize(("host_vars", "extra", "words"), [
    ({"node01": PXE1, "node02": PXE2.replace(":02'", ":01'")}, [],
     "netboot: MAC 52:54:00:00:00:01 given twice: node01 and node02"),
    ({"node01": PXE1}, ["--site-range", "10.77.0.96/28"], "netboot: range 10.77.0.100-10.77.0.150 overlaps the "
                                                          "site's 10.77.0.96/28"),
    ({}, [], "no selected host installs over the network"),
    ({"node01": PXE1}, ["--range", "10.77.0.100"], "--range '10.77.0.100': not FIRST-LAST"),
    ({"node01": "provision_os_install_method: floppy\n"}, [], "node01: provision_os_install_method: 'floppy' is not"),
    ({"node01": "provision_provisioning_mac: 'aa:bb'\n"}, [], "node01: provision_provisioning_mac: 'aa:bb' is not a MAC"),
    # YAML 1.1 reads an unquoted all-digit MAC as a base-60 number: refused with the hint, never used
    ({"node01": "provision_provisioning_mac: 52:54:00:00:00:01\n"}, [], "is not a MAC address (six hex pairs) "
                                                                           "(YAML read it as a number: quote it)"),
])
def test_refused_in_one_line_before_anything_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        host_vars: dict[str, str], extra: list[str],
                                                        words: str) -> None:
    inv = inventory(tmp_path, host_vars)
    d = tmp_path / "nb"
    assert main(["netboot", "up", "-i", str(inv), *ARGS, *extra, "--dir", str(d), "--write-only"]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert not d.exists()


def test_dnsmasq_missing_is_refused_before_anything_is_written(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(service, "dnsmasq_binary", lambda: None)
    inv = inventory(tmp_path, {"node01": PXE1})
    loader = tmp_path / "ipxe.efi"
    loader.write_bytes(b"MZ")
    d = tmp_path / "nb"
    assert main(["netboot", "up", "-i", str(inv), *ARGS, "--loader", str(loader), "--dir", str(d)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("netboot: dnsmasq is not installed (apt-get install dnsmasq-base), or use --write-only "
                        "and run it yourself")
    assert not d.exists()


def test_a_network_method_needs_a_kernel_where_the_profile_names_an_installer(tmp_path: Path,
                                                                             capsys: pytest.CaptureFixture[str]
                                                                             ) -> None:
    inv = inventory(tmp_path, {"node01": PXE1})
    profile = inv.parent / "group_vars" / "all" / "profile_ml_prod_v4.yml"
    text = profile.read_text()
    assert "  software:\n" in text
    profile.write_text(text.replace("  software:\n", "  software:\n    os_installer:\n"
                                                     "      url: http://images.example/os.iso\n", 1))
    assert main(["netboot", "up", "-i", str(inv), *ARGS, "--dir", str(tmp_path / "nb"), "--write-only"]) == 2
    assert "provision_os_install_method: pxe boots a kernel and an initrd, and its profile's " \
           "software.os_installer names none" in capsys.readouterr().err
