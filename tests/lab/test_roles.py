"""The Ansible roles against node twins (needs root): site.yml converges, a second run changes nothing,
pins hold, and the failure cases fail with a message naming the problem and change nothing.

Twins come up once for the module (PROVISION_ROLES_TWINS, default 2; the issue's proof uses 4) and
always go down at the end, even on failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from provision.ansible import PlayResult, RunOptions, run_playbook
from provision.ansible.runner import PlayFailed
from provision.lab import twins
from provision.lab.inventory import scratch_devices, write_twin_inventory
from provision.lab.twins.models import TwinInfo, TwinRequest
from provision.lab.twins.ssh import client_argv
from provision.lab.twins.state import twins_dir
from provision.spec import NodeSpec, load_fleet

ROOT = Path(__file__).resolve().parents[2]
TWINS = int(os.environ.get("PROVISION_ROLES_TWINS", "2"))
PROFILE = "ml_prod_v4"

pytestmark = [
    pytest.mark.lab,
    pytest.mark.twins,
    pytest.mark.timeout(3600),
    pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("systemd-nspawn"), reason="node twins need root"),
    pytest.mark.heavy,
]


@dataclass
class RolesLab:
    lab_dir: Path
    inventory: Path
    infos: dict[str, TwinInfo]
    spec: NodeSpec
    plan: PlayResult | None = None
    untouched_by_plan: bool = False
    first: PlayResult | None = None
    second: PlayResult | None = None

    def ssh(self, node: str, command: str, check: bool = True) -> str:
        info = self.infos[node]
        argv = [*client_argv(info.key_file, info.known_hosts, info.address, info.port), command]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if check and proc.returncode != 0:
            raise AssertionError(f"ssh {node} {command!r}: exit {proc.returncode}: {proc.stderr.strip()}")
        return proc.stdout

    def run(self, node: str | None = None, **kw: object) -> PlayResult:
        limit = (node,) if node else ()
        return run_playbook(RunOptions(inventory=self.inventory, limit=limit, **kw))

    def scratch(self, node: str) -> list[str]:
        return scratch_devices(twins_dir(self.lab_dir) / node / "state" / "hardware.json")

    def snapshot(self, node: str) -> str:
        """What a failed run or a plan must not touch: packages and selections, apt config, the pool, /etc."""
        return self.ssh(node, "dpkg-query -W -f='${Package} ${Version} ${Status}\\n' | sort; "
                              "cat /etc/apt/preferences.d/* /etc/apt/sources.list.d/* 2>&1; "
                              "zpool list -H -o name,health 2>&1; "
                              "find /etc -xdev -newer /etc/hostname -type f 2>/dev/null | sort | xargs -r md5sum")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RolesLab]:
    lab_dir = tmp_path_factory.mktemp("roles-lab")
    fleet = load_fleet(ROOT / "inventory" / "hosts.yml")
    requests = [TwinRequest(name=f"node{i:02d}", index=i, profile=PROFILE) for i in range(1, TWINS + 1)]
    try:
        infos = twins.up(lab_dir, requests, lambda profile: fleet.profiles[profile])
        inventory = write_twin_inventory(lab_dir / "inventory", PROFILE, ROOT / "inventory" / "group_vars", infos,
                                         twins_dir(lab_dir))
        lab = RolesLab(lab_dir, inventory, {i.name: i for i in infos}, fleet.profiles[PROFILE])
        before = {node: lab.snapshot(node) for node in lab.infos}
        lab.plan = run_playbook(RunOptions(inventory=inventory, check=True))
        lab.untouched_by_plan = before == {node: lab.snapshot(node) for node in lab.infos}
        lab.first = run_playbook(RunOptions(inventory=inventory))
        lab.second = run_playbook(RunOptions(inventory=inventory))
        yield lab
    finally:
        twins.down(lab_dir)


def _last(lab: RolesLab) -> str:
    return sorted(lab.infos)[-1]


def test_plan_on_fresh_twins_changes_nothing(lab: RolesLab) -> None:
    assert lab.plan is not None and lab.plan.ok and lab.plan.check
    for host, stats in lab.plan.hosts.items():
        assert stats.changed > 0 and stats.failed == 0, host
    tasks = {c.task for c in lab.plan.changes}
    assert {"Report the scratch pool that would be created", "Write the sysctls"} <= tasks
    assert lab.untouched_by_plan


def test_site_converges_every_twin(lab: RolesLab) -> None:
    assert lab.first is not None and lab.first.ok and sorted(lab.first.hosts) == sorted(lab.infos)
    for host, stats in lab.first.hosts.items():
        assert stats.failed == 0 and stats.unreachable == 0, host
        assert stats.changed > 0, f"{host}: a factory-fresh twin needs changes"


def test_second_run_changes_nothing(lab: RolesLab) -> None:
    assert lab.second is not None and lab.second.ok
    assert {h: s.changed for h, s in lab.second.hosts.items()} == {h: 0 for h in lab.infos}
    assert lab.second.changes == []


def test_pinned_versions_installed_and_held(lab: RolesLab) -> None:
    sw = lab.spec.software
    pins = {
        "nvidia-driver": sw.nvidia_driver.apt_version,
        "nvidia-kernel-open-dkms": sw.nvidia_driver.apt_version,
        f"nvidia-fabricmanager-{sw.nvidia_driver.branch}": sw.fabric_manager.apt_version if sw.fabric_manager else "",
        f"cuda-toolkit-{'-'.join(sw.cuda.version.split('.')[:2])}": sw.cuda.apt_version,
        "libnccl2": sw.nccl.apt_version,
        "nvidia-container-toolkit": sw.container_toolkit.apt_version,
        "zfsutils-linux": sw.zfs.apt_version,
    }
    for node in lab.infos:
        installed = dict(
            line.split(" ", 1)
            for line in lab.ssh(node, "dpkg-query -W -f='${Package} ${Version}\\n' " + " ".join(pins)).splitlines()
        )
        assert installed == pins, node
        held = set(lab.ssh(node, "apt-mark showhold").split())
        assert set(pins) <= held, f"{node}: not held: {set(pins) - held}"


def test_newer_stand_in_is_not_installed(lab: RolesLab) -> None:
    node = sorted(lab.infos)[0]
    pin = lab.spec.software.nvidia_driver.apt_version
    policy = lab.ssh(node, "apt-cache policy nvidia-driver")
    assert f"Candidate: {pin}" in policy and "560.35.03-1" in policy  # a newer one is offered, not chosen
    upgrade = lab.ssh(node, "apt-get -s -o Debug::NoLocking=1 dist-upgrade")
    assert "Inst nvidia-driver" not in upgrade and "Inst libnccl2" not in upgrade
    forced = lab.ssh(node, "apt-get -s -o Debug::NoLocking=1 install nvidia-driver", check=False)
    assert "Inst nvidia-driver" not in forced


def test_the_stack_answers(lab: RolesLab) -> None:
    driver = lab.spec.software.nvidia_driver.version
    for node in lab.infos:
        smi = lab.ssh(node, "nvidia-smi --query-gpu=driver_version --format=csv,noheader")
        assert set(smi.split()) == {driver}, node
        assert lab.ssh(node, "systemctl is-active nvidia-fabricmanager nvidia-persistenced nvidia-dcgm").split() == [
            "active"] * 3


def test_scratch_pool_is_built_from_the_by_id_drives(lab: RolesLab) -> None:
    zfs = lab.spec.storage.scratch.zfs
    for node in lab.infos:
        status = lab.ssh(node, f"zpool status -P {zfs.pool}")
        members = [line.split()[0] for line in status.splitlines() if line.strip().startswith("/dev/")]
        # ZFS partitions a whole drive it is given: it then reports <by-id>-part1.
        assert [re.sub(r"-part1$", "", m) for m in members] == lab.scratch(node)
        props = dict(line.split("\t") for line in lab.ssh(
            node, f"zfs get -H -o property,value recordsize,compression,atime,mountpoint {zfs.pool}").splitlines())
        assert props == {"recordsize": zfs.recordsize, "compression": zfs.compression, "atime": zfs.atime,
                         "mountpoint": zfs.mountpoint}


def test_plan_shows_drift_and_changes_nothing(lab: RolesLab) -> None:
    node = sorted(lab.infos)[0]
    lab.ssh(node, "rm /etc/sysctl.d/90-provision.conf")
    plan = lab.run(node, check=True, tags=("base",))
    assert [c.task for c in plan.changes] == ["Write the sysctls"]
    assert "+vm.zone_reclaim_mode = 0" in plan.changes[0].diff
    assert lab.ssh(node, "ls /etc/sysctl.d/").split().count("90-provision.conf") == 0
    applied = lab.run(node, tags=("base",))
    assert applied.hosts[node].changed == 1
    assert "vm.zone_reclaim_mode = 0" in lab.ssh(node, "cat /etc/sysctl.d/90-provision.conf")


def test_missing_pinned_version_fails_and_changes_nothing(lab: RolesLab) -> None:
    node = _last(lab)
    before = lab.snapshot(node)
    with pytest.raises(PlayFailed) as caught:
        lab.run(node, playbook="gpu", extravars={"cudnn_apt_version": "9.9.9.9-1"})
    message = str(caught.value)
    assert f"{node} failed" in message and "cudnn9-cuda-12=9.9.9.9-1" in message and "not available" in message
    assert caught.value.result.hosts[node].changed == 0
    assert lab.snapshot(node) == before


def test_missing_scratch_drive_fails_and_changes_nothing(lab: RolesLab) -> None:
    node = _last(lab)
    gone = lab.scratch(node)[-1]
    twins.fault(lab.lab_dir, node, "scratch_drive_missing", clear=False)
    try:
        lab.ssh(node, f"for i in $(seq 50); do [ -e {gone} ] || exit 0; sleep 0.2; done; exit 1")
        before = lab.snapshot(node)
        with pytest.raises(PlayFailed) as caught:
            lab.run(node)
        assert f"scratch drive(s) missing: {gone}" in str(caught.value)
        assert caught.value.result.hosts[node].changed == 0
        assert lab.snapshot(node) == before
    finally:
        twins.fault(lab.lab_dir, node, "scratch_drive_missing", clear=True)
    lab.ssh(node, f"for i in $(seq 50); do [ -e {gone} ] && exit 0; sleep 0.2; done; exit 1")


def test_scratch_drive_with_filesystem_is_refused(lab: RolesLab) -> None:
    node = _last(lab)
    pool = lab.spec.storage.scratch.zfs.pool
    used = lab.scratch(node)[2]
    lab.ssh(node, f"zpool destroy {pool} && mkfs.ext4 -q -F {used}")
    before = lab.snapshot(node)
    with pytest.raises(PlayFailed) as caught:
        lab.run(node)
    message = str(caught.value)
    assert "not empty, refusing to build pool" in message and used in message and "TYPE=ext4" in message
    assert caught.value.result.hosts[node].changed == 0
    assert lab.snapshot(node) == before
    # Wiping the drive is the operator's call; then the role builds the pool again.
    lab.ssh(node, f"wipefs -q -a {used}")
    rebuilt = lab.run(node, tags=("zfs",))
    assert rebuilt.hosts[node].changed >= 1
    assert pool in lab.ssh(node, "zpool list -H -o name")
