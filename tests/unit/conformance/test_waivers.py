"""The lab is declared by the inventory, never detected: declared waivers become WAIVED with their reason,
and a node whose inventory does not declare it a lab twin is judged as real hardware, whatever it holds."""

from __future__ import annotations

from pathlib import Path

import pytest

from provision.conformance.model import CheckResult, Level, Outcome
from provision.conformance.node import Reach, verify
from provision.conformance.runner import apply_waivers
from provision.errors import InventoryError
from provision.lab.declaration import (
    NO_MD_WAIVERS,
    STANDIN_TOOLS,
    TWIN_WAIVERS,
    lab_declaration,
    lab_notice,
    lab_waivers,
)
from provision.spec import load_fleet
from provision.spec.fleet import BmcEndpoint, HostEntry, LabDeclaration, SshEndpoint, Waiver
from tests.unit.conformance.helpers import framed, run, spec

MODULES = "@monolithic\nkernel\nprintk\n"
# What a twin's gather returns for the checks it cannot show, plus the marker file and stand-in tools that
# used to make the node call itself a lab node (the lab probe's grep output, the hardware.json marker).
TWIN_FACTS: dict[str, str | tuple[int, str, str]] = {
    "kernel_release": "6.1.0-28-amd64\n6.18.44-fc-v657\n",
    "kernel_modules": MODULES,
    "mdstat": (1, "", "cat: /proc/mdstat: No such file or directory\n"),
    "root_source": "overlay\n",
    "lab_standins": "/usr/bin/nvidia-smi\n/usr/sbin/mdadm\n/var/lib/provision-lab/hardware.json\n",
}
TWIN_CHECKS = {"kernel.uname", "raid.root", "raid.array", "raid.sync", "raid.members"} | {
    f"kernel.module.{m}" for m in ("nvidia", "nvidia_uvm", "nvidia_modeset", "mlx5_core", "mlx5_ib", "ib_uverbs",
                                   "nvidia_peermem", "ib_ipoib", "zfs")}


def declared(proc: Path) -> LabDeclaration:
    return LabDeclaration(lab=True, waivers=tuple(Waiver(pattern=k, reason=v) for k, v in lab_waivers(proc).items()),
                          standins=STANDIN_TOOLS, notice=lab_notice())


def test_undeclared_twin_like_node_is_judged_as_real_hardware() -> None:
    ctx = run(spec(), TWIN_FACTS)
    by = {r.id: r for r in ctx.results}
    assert not any(r.outcome is Outcome.WAIVED for r in ctx.results)
    for check in TWIN_CHECKS:
        assert by[check].outcome in (Outcome.FAIL, Outcome.ERROR), by[check]
    assert by["raid.array"].outcome is Outcome.ERROR and by["kernel.module.zfs"].outcome is Outcome.FAIL


def test_declared_twin_waives_exactly_the_listed_checks_with_their_reasons(tmp_path: Path) -> None:
    lab = declared(tmp_path)  # a lab host without /proc/mdstat
    ctx = run(spec(), TWIN_FACTS, lab=lab)
    waived = {r.id: r for r in ctx.results if r.outcome is Outcome.WAIVED}
    assert set(waived) == TWIN_CHECKS
    assert "without module support" in waived["kernel.module.zfs"].detail
    assert waived["kernel.uname"].found == "6.18.44-fc-v657"  # what was read is kept, beside the reason
    assert TWIN_WAIVERS["raid.root"] in waived["raid.root"].detail
    assert NO_MD_WAIVERS["raid.array"] in waived["raid.array"].detail
    plain = {r.id: r.outcome for r in run(spec(), TWIN_FACTS).results}
    assert {r.id: r.outcome for r in ctx.results if r.id not in TWIN_CHECKS} == {
        i: o for i, o in plain.items() if i not in TWIN_CHECKS}  # nothing else changed


def test_a_lab_host_with_md_presents_mdstat_and_does_not_waive_it(tmp_path: Path) -> None:
    (tmp_path / "mdstat").write_text("Personalities :\nunused devices: <none>\n")
    assert not set(NO_MD_WAIVERS) & set(lab_waivers(tmp_path))
    assert lab_declaration(tmp_path)["provision_lab"] is True


@pytest.mark.parametrize(("pattern", "ids", "hit"), [
    ("kernel.module.*", ["kernel.module.zfs", "kernel.modules", "kernel.release"], {"kernel.module.zfs"}),
    ("raid.root", ["raid.root", "raid.rootfs"], {"raid.root"}),
    ("gpu.?.pcie_gen", ["gpu.3.pcie_gen", "gpu.13.pcie_gen"], {"gpu.3.pcie_gen"}),
])  # fmt: skip
def test_waiver_patterns(pattern: str, ids: list[str], hit: set[str]) -> None:
    results = [CheckResult(node="n", id=i, area="a", description="d", expected="e", found="f",
                           outcome=Outcome.FAIL) for i in ids]
    out = apply_waivers(results, [Waiver(pattern=pattern, reason="because")])
    assert {r.id for r in out if r.outcome is Outcome.WAIVED} == hit
    assert all("because" in r.detail and r.found == "f" for r in out if r.id in hit)


def test_inventory_declaration_reaches_the_report_and_the_verdicts(tmp_path: Path) -> None:
    def entry(name: str, lab: LabDeclaration) -> HostEntry:
        return HostEntry(name=name, profile="ml_prod_v4", groups=(), spec=spec(), ssh=SshEndpoint(host="127.0.0.1"),
                         bmc=BmcEndpoint(address=f"https://{name}.example.net", username="u", password="p"), lab=lab)

    sections = {k: (v if isinstance(v, tuple) else (0, v, "")) for k, v in TWIN_FACTS.items()}
    report = verify([entry("twin01", declared(tmp_path)), entry("real01", LabDeclaration())], Level.FULL,
                    Reach(runner_for=lambda h: lambda node, script: framed(sections)))
    twin, real = report.nodes
    assert twin.lab and not real.lab and twin.standins == STANDIN_TOOLS and real.standins == ()
    assert twin.notice == lab_notice() and real.notice == ""
    assert {r.id for r in twin.waived} == TWIN_CHECKS and not real.waived


def test_loader_reads_the_declaration_typed(inventory_copy: Path) -> None:
    hv = inventory_copy.parent / "host_vars" / "node01.yml"
    hv.write_text(hv.read_text() + "provision_lab: true\nprovision_lab_waivers:\n  kernel.module.*: no modules\n")
    fleet = load_fleet(inventory_copy)
    assert fleet.hosts["node01"].lab == LabDeclaration(lab=True, waivers=(Waiver(pattern="kernel.module.*",
                                                                                  reason="no modules"),))
    assert fleet.hosts["node02"].lab == LabDeclaration()


def test_loader_reads_the_declared_standins_and_refuses_bad_ones(inventory_copy: Path) -> None:
    hv = inventory_copy.parent / "host_vars" / "node01.yml"
    base = hv.read_text()
    hv.write_text(base + "provision_lab: true\nprovision_lab_standins: [nvidia-smi, dcgmi]\n")
    assert load_fleet(inventory_copy).hosts["node01"].lab.standins == ("dcgmi", "nvidia-smi")
    for bad, why in (("provision_lab_standins: [nvidia-smi]\n", "is set but provision_lab is not true"),
                     ("provision_lab: true\nprovision_lab_standins: nvidia-smi\n", "must be a list of tool names")):
        hv.write_text(base + bad)
        with pytest.raises(InventoryError, match=why) as err:
            load_fleet(inventory_copy)
        assert "node01" in str(err.value) and "provision_lab_standins" in str(err.value)


def test_the_lab_inventory_declares_its_twins(tmp_path: Path) -> None:
    """What the lab writes for a twin (lab_host_vars, used by `lab up` and the roles' twin inventory) loads
    back as a typed declaration with every waiver and its reason."""
    import shutil
    from types import SimpleNamespace

    from provision.lab.inventory import write_twin_inventory
    from provision.lab.twins.personality import prepare_node

    repo = Path(__file__).resolve().parents[3]
    shutil.copytree(repo / "firmware", tmp_path / "firmware")
    twins_dir = tmp_path / "twins"
    prepare_node(twins_dir / "node01" / "state", spec(), 1)
    twin = SimpleNamespace(name="node01", address="10.203.1.2", port=22, user="root", key_file=tmp_path / "k",
                           known_hosts=tmp_path / "kh", repo_url="http://10.203.1.1:8080/")
    hosts = write_twin_inventory(tmp_path / "inv", "ml_prod_v4", repo / "inventory" / "group_vars", [twin], twins_dir)
    hv = hosts.parent / "host_vars" / "node01.yml"
    hv.write_text(hv.read_text() + "provision_bmc_address: https://127.0.0.1:8443\n")
    lab = load_fleet(hosts).hosts["node01"].lab
    assert lab.lab and {w.pattern: w.reason for w in lab.waivers} == lab_waivers()
    assert lab.notice == lab_notice() and "nvidia-smi" in lab.notice


def test_loader_reads_the_declared_notice_and_refuses_bad_ones(inventory_copy: Path) -> None:
    hv = inventory_copy.parent / "host_vars" / "node01.yml"
    base = hv.read_text()
    hv.write_text(base + "provision_lab: true\nprovision_lab_notice: twin of rack 7\n")
    assert load_fleet(inventory_copy).hosts["node01"].lab.notice == "twin of rack 7"
    for bad, why in (("provision_lab_notice: twin\n", "is set but provision_lab is not true"),
                     ("provision_lab: true\nprovision_lab_notice: [a]\n", "must be one line of text"),
                     ("provision_lab: true\nprovision_lab_notice: \"a\\nb\"\n", "must be one line of text")):
        hv.write_text(base + bad)
        with pytest.raises(InventoryError, match=why) as err:
            load_fleet(inventory_copy)
        assert "node01" in str(err.value) and "provision_lab_notice" in str(err.value)
