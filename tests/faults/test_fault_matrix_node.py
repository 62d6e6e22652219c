"""Fault matrix, node side: node faults (SSH dropped mid-play, a reboot that takes too long, a pinned package
missing from the repository, a scratch drive missing) and BMC faults that reach the verify stage, against the
stages where they apply (preflight, os, configure, verify). One twin, brought up once; cells run in order and
each leaves the node as it found it (or says it could not). Writes its section of docs/fault-matrix.md.

Campaign waves touch only BMCs: node faults do not apply to them (see the BMC section for campaign cells).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from provision.journal import Journal
from provision.lab import manager
from provision.remote.ssh import run as ssh_run
from provision.remote.ssh import wait_for_ssh
from provision.spec import load_fleet
from tests.faults.faultkit import (
    FAILED_CLEANLY,
    RECOVERED,
    ROOT,
    Fault,
    FaultLab,
    Row,
    classify,
    injected,
    journal_check,
    one_line,
    run_stages,
    write_section,
)

pytestmark = [pytest.mark.lab, pytest.mark.twins, pytest.mark.heavy]
SPEED = 60.0
NODE = "node01"
ROWS: list[Row] = []
CELLS = 18  # rows the section needs: every cell below (4 of them the BMC hardware faults at verify)
BASELINE: dict[str, str] = {}  # stage -> "" when it passes without a fault, else the reason


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultLab]:
    workdir = tmp_path_factory.mktemp("faults-node")
    state = manager.up(manager.UpOptions(lab_dir=workdir / "lab", nodes=1, speed=SPEED,
                                         source_inventory=ROOT / "inventory" / "hosts.yml"))
    try:
        yield FaultLab(state, workdir)
    finally:
        manager.down(workdir / "lab")
    if len(ROWS) == CELLS:
        base = BASELINE.get("verify")
        intro = INTRO + (f" Without any fault, verify {'passes' if not base else 'fails: ' + one_line(base, 400)}"
                         "; cells at verify are judged against that.")
        write_section("node", "Node faults (and BMC faults at verify) x node stages", intro, ROWS)


INTRO = ("One ML-PROD-V4 twin (systemd-nspawn, real sshd/systemd/apt) with its simulated BMC. The node is first "
         "brought up without a fault (preflight to verify). Each cell then runs one stage in-process through the "
         "bring-up engine with the fault, and again after the fault is cleared. `SSH dropped mid-play`: the "
         "twin's sshd session processes are killed from the host while the configure stage applies. `reboot "
         "that takes too long`: the host is powered off through its BMC and the stage's SSH wait is shorter than "
         "the outage. `pinned package missing`: the pinned nvidia-driver version is removed from the lab's apt "
         "repository index. `drive missing`: the twin's last scratch NVMe drive disappears. `containers see no GPU`: "
         "the twin's docker and apptainer containers run, but nvidia-smi -L inside them finds no GPU "
         "(container_gpu_hidden).")


def _host(lab: FaultLab) -> object:
    return load_fleet(lab.inventory).select([NODE])[0]


def _power(lab: FaultLab, reset_type: str) -> None:
    hv = lab.host_vars(NODE)
    resp = requests.post(f"{hv['provision_bmc_address']}/redfish/v1/Systems/1/Actions/ComputerSystem.Reset",
                         json={"ResetType": reset_type}, verify=hv["provision_bmc_ca_file"], timeout=30,
                         auth=(hv["provision_bmc_username"], hv["provision_bmc_password"]))
    assert resp.status_code < 300, resp.text


def _ssh_up(lab: FaultLab) -> None:
    wait_for_ssh(_host(lab), timeout=240, interval=1.0)  # type: ignore[arg-type]


def _twin_netns_inode(lab: FaultLab) -> int:
    twin = lab.state.nodes[0].ssh
    assert twin is not None
    slot = int(twin.address.split(".")[2])
    return os.stat(f"/run/netns/pl-node{slot:02d}").st_ino


def _session_sshds(lab: FaultLab) -> list[int]:
    """The twin's per-connection sshd processes (not its listener), seen from the host."""
    inode = _twin_netns_inode(lab)
    procs: dict[int, tuple[str, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.stat(entry / "ns" / "net").st_ino != inode:
                continue
            comm = (entry / "comm").read_text().strip()
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        procs[int(entry.name)] = (comm, ppid)
    return [pid for pid, (comm, ppid) in procs.items() if comm == "sshd" and procs.get(ppid, ("", 0))[0] == "sshd"]


def _drop_ssh_when_applying(lab: FaultLab, stop: threading.Event) -> Callable[[], None]:
    """Wait for the configure stage's apply (its journaled intent), then kill the twin's SSH sessions."""
    def act() -> None:
        while not stop.is_set():
            with Journal(lab.journal_path) as jr:
                applying = any(a.action == "ansible" and a.open for a in jr.actions(NODE, "configure"))
            if applying:  # for 8 s, every session the play opens is cut (a task is in flight at some point)
                time.sleep(2)
                until = time.monotonic() + 8
                while time.monotonic() < until and not stop.is_set():
                    for pid in _session_sshds(lab):
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(pid, signal.SIGKILL)  # processes of the twin this test started
                    time.sleep(0.3)
                return
            time.sleep(0.2)
    return act


def _repo_packages(lab: FaultLab) -> Path:
    return lab.lab_dir / "repo" / "Packages"


def _remove_from_repo(lab: FaultLab, package: str, version: str) -> tuple[str, Path]:
    """Drop one package version from the lab repo: its index stanza and its .deb (renamed aside). The index
    is written as a new file and the .deb renamed, because both are hard links into a shared cache."""
    path = _repo_packages(lab)
    original = path.read_text()
    stanzas = original.split("\n\n")
    gone = [s for s in stanzas if f"Package: {package}\n" in s + "\n" and f"Version: {version}\n" in s + "\n"]
    assert len(gone) == 1, f"{package} {version} not in {path}"
    deb = path.parent / next(ln.split(": ", 1)[1] for ln in gone[0].splitlines() if ln.startswith("Filename: "))
    os.rename(deb, deb.with_name(deb.name + ".hidden"))
    tmp = path.with_suffix(".new")
    tmp.write_text("\n\n".join(s for s in stanzas if s not in gone))
    os.replace(tmp, path)
    return original, deb


def _restore_repo(lab: FaultLab, original: str, deb: Path) -> None:
    os.rename(deb.with_name(deb.name + ".hidden"), deb)
    tmp = _repo_packages(lab).with_suffix(".new")
    tmp.write_text(original)
    os.replace(tmp, _repo_packages(lab))


def _judge(lab: FaultLab, stage: str, run: object) -> tuple[str, str]:
    """(outcome, note). A stage that already fails without any fault (see BASELINE) and fails in exactly the
    same way with it is judged recovered from the fault: the fault added nothing."""
    outcome = classify(run, lab.secrets())  # type: ignore[arg-type]
    base = BASELINE.get(stage)
    if base and outcome == FAILED_CLEANLY and run.error == base:  # type: ignore[attr-defined]
        return RECOVERED, f"same result as without the fault: {stage} fails without any fault"
    return outcome, ""


def _record(lab: FaultLab, fault: str, stage: str, run: object, rerun: str, note: str = "") -> str:
    outcome, judged = _judge(lab, stage, run)
    reason = one_line(run.error) if run.error else f"({run.outcome})"  # type: ignore[attr-defined]
    jc = journal_check(lab.journal_path, NODE)
    ROWS.append(Row(fault, stage, outcome, reason, lab.end_state(NODE), jc.summary, rerun, "",
                    "; ".join(n for n in (note, judged) if n)))
    assert jc.whole, f"journal has open rows: {jc.summary}"
    return outcome


def _rerun(lab: FaultLab, stage: str, **kw: float) -> str:
    again = run_stages(lab, NODE, [stage], SPEED, **kw)
    outcome, judged = _judge(lab, stage, again)
    if outcome == RECOVERED:
        return "recovered on rerun" + (" (as without the fault)" if judged else "")
    return f"still failing: {one_line(again.error, 100)}"


def _expect(stage: str, outcome: str, expected: str, rerun: str | None = None) -> None:
    ok = outcome == expected and (rerun is None or rerun.startswith("recovered"))
    if not ok and BASELINE.get(stage):
        pytest.xfail(f"{stage} fails without a fault: {BASELINE[stage]}")
    assert outcome == expected
    if rerun is not None:
        assert rerun.startswith("recovered"), rerun


@dataclass(frozen=True)
class _Pin:
    package: str
    version: str


def _pinned_driver(lab: FaultLab) -> _Pin:
    spec = load_fleet(lab.inventory).select([NODE])[0].spec
    return _Pin("nvidia-driver", spec.software.nvidia_driver.apt_version)  # the roles' package name


# --- the cells, in order --------------------------------------------------------------------
def test_baseline_bringup(lab: FaultLab) -> None:
    """Preflight to os without a fault; configure and verify are recorded as blockers when they fail."""
    run = run_stages(lab, NODE, ["preflight", "firmware", "bios", "reset", "os"], SPEED, ssh_wait_s=240)
    assert run.outcome in ("applied", "converged"), run.error


def test_pinned_package_missing_at_configure(lab: FaultLab) -> None:
    pin = _pinned_driver(lab)
    original, deb = _remove_from_repo(lab, pin.package, pin.version)
    try:
        run = run_stages(lab, NODE, ["configure"], SPEED)
    finally:
        _restore_repo(lab, original, deb)
    again = run_stages(lab, NODE, ["configure"], SPEED)
    rerun, note = "recovered on rerun", ""
    if classify(again, []) != RECOVERED:
        stale = "not available from the configured apt repositories" in again.error
        rerun = f"still failing: {one_line(again.error, 90)}"
        # the node's apt lists still say what the repository said during the faulty run
        ssh_run(_host(lab), "apt-get update -qq")  # type: ignore[arg-type]
        third = run_stages(lab, NODE, ["configure"], SPEED)
        rerun += "; after `apt-get update` on the node: " + (
            "recovered" if classify(third, []) == RECOVERED else f"still failing: {one_line(third.error, 90)}")
        if stale:
            note = ("known gap: once the repository is fixed, configure keeps failing until the node's apt lists "
                    "are refreshed (the apt_source role refreshes them at most every apt_source_cache_valid_time, "
                    "3600 s)")
        again = third
    BASELINE["configure"] = "" if classify(again, []) == RECOVERED else again.error
    outcome = _record(lab, f"pinned package missing ({pin.package} {pin.version})", "configure", run, rerun, note)
    ROWS[-1].outcome = outcome = classify(run, lab.secrets())  # judged on its own: the baseline comes after
    if not BASELINE["configure"]:
        assert pin.package in run.error, run.error
    _expect("configure", outcome, FAILED_CLEANLY, "recovered" if "recovered" in rerun else rerun)


def test_baseline_verify(lab: FaultLab) -> None:
    run = run_stages(lab, NODE, ["verify"], SPEED)
    BASELINE["verify"] = "" if classify(run, []) == RECOVERED else run.error
    assert classify(run, lab.secrets()) in (RECOVERED, FAILED_CLEANLY), run.error


def test_ssh_dropped_mid_play_at_configure(lab: FaultLab) -> None:
    # make the play change something again (a pin file the roles manage), so that configure applies
    ssh_run(_host(lab), "rm -f /etc/apt/preferences.d/*")  # type: ignore[arg-type]
    stop = threading.Event()
    killer = threading.Thread(target=_drop_ssh_when_applying(lab, stop), daemon=True)
    killer.start()
    try:
        run = run_stages(lab, NODE, ["configure"], SPEED)
    finally:
        stop.set()
        killer.join(10)
    failed = classify(run, lab.secrets()) == FAILED_CLEANLY
    rerun = _rerun(lab, "configure") if failed else ""
    note = "" if failed else "Ansible opened new connections for the next tasks and the play finished"
    outcome = _record(lab, "SSH dropped mid-play (twin's sshd sessions killed for 8 s)", "configure", run, rerun,
                      note)
    # either is a correct end: the play rides over the drop, or it stops cleanly and a rerun converges
    _expect("configure", outcome, FAILED_CLEANLY if failed else RECOVERED, rerun if failed else None)


def test_reboot_too_long_at_os(lab: FaultLab) -> None:
    _power(lab, "ForceOff")
    run = run_stages(lab, NODE, ["os"], SPEED, ssh_wait_s=8)
    _power(lab, "On")
    rerun = _rerun(lab, "os", ssh_wait_s=240)
    outcome = _record(lab, "reboot that takes too long (host off longer than the 8 s SSH wait)", "os", run, rerun)
    _expect("os", outcome, FAILED_CLEANLY, rerun)


def test_node_unreachable_at_verify(lab: FaultLab) -> None:
    _power(lab, "ForceOff")
    time.sleep(2)
    run = run_stages(lab, NODE, ["verify"], SPEED)
    _power(lab, "On")
    _ssh_up(lab)
    rerun = _rerun(lab, "verify")
    outcome = _record(lab, "SSH unreachable (host powered off)", "verify", run, rerun)
    _expect("verify", outcome, FAILED_CLEANLY, rerun)


@pytest.mark.parametrize(("fault", "expected", "note"), [
    (Fault("latency", 150), RECOVERED, ""),
    (Fault("unavailable", 1), FAILED_CLEANLY,
     "the BMC-side checks could not be made: error rows naming why, and the verify stage stops the node on "
     "them as on a failure (never a pass)"),
    (Fault("session-expiry", on="login"), RECOVERED, ""),
], ids=lambda v: v.kind if isinstance(v, Fault) else "")
def test_bmc_fault_at_verify(lab: FaultLab, fault: Fault, expected: str, note: str) -> None:
    with injected(lab.lab_dir, NODE, fault):
        run = run_stages(lab, NODE, ["verify"], SPEED)
    rerun = _rerun(lab, "verify") if expected != RECOVERED else ""
    outcome = _record(lab, fault.describe(), "verify", run, rerun, note)
    if expected == FAILED_CLEANLY:
        assert "could not be made" in run.error and "bmc." in run.error, run.error
    _expect("verify", outcome, expected, rerun or None)


@pytest.mark.parametrize(("fault", "check"), [
    (Fault("inlet-hot", 41), "bmc.inlet"),          # above the spec's max_inlet_c 35
    (Fault("psu-lost"), "bmc.psu_redundancy"),      # 2N with one of two PSUs offline (its group still OK)
    (Fault("fan-failed"), "bmc.fan_redundancy"),    # N+1: the spare fan is spent
    (Fault("dimm-missing"), "bmc.memory_population"),  # a channel of socket 1 one DIMM short
], ids=lambda v: v.kind if isinstance(v, Fault) else "")
def test_bmc_hardware_fault_at_verify(lab: FaultLab, fault: Fault, check: str) -> None:
    """What the BMC reports of the hardware: verify fails on the check that judges it, and passes once cleared."""
    with injected(lab.lab_dir, NODE, fault):
        run = run_stages(lab, NODE, ["verify"], SPEED)
    rerun = _rerun(lab, "verify")
    outcome = _record(lab, fault.describe(), "verify", run, rerun)
    assert "failed" in run.error and check in run.error, run.error
    _expect("verify", outcome, FAILED_CLEANLY, rerun)


@pytest.mark.parametrize(("stage", "expected", "note"), [
    ("preflight", RECOVERED, "the BMC's drive list is the spec's: a drive lost inside the OS is not visible there"),
    ("configure", FAILED_CLEANLY, ""),
    ("verify", FAILED_CLEANLY, ""),
], ids=["preflight", "configure", "verify"])
def test_drive_missing(lab: FaultLab, stage: str, expected: str, note: str) -> None:
    manager.fault(lab.lab_dir, NODE, "scratch_drive_missing", False, None)
    try:
        run = run_stages(lab, NODE, [stage], SPEED)
    finally:
        manager.fault(lab.lab_dir, NODE, "scratch_drive_missing", True, None)
    rerun = _rerun(lab, stage) if expected != RECOVERED else ""
    outcome = _record(lab, "drive missing (last scratch NVMe)", stage, run, rerun, note)
    if expected == FAILED_CLEANLY and not BASELINE.get(stage):
        assert "nvme" in run.error.lower() or "drive" in run.error.lower(), run.error
    _expect(stage, outcome, expected, rerun or None)


@pytest.mark.parametrize(("kind", "label", "check"), [
    ("snapshot_missing", "snapshots missing (none listed)", "checkpoints.snapshot.scratch.hourly"),
    ("snapshot_stale", "snapshots stale (sanoid stopped 50 h ago)", "checkpoints.snapshot.scratch.hourly"),
    ("scrub_failed", "scrub failed (4 errors)", "checkpoints.scrub.errors"),
], ids=["snapshot_missing", "snapshot_stale", "scrub_failed"])
def test_checkpoint_fault_at_verify(lab: FaultLab, kind: str, label: str, check: str) -> None:
    manager.fault(lab.lab_dir, NODE, kind, False, None)
    try:
        run = run_stages(lab, NODE, ["verify"], SPEED)
    finally:
        manager.fault(lab.lab_dir, NODE, kind, True, None)
    rerun = _rerun(lab, "verify")
    outcome = _record(lab, label, "verify", run, rerun)
    if not BASELINE.get("verify"):
        assert check in run.error, run.error
    _expect("verify", outcome, FAILED_CLEANLY, rerun or None)
def test_container_gpu_hidden_at_verify(lab: FaultLab) -> None:
    manager.fault(lab.lab_dir, NODE, "container_gpu_hidden", False, None)
    try:
        run = run_stages(lab, NODE, ["verify"], SPEED)
    finally:
        manager.fault(lab.lab_dir, NODE, "container_gpu_hidden", True, None)
    rerun = _rerun(lab, "verify")
    outcome = _record(lab, "containers see no GPU (docker and apptainer)", "verify", run, rerun)
    if not BASELINE.get("verify"):
        assert "containers.docker.gpus" in run.error and "containers.apptainer.gpus" in run.error, run.error
    _expect("verify", outcome, FAILED_CLEANLY, rerun)
