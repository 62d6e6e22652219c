"""Checkpoint protection on a twin: roles/zfs_scratch configures sanoid, the scrub timer and ZED through Ansible;
sanoid (stand-in) takes the first snapshots; verify's checkpoints area passes; each checkpoint fault fails it.

One ML-PROD-V4 twin for the module, always torn down. Real ZFS, sanoid and ZED were never run here: the twin's
zfs/zpool/sanoid/zed are the lab's stand-ins (provision/lab/twins/personality)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from provision.ansible import PlayResult, RunOptions, run_playbook
from provision.conformance.checks.checkpoints import CheckpointSummary, summarize, summary_probes
from provision.conformance.facts import gather
from provision.conformance.model import Level, Outcome
from provision.conformance.node import verify_node
from provision.conformance.runner import ssh_runner_for
from provision.lab import twins
from provision.lab.inventory import write_twin_inventory
from provision.lab.twins.models import TwinInfo, TwinRequest
from provision.lab.twins.ssh import client_argv
from provision.lab.twins.state import twins_dir
from provision.spec import NodeSpec, load_fleet
from provision.spec.fleet import BmcEndpoint, HostEntry, SshEndpoint

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "ml_prod_v4"
NODE = "node01"

pytestmark = [
    pytest.mark.lab,
    pytest.mark.twins,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"), reason="node twins need root"),
]


@dataclass
class Lab:
    lab_dir: Path
    info: TwinInfo
    spec: NodeSpec
    first: PlayResult
    second: PlayResult

    def ssh(self, command: str) -> str:
        argv = [*client_argv(self.info.key_file, self.info.known_hosts, self.info.address, self.info.port), command]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, f"{command}: exit {proc.returncode}: {proc.stderr.strip()}"
        return proc.stdout

    def host(self) -> HostEntry:
        ssh = SshEndpoint(host=self.info.address, port=self.info.port, user=self.info.user,
                          key_file=self.info.key_file, known_hosts=self.info.known_hosts)
        bmc = BmcEndpoint(address="https://127.0.0.1:9", username="unused", password="unused")
        return HostEntry(name=NODE, profile=PROFILE, groups=(PROFILE,), spec=self.spec, bmc=bmc, ssh=ssh)

    def summary(self) -> CheckpointSummary | None:
        """What `provision checkpoints` lists (the same probes and summary)."""
        host = self.host()
        return summarize(NODE, self.spec, gather(NODE, summary_probes(self.spec), ssh_runner_for(Level.FULL)(host)))

    def checkpoints(self) -> dict[str, Outcome]:
        report = verify_node(self.host(), Level.FULL)
        assert report.error is None, report.error
        return {r.id: r.outcome for r in report.results if r.area == "checkpoints"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab_dir = tmp_path_factory.mktemp("checkpoints-lab")
    fleet = load_fleet(ROOT / "inventory" / "hosts.yml")
    try:
        (info,) = twins.up(lab_dir, [TwinRequest(name=NODE, index=1, profile=PROFILE)],
                           lambda profile: fleet.profiles[profile])
        inventory = write_twin_inventory(lab_dir / "inventory", PROFILE, ROOT / "inventory" / "group_vars", [info],
                                         twins_dir(lab_dir))
        # The storage playbook (boot mirror + scratch pool); the base role, which adds the lab's apt source, is not
        # under test: the source is written by hand. No --tags: apt_pin's included tasks carry no tag of their own.
        options = RunOptions(playbook="storage.yml", inventory=inventory)
        first = second = PlayResult(status="none", rc=-1)
        lab = Lab(lab_dir, info, fleet.profiles[PROFILE], first, second)
        lab.ssh(f"echo 'deb [trusted=yes] {info.repo_url} ./' > /etc/apt/sources.list.d/provision-lab.list && "
                "apt-get -qq update")
        lab.first = run_playbook(options)
        lab.second = run_playbook(options)
        yield lab
    finally:
        twins.down(lab_dir)


def test_role_configures_sanoid_scrub_timer_and_zed(lab: Lab) -> None:
    assert lab.first.ok and lab.second.ok
    assert lab.second.changed_total == 0, [c.model_dump() for c in lab.second.changes]
    conf = lab.ssh("cat /etc/sanoid/sanoid.conf")
    assert "[scratch]\nuse_template = provision\nrecursive = yes" in conf and "hourly = 24\n" in conf
    assert "OnCalendar=monthly" in lab.ssh("cat /etc/systemd/system/provision-zfs-scrub@.timer")
    zed = lab.ssh("cat /etc/zfs/zed.d/zed.rc")
    assert 'ZED_EMAIL_ADDR="storage-alerts@example.net"' in zed and "ZED_NOTIFY_VERBOSE=0" in zed
    states = lab.ssh("systemctl is-active sanoid.timer provision-zfs-scrub@scratch.timer zfs-zed.service").split()
    assert states == ["active"] * 3
    assert lab.ssh("zfs get -H -o value org.debian:periodic-scrub scratch").strip() == "disable"
    # the handler took the first snapshots at once (not at the timer's next quarter hour)
    names = lab.ssh("zfs list -H -t snapshot -o name -r scratch").split()
    assert sorted(n.rsplit("_", 1)[1] for n in names) == ["daily", "hourly", "weekly"]


def test_verify_passes_then_each_fault_fails_it(lab: Lab) -> None:
    never = lab.checkpoints()
    assert never["checkpoints.scrub.age"] is Outcome.WARN  # never scrubbed: a warning, never a pass
    lab.ssh("systemctl start provision-zfs-scrub@scratch.service")  # what the timer starts
    healthy = lab.checkpoints()
    assert {k for k, v in healthy.items() if v in (Outcome.FAIL, Outcome.ERROR)} == set(), healthy
    assert healthy["checkpoints.scrub.age"] is Outcome.PASS and healthy["checkpoints.scrub.errors"] is Outcome.PASS
    assert len([k for k in healthy if k.startswith("checkpoints.snapshot.")]) == 3
    expected = {
        "snapshot_missing": {f"checkpoints.snapshot.scratch.{p}" for p in ("hourly", "daily", "weekly")},
        "snapshot_stale": {"checkpoints.snapshot.scratch.hourly", "checkpoints.snapshot.scratch.daily"},
        "scrub_failed": {"checkpoints.scrub.errors"},
    }
    for kind, failing in expected.items():
        twins.fault(lab.lab_dir, NODE, kind, clear=False)
        try:
            got = lab.checkpoints()
            assert {k for k, v in got.items() if v is Outcome.FAIL} == failing, (kind, got)
        finally:
            twins.fault(lab.lab_dir, NODE, kind, clear=True)
    assert {k for k, v in lab.checkpoints().items() if v is Outcome.FAIL} == set()


def test_sanoid_timer_unit_and_checkpoints_listing(lab: Lab) -> None:
    lab.ssh("systemctl start sanoid.service")  # nothing due again: no new snapshot
    summary = lab.summary()
    assert summary is not None and summary.error is None
    assert len(summary.snapshots) == 3 and all(r.age_s < 3600 for r in summary.snapshots)
    assert summary.scrub is not None and summary.scrub.errors == 0
    twins.fault(lab.lab_dir, NODE, "snapshot_missing", clear=False)
    try:
        gone = lab.summary()
        assert gone is not None and gone.snapshots == ()
    finally:
        twins.fault(lab.lab_dir, NODE, "snapshot_missing", clear=True)
