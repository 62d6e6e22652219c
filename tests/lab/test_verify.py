"""`provision verify` against a lab twin (real sshd/systemd, stand-in hardware tools) and a simulated BMC.

One ML-PROD-V4 twin is brought up and converged MINIMALLY by tests/lab/verify_lab.py (pinned
stand-in packages + holds + services + zpool create; not the Ansible roles), then:
- a converged twin passes every node-side check (>= 80), through the real CLI with all reports (exit 0;
  what the lab cannot present is WAIVED with the reason, never passed);
- each twin fault fails exactly the checks it should and no other (FAIL, or ERROR where the fact is
  gone), and clearing it restores a pass;
- the testinfra path (tests/testinfra) gives the same outcome per check as `provision verify` on the twin;
- the BMC-side checks read the simulated BMC: BIOS checks flip from fail to pass after
  `provision bios apply`; the seed's internal ambient (37 C) is a WARNING; an unreachable BMC or a wrong
  password makes them ERROR rows and `provision verify` exits 3, never passed.
- the twin's BMC from the factory (a factory BMC-only lab, the inventory pointed at it): `bringup --to reset`
  with --insecure once, then `provision verify` with no --insecure exits 0 over TLS checked against the site
  CA, and exits 3 with the factory certificate in the CA file.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from provision.conformance.bmc_source import OwnSession, check_bmc
from provision.conformance.checks._base import Context
from provision.conformance.facts import NodeFacts
from provision.conformance.model import CheckResult, Level, NodeReport, Outcome
from provision.conformance.node import verify
from provision.lab import manager, twins
from provision.lab.twins.models import TwinInfo
from provision.spec import load_fleet
from tests.lab.verify_lab import ROOT, converge, project_spec, ssh, verify_lab
from tests.reportcheck import check_json_report, check_junit, check_metrics

pytestmark = [
    pytest.mark.lab,
    pytest.mark.twins,
    pytest.mark.skipif(os.geteuid() != 0, reason="node twins need root"),
]

NODE = "node01"
HOST_MD = Path("/proc/mdstat").exists()
GPUS = range(8)
# Which part each fault hits on an ML-PROD-V4 twin (provision/lab/twins/personality/faults.py):
# gpu_missing: GPU 3; nvlink_down: GPU 1 link 5; ib_port_down: the last IB HCA (mlx5_1); ib_port_slow: the
# first (mlx5_0) at half rate; boot_mirror_degraded: the 2nd md0 member; scratch_drive_missing: the last scratch
# drive; nvme_wearing_out: scratch drive 4 of 8 = nvme6n1 (nvme0n1/nvme1n1 are the boot pair).
FM = {"fabric.service", "services.nvidia-fabricmanager"} | {f"fabric.{i}.state" for i in GPUS}
EXPECTED: dict[str, set[str]] = {
    "gpu_missing": {"gpu.count"},
    "nvlink_down": {"gpu.1.nvlink"},
    "fabric_manager_failed": FM,
    # a Down port has no negotiated rate: its rate check could not be made (ERROR), never passed
    "ib_port_down": {"infiniband.mlx5_1/1.state", "infiniband.mlx5_1/1.physical_state", "infiniband.mlx5_1/1.rate"},
    "ib_port_slow": {"infiniband.mlx5_0/1.rate"},
    # A lab host without md cannot present /proc/mdstat: raid.sync/raid.members are then declared waived.
    "boot_mirror_degraded": {"raid.state"} | (set() if not HOST_MD else {"raid.sync", "raid.members"}),
    "scratch_drive_missing": {"nvme.count", "zfs.pool", "zfs.devices"},
    "nvme_wearing_out": {"nvme.nvme6n1.wear", "nvme.nvme6n1.media_errors"},
    # nvme_worn: the first scratch drive (nvme2n1) written past 1 DWPD x capacity x 5 years (the spec's default)
    "nvme_worn": {"nvme.nvme2n1.wear", "nvme.nvme2n1.endurance"},
    "nvme_spare_low": {"nvme.nvme3n1.spare", "nvme.nvme3n1.critical_warning"},
    # The loaded driver is not the pinned one (the package is): the running-driver checks fail, and the
    # fabric manager refuses to run against a driver of another version, as the real one does.
    "package_wrong_version": {"gpu.driver_version", "fabric.version"} | FM,
    # GPU health (faults.py GPU_HEALTH_TARGET): each hits one GPU no other fault touches.
    "gpu_xid": {"gpu.2.xid"},
    "gpu_row_remap_pending": {"gpu.4.row_remap"},
    "gpu_throttle_thermal": {"gpu.5.clocks", "gpu.5.temperature", "gpu.5.memory_temperature"},
    "gpu_pcie_downtrained": {"gpu.6.pcie_gen"},
    # The last DIMM (P2-DIMMH2) reads as an empty slot: fewer DIMMs, less memory, channel H of socket 1 short.
    "dimm_missing": {"memory.installed", "memory.dimm_count", "memory.population"},
    # Only a measurement shows these (the port stays Active at full rate, SMART stays healthy): nothing at
    # --level full; tests/lab/test_burnin.py shows the burn-in catching them.
    # Docker's and Apptainer's containers run, but nvidia-smi -L inside them lists no GPU.
    "container_gpu_hidden": {"containers.docker.gpus", "containers.apptainer.gpus"},
    "ib_bw_low": set(),
    "nvme_read_slow": set(),
    # The erase faults change what a sanitize does, nothing verify reads: tests/lab/test_clean.py shows them.
    "nvme_sanitize_fails": set(),
    "nvme_no_erase": set(),
    # Checkpoint protection (verify_lab.converge_checkpoints took the first snapshots and one scrub): no snapshot
    # listed; every snapshot 50 h old (weekly still within its 7 days); the last scrub found 4 errors.
    "snapshot_missing": {f"checkpoints.snapshot.scratch.{p}" for p in ("hourly", "daily", "weekly")},
    "snapshot_stale": {"checkpoints.snapshot.scratch.hourly", "checkpoints.snapshot.scratch.daily"},
    "scrub_failed": {"checkpoints.scrub.errors"},
}
GPU_FAULTS = {"gpu_xid": 2, "gpu_row_remap_pending": 4, "gpu_throttle_thermal": 5, "gpu_pcie_downtrained": 6}
# After these faults are cleared the operator restarts the fabric manager (it exited, as the real one does).
RESTART_FM = {"fabric_manager_failed", "package_wrong_version"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path, TwinInfo]]:
    base = tmp_path_factory.mktemp("verify-lab")
    with verify_lab(base, 1) as (inventory, twin_dir, infos):
        converge(infos[NODE], project_spec())
        yield inventory, twin_dir, base / "bmc", infos[NODE]


def node_report(inventory: Path, level: Level = Level.FULL) -> NodeReport:
    (report,) = verify(load_fleet(inventory).select([NODE]), level).nodes
    assert report.error is None, report.error
    return report


def failing(report: NodeReport) -> set[str]:
    """Checks that fail the node: FAIL or ERROR (warned and waived ones do not)."""
    return {r.id for r in report.results if not r.accepted}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from provision.cli import run; run()", *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_converged_twin_passes_every_node_check(lab: tuple[Path, Path, Path, TwinInfo], tmp_path: Path) -> None:
    inventory, *_ = lab
    html, junit, report = tmp_path / "report.html", tmp_path / "report.xml", tmp_path / "report.json"
    prom = tmp_path / "verify.prom"
    proc = cli("verify", NODE, "-i", str(inventory), "--level", "full", "--no-bmc", "--html", str(html),
               "--junit", str(junit), "--json", str(report), "--prom", str(prom))
    data = check_json_report(report)
    check_junit(junit)
    check_metrics(prom)
    assert f'provision_verify_node_ok{{node="{NODE}"}} 1' in prom.read_text()
    node = data["nodes"][0]
    bad = [f"{r['id']}: expected {r['expected']}, found {r['found']}" for r in node["results"]
           if r["outcome"] == "fail"]
    assert proc.returncode == 0, "\n".join(bad) + proc.stderr
    assert node["totals"]["fail"] == 0 and node["totals"]["error"] == 0 and node["totals"]["pass"] >= 80
    waived = [r for r in node["results"] if r["outcome"] == "waived"]
    # --no-bmc waives the BMC side; the lab's inventory waives what a twin cannot present (kernel modules,
    # IPoIB, / on md0, uname -r), each with its reason
    assert waived and all(r["detail"] for r in waived)
    # ... and the NVMe endurance projection waits for a second reading of each drive (or a journal to keep it)
    # (a journal kept from an earlier run hours ago projects instead: the twin writes nothing, so "never")
    assert len([r for r in node["results"] if r["id"].endswith(".endurance_date")]) == 10  # 2 boot + 8 scratch
    projection = [r for r in waived if r["id"].endswith(".endurance_date")]
    assert all("first reading" in r["detail"] or "apart" in r["detail"] or "no journal" in r["detail"]
               for r in projection)
    assert {r["area"] for r in waived
            if not r["detail"].startswith("waived by the inventory") and r not in projection} == {"bmc"}
    assert node["lab"] is True and "nvidia-smi" in node["standins"]
    assert "LAB STAND-IN" in html.read_text() and "<testsuite" in junit.read_text()


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_fault_fails_exactly_its_checks(lab: tuple[Path, Path, Path, TwinInfo], kind: str) -> None:
    inventory, twin_dir, _, info = lab
    assert kind in twins.FAULT_KINDS
    twins.fault(twin_dir, NODE, kind, False)
    try:
        if kind in RESTART_FM:  # the fabric manager notices within its 2 s poll, then exits: wait for that
            ssh(info, "i=0; while systemctl -q is-active nvidia-fabricmanager && [ $i -lt 30 ]; do sleep 0.5; "
                      "i=$((i+1)); done")
        with_fault = node_report(inventory)
    finally:
        twins.fault(twin_dir, NODE, kind, True)
        if kind in RESTART_FM:
            ssh(info, "systemctl reset-failed nvidia-fabricmanager; systemctl restart nvidia-fabricmanager")
    assert failing(with_fault) == EXPECTED[kind]
    assert failing(node_report(inventory)) == set(), f"clearing {kind} did not restore the twin"


def test_declared_twin_exits_0_with_its_waivers_and_each_gpu_fault_exits_1_naming_the_gpu(
    lab: tuple[Path, Path, Path, TwinInfo], tmp_path: Path
) -> None:
    inventory, twin_dir, _, _ = lab
    declared = load_fleet(inventory).select([NODE])[0].lab
    assert declared.lab and declared.waivers  # the lab's inventory declares the twin, with reasons

    def verify_json() -> tuple[int, dict]:  # type: ignore[type-arg]
        out = tmp_path / "report.json"
        proc = cli("verify", NODE, "-i", str(inventory), "--level", "full", "--no-bmc", "--json", str(out))
        return proc.returncode, json.loads(out.read_text())["nodes"][0]

    rc, node = verify_json()
    assert rc == 0, [(r["id"], r["found"]) for r in node["results"] if r["outcome"] in ("fail", "error")]
    waived = {r["id"]: r["detail"] for r in node["results"] if r["outcome"] == "waived"}
    assert {i for i in waived if not i.startswith("bmc.")} and node["lab"] is True
    for check, why in waived.items():
        if check.startswith("bmc."):  # --no-bmc waives the BMC side
            continue
        if check.endswith(".endurance_date"):  # the check's own: a projection needs a second reading
            assert "first reading" in why or "apart" in why or "no journal" in why, (check, why)
            continue
        # the rest is the inventory's list, with its reasons
        assert any(fnmatch.fnmatchcase(check, w.pattern) and w.reason in why for w in declared.waivers), check
    bus = {g: r["description"] for r in node["results"] for g in GPU_FAULTS.values()
           if r["id"] == f"gpu.{g}.model"}
    for kind, gpu in GPU_FAULTS.items():
        twins.fault(twin_dir, NODE, kind, False)
        try:
            rc, node = verify_json()
        finally:
            twins.fault(twin_dir, NODE, kind, True)
        failed = [r for r in node["results"] if r["outcome"] == "fail"]
        assert rc == 1 and failed, kind
        name = bus[gpu].removesuffix(" model")  # "GPU 5 (00000000:A8:00.0)"
        assert all(r["id"].startswith(f"gpu.{gpu}.") and name in r["description"] and name in r["detail"]
                   for r in failed), (kind, failed)


def test_every_twin_fault_kind_has_a_test() -> None:
    assert set(EXPECTED) == set(twins.FAULT_KINDS)


def bmc_results(inventory: Path) -> dict[str, CheckResult]:
    host = load_fleet(inventory).select([NODE])[0]
    ctx = Context(node=NODE, spec=host.spec, facts=NodeFacts(node=NODE, sections={}), level=Level.FULL)
    check_bmc(ctx, host, OwnSession())
    return {r.id: r for r in ctx.results}


def test_bmc_bios_checks_follow_bios_apply(lab: tuple[Path, Path, Path, TwinInfo]) -> None:
    inventory, *_ = lab
    before = bmc_results(inventory)
    diff = cli("bios", "diff", NODE, "-i", str(inventory), "--json")
    assert diff.returncode in (0, 1), diff.stderr
    changes = {c["key"] for c in json.loads(diff.stdout)["plan"]["changes"]}
    failed_bios = {i.removeprefix("bmc.bios.") for i, r in before.items()
                   if i.startswith("bmc.bios.") and r.outcome is Outcome.FAIL}
    assert failed_bios and failed_bios == changes
    assert not [r for r in before.values() if r.outcome is Outcome.ERROR]
    assert cli("bios", "apply", NODE, "-i", str(inventory)).returncode == 0
    after = bmc_results(inventory)
    assert all(r.outcome is Outcome.PASS for i, r in after.items() if i.startswith("bmc.bios.")), after
    # the Supermicro BIOS has no boot-mode attribute: boot_mode is judged from ComputerSystem.Boot, shown
    assert "BootSourceOverrideMode" in after["bmc.bios.boot_mode"].found
    for cid in ("bmc.psu", "bmc.psu_redundancy", "bmc.fans", "bmc.fan_redundancy", "bmc.power_draw", "bmc.inlet",
                "bmc.temperatures", "bmc.memory_population"):
        assert after[cid].outcome is Outcome.PASS, after[cid]
    # the seed's internal ambient ('System Temp' 37 C) is above warn_internal_ambient_c 35: a warning
    temps = after["bmc.internal_ambient"]
    assert temps.outcome is Outcome.WARN and "System Temp 37 C" in temps.found, temps


def _wrong_password(inventory: Path, tmp_path: Path) -> Path:
    """A copy of the lab inventory whose BMC password for NODE is wrong."""
    import shutil

    copy = tmp_path / "inventory"
    shutil.copytree(inventory.parent, copy)
    hv = copy / "host_vars" / f"{NODE}.yml"
    data = yaml.safe_load(hv.read_text())
    data["provision_bmc_password"] = "Wr0ng-pa55word"
    hv.write_text("---\n" + yaml.safe_dump(data, sort_keys=False))
    return copy / inventory.name


@pytest.mark.parametrize(("case", "label"), [("drop", "BMC not reachable"),
                                             ("wrong password", "BMC refused the credentials")])
def test_unreadable_bmc_is_error_rows_and_verify_exits_3(lab: tuple[Path, Path, Path, TwinInfo], tmp_path: Path,
                                                        case: str, label: str) -> None:
    inventory, _, bmc_dir, _ = lab
    if case == "drop":
        manager.fault(bmc_dir, NODE, "drop", False, None)
        try:
            proc = cli("verify", NODE, "-i", str(inventory), "--json", "-")
        finally:
            manager.fault(bmc_dir, NODE, "drop", True, None)
    else:
        proc = cli("verify", NODE, "-i", str(_wrong_password(inventory, tmp_path)), "--json", "-")
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "could not be fully checked" in proc.stderr and "Traceback" not in proc.stderr
    assert "Wr0ng-pa55word" not in proc.stdout + proc.stderr
    (node,) = json.loads(proc.stdout)["nodes"]
    bmc = [r for r in node["results"] if r["area"] == "bmc"]
    assert bmc and all(r["outcome"] == "error" and r["detail"].startswith(label) for r in bmc), bmc[:2]
    assert node["totals"]["fail"] == 0 and node["verdict"] == "error"


def test_burnin_tier_runs_the_twins_stand_ins_and_says_so(lab: tuple[Path, Path, Path, TwinInfo]) -> None:
    inventory, *_ = lab
    report = node_report(inventory, Level.BURNIN)
    burnin = {r.id: r for r in report.results if r.area == "burnin"}
    dcgm = burnin["burnin.dcgm_diag"]
    # the report says the node is a declared lab twin and which tools are stand-ins; the checks never do
    assert dcgm.passed and report.lab and "dcgmi" in report.standins
    # This twin carries no fio, perftest, nccl-tests or MPI: those checks are ERRORs naming why (never passed);
    # the checks that need a peer are WAIVED, this run having one node.
    for cid in ("burnin.nccl_busbw", "burnin.fio_seq_read", "burnin.fio_rand_read", "burnin.nvme.nvme2n1.seq_read"):
        result = burnin[cid]
        assert result.outcome is Outcome.ERROR and "not found" in result.detail, result
    peer = [r for r in burnin.values() if r.id.startswith(("burnin.ib.", "burnin.nccl_multinode."))]
    assert len(peer) == 6 and all(r.outcome is Outcome.WAIVED and "one node" in r.detail for r in peer)


def test_a_twin_with_an_nfs_mount_in_its_spec_fails_verify_not_mounted(lab: tuple[Path, Path, Path, TwinInfo]) -> None:
    """A twin cannot mount NFS (the host kernel has no client): its NFS checks must fail, never pass or vanish."""
    from provision.spec.nfs import NfsMount

    inventory, *_ = lab
    (host,) = load_fleet(inventory).select([NODE])
    mount = NfsMount(name="ckpt", server="10.203.1.1", export="/export/ckpt", mountpoint="/mnt/ckpt",
                     options="vers=4.2,hard,nconnect=8", shared=True)
    host = host.model_copy(update={"spec": host.spec.model_copy(update={"nfs_mounts": (mount,)})})
    (report,) = verify([host], Level.QUICK).nodes
    nfs = {r.id: r for r in report.results if r.area == "nfs"}
    assert nfs["nfs.ckpt.mounted"].outcome is Outcome.FAIL and nfs["nfs.ckpt.mounted"].found == "not mounted"
    assert {nfs[f"nfs.ckpt.{k}"].outcome for k in ("options", "free", "consistency")} == {Outcome.ERROR}
    assert nfs["nfs.ckpt.cross_node"].outcome is Outcome.WAIVED and "only node01" in nfs["nfs.ckpt.cross_node"].detail
    assert "nfs.ckpt.mounted" in failing(report)


# The testinfra path (tests/testinfra) against the same twin, next to `provision verify`: a converged twin, a
# fault that fails checks (FAIL, and ERROR where the port's rate is gone), and a GPU fault.
TESTINFRA_CASES = [None, "ib_port_down", "gpu_xid"]


@pytest.mark.parametrize("kind", TESTINFRA_CASES, ids=lambda k: k or "converged")
def test_testinfra_path_gives_the_same_outcome_per_check_as_verify(
    lab: tuple[Path, Path, Path, TwinInfo], tmp_path: Path, kind: str | None
) -> None:
    from tests.lab.testinfra_lab import VERIFY_ONLY, run_testinfra, verify_only

    inventory, twin_dir, _, info = lab
    report = tmp_path / "report.json"
    if kind is not None:
        twins.fault(twin_dir, NODE, kind, False)
    try:
        proc = cli("verify", NODE, "-i", str(inventory), "--level", "full", "--no-bmc", "--json", str(report))
        ti = run_testinfra(inventory, info, tmp_path)
    finally:
        if kind is not None:
            twins.fault(twin_dir, NODE, kind, True)
    node = json.loads(report.read_text())["nodes"][0]
    by_verify = {r["id"]: r["outcome"] for r in node["results"]}
    areas = {r["id"]: r["area"] for r in node["results"]}

    # The same checks on both paths, but for the listed exceptions (each still present on verify's side)
    only_verify = {i for i in by_verify if i not in ti.checks}
    assert set(ti.checks) - set(by_verify) == set(), "checks testinfra has and verify has not"
    assert {i for i in only_verify if not verify_only(i)} == set(), "checks verify has and testinfra has not"
    assert {i for i in ti.checks if verify_only(i)} == set(), "an exception that testinfra does check"
    assert all(any(fnmatch.fnmatchcase(i, p) for i in only_verify) for p in VERIFY_ONLY), "a stale exception"
    # ... each with the same outcome
    differ = {i: (o, ti.checks[i]) for i, o in by_verify.items() if i in ti.checks and ti.checks[i] != o}
    assert not differ, differ
    assert "waived" in ti.checks.values() and "pass" in ti.checks.values()

    # A testinfra test (one per area) fails exactly when verify has an unaccepted check of that area
    failing_verify = {i for i, o in by_verify.items() if o in ("fail", "error")}
    failing_areas = {areas[i] for i in failing_verify}
    assert {a for a, ok in ti.areas.items() if not ok} == failing_areas, ti.output[-3000:]
    assert set(ti.areas) >= {areas[i] for i in ti.checks}
    if kind is None:
        assert proc.returncode == 0 and ti.returncode == 0, proc.stderr[-2000:] + ti.output[-3000:]
        assert failing_verify == set()
    else:
        assert proc.returncode == 1 and ti.returncode == 1, proc.stderr[-2000:] + ti.output[-3000:]
        assert failing_verify == EXPECTED[kind]
    if kind == "ib_port_down":  # a port with no rate: the rate could not be checked on either path
        assert ti.checks["infiniband.mlx5_1/1.rate"] == "error"
    if kind in GPU_FAULTS:
        assert failing_areas == {"gpu"} and all(i.startswith(f"gpu.{GPU_FAULTS[kind]}.") for i in failing_verify)


def test_factory_bmc_brought_up_then_provision_verify_passes_over_the_site_ca(
    lab: tuple[Path, Path, Path, TwinInfo], lab_factory: Any, tmp_path: Path
) -> None:
    """Issue 39's last step, through the real CLI: this module's converged twin, its BMC now one from the factory
    (PasswordChangeRequired, a self-signed certificate; a BMC-only lab of its own, the twin's inventory pointed at
    it). `bringup --to reset` with --insecure once (the factory certificate) rotates the password, makes the site
    account, installs the site certificate and sets NTP; then `provision verify` with no --insecure exits 0, node
    side and BMC side, the BMC read over TLS checked against the site CA; the same verify with the site CA file
    holding the factory certificate exits 3, every BMC row a TLS error (the certificate is checked, not skipped)."""
    import shutil

    from tests.unit.bringup.bmcfake import key_pem, make_ca, pem

    inventory, *_ = lab
    with lab_factory(tmp_path / "factory", nodes=1, factory=True, speed=600.0,
                     source_inventory=ROOT / "inventory" / "hosts.yml") as factory:
        inv = tmp_path / "inventory"
        shutil.copytree(inventory.parent, inv)
        hv_file = inv / "host_vars" / f"{NODE}.yml"
        hv = yaml.safe_load(hv_file.read_text())
        bmc = factory.host_vars(NODE)
        hv.update({k: v for k, v in bmc.items() if k.startswith(("provision_bmc_", "provision_lab_bmc_"))})
        hv.pop("provision_bmc_ca_file", None)  # the site CA's, once the bmc: section names it
        ca, key = make_ca("lab site CA")
        (tmp_path / "ca.pem").write_text(pem(ca))
        (tmp_path / "ca.key").write_bytes(key_pem(key))
        (tmp_path / "admin.pw").write_text("Rotated-adm1n-pw\n")
        os.chmod(tmp_path / "admin.pw", 0o600)
        site_pw = "Site-prov1sion-pw"
        hv.update({
            "provision_bmc_username": "provision", "provision_bmc_password": site_pw,
            "provision_bmc_setup": {
                "initial": {"user": bmc["provision_bmc_username"], "password": {"env": "LAB_FACTORY_PW"},
                            "rotate_to": {"file": str(tmp_path / "admin.pw")}},
                "accounts": [{"user": "provision", "role": "Administrator", "password": {"inventory": True}}],
                "certificate": {"ca_cert": str(tmp_path / "ca.pem"), "ca_key": str(tmp_path / "ca.key"),
                                "sans": ["localhost"]},
                "ntp": ["192.0.2.10"], "hostname": "{node}-bmc"}})
        hv_file.write_text("---\n" + yaml.safe_dump(hv, sort_keys=False))
        hv_file.chmod(0o600)
        env = {**os.environ, "LAB_FACTORY_PW": bmc["provision_bmc_password"],
               "PROVISION_STATE_DIR": str(tmp_path / "state")}  # one journal: bring-up's, verify's SEL since

        def run(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-c", "from provision.cli import run; run()", *args, "-i",
                                   str(inv / inventory.name)], capture_output=True, text=True, timeout=300,
                                  cwd=ROOT, env=env, check=False)

        up = run("bringup", NODE, "--to", "reset", "--log-dir", str(tmp_path / "logs"), "--json",
                 "--poll-seconds", "0.2", "--insecure")  # the factory's self-signed certificate: the one run
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-2000:]
        [node] = json.loads(up.stdout)["nodes"]
        done = {s["stage"]: (s["outcome"], " / ".join(s["actions"])) for s in node["stages"]}
        assert done["bmc-password"][0] == "applied" and "rotate-password account admin" in done["bmc-password"][1]
        assert done["bmc-accounts"][0] == "applied" and "create-account account provision" in done["bmc-accounts"][1]
        assert done["bmc"][0] == "applied" and "set-ntp" in done["bmc"][1] and "replace-certificate" in done["bmc"][1]

        checked = run("verify", NODE, "--level", "full", "--json", "-")  # no --insecure
        assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
        assert "insecure" not in checked.stderr.lower()
        [node] = json.loads(checked.stdout)["nodes"]
        rows = {r["id"]: r for r in node["results"]}
        bmc_rows = {i: r for i, r in rows.items() if r["area"] == "bmc"}
        assert len(bmc_rows) >= 10 and not [r for r in bmc_rows.values() if r["outcome"] in ("fail", "error", "waived")]
        assert {"bmc.platform", "bmc.memory_population"} <= {i for i, r in bmc_rows.items() if r["outcome"] == "pass"}
        assert len([r for i, r in rows.items() if i not in bmc_rows and r["outcome"] == "pass"]) >= 80
        assert node["totals"]["fail"] == 0 and node["totals"]["error"] == 0

        # ... and TLS is checked: the same file holding the factory certificate (no longer served) refuses the BMC
        shutil.copyfile(bmc["provision_lab_bmc_factory_cert_file"], tmp_path / "ca.pem")
        refused = run("verify", NODE, "--level", "full", "--json", "-")
        assert refused.returncode == 3, refused.stdout[-3000:] + refused.stderr[-2000:]
        [node] = json.loads(refused.stdout)["nodes"]
        bmc_rows = {r["id"]: r for r in node["results"] if r["area"] == "bmc"}
        assert bmc_rows and all(r["outcome"] == "error" and ("certificate" in r["detail"] or "TLS" in r["detail"])
                                for r in bmc_rows.values()), list(bmc_rows.values())[:2]
        for secret in (site_pw, "Rotated-adm1n-pw", bmc["provision_bmc_password"]):
            assert secret not in up.stdout + up.stderr + checked.stdout + checked.stderr + refused.stderr
