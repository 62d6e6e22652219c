"""The nfs_client role and the NFS consistency probe against a REAL NFS server and client: the Debian cloud
kernel in the vm tier's VM (the host kernel has neither nfsd nor an NFS client).

Server: the VM kernel's own nfsd (nfs-kernel-server, preinstalled in the image and started here), exporting /srv/ckpt to
127.0.0.1 only, with a 10 s grace period. Client: the same kernel's NFS client over the VM's loopback, mounted
by the role's systemd units. The cross-node read runs between two client instances of that kernel (the export
mounted twice, at vers=4.2 and vers=4.1: two NFS clients, two superblocks, two page caches), presented to the
verify code as two nodes; it is not two machines. Real-site NFS on real hardware was not run here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from provision.ansible.models import PlayResult, RunOptions
from provision.ansible.runner import run_playbook
from provision.conformance import across_nfs
from provision.conformance.checks import nfs
from provision.conformance.checks._base import Context
from provision.conformance.facts import gather, ssh_runner
from provision.conformance.model import CheckResult, Level, Outcome
from provision.lab.vm import VmInfo, ssh
from provision.lab.vm.inventory import write_vm_inventory
from provision.spec.fleet import BmcEndpoint, HostEntry, SshEndpoint
from provision.spec.model import NodeSpec
from provision.spec.nfs import NfsMount

pytestmark = [pytest.mark.lab, pytest.mark.vm, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "ml_prod_v4"
SERVER_SETUP = """set -e
mkdir -p /srv/ckpt
echo '/srv/ckpt 127.0.0.1(rw,sync,no_subtree_check,no_root_squash,insecure)' > /etc/exports
printf '[nfsd]\\ngrace-time=10\\nlease-time=10\\nvers3=n\\n' >> /etc/nfs.conf
systemctl restart nfs-server
exportfs -ra
"""
MOUNTS = [
    {"name": "ckpt", "server": "127.0.0.1", "export": "/srv/ckpt", "mountpoint": "/mnt/ckpt",
     "options": "vers=4.2,hard,nconnect=2", "min_free_gib": 0.1, "shared": True},
    {"name": "ckpt2", "server": "127.0.0.1", "export": "/srv/ckpt", "mountpoint": "/mnt/ckpt2",
     "options": "vers=4.1,hard", "shared": True},
]


def sh(vm: VmInfo, command: str) -> str:
    return ssh(vm, command, check=True, timeout=300).stdout


@pytest.fixture(scope="module")
def inventory(vm: VmInfo, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_vm_inventory(tmp_path_factory.mktemp("nfsinv") / "inv", vm, PROFILE, ROOT / "inventory/group_vars",
                              {"nfs_client_mounts": MOUNTS})


@pytest.fixture(scope="module")
def host(vm: VmInfo) -> HostEntry:
    """The VM as a verify target: ML-PROD-V4 (its nfs_mounts set per case), reached over SSH, host key checked."""
    data = yaml.safe_load((ROOT / "inventory/group_vars/all/profile_ml_prod_v4.yml").read_text())
    return HostEntry(
        name=vm.name, profile=PROFILE, groups=("all",), spec=NodeSpec.model_validate(data["provision_profile_ml_prod_v4"]),
        bmc=BmcEndpoint(address="https://127.0.0.1", username="unused", password="unused"),  # type: ignore[arg-type]
        ssh=SshEndpoint(host=vm.address, port=vm.port, user=vm.user, key_file=vm.key_file, known_hosts=vm.known_hosts),
    )


def play(inventory: Path, check: bool = False) -> PlayResult:
    return run_playbook(RunOptions(playbook="nfs.yml", inventory=inventory, check=check, timeout_s=900,
                                   strategy="mitogen"))  # one Python in the guest for the play


def node(host: HostEntry, name: str, mounts: list[dict[str, object]]) -> HostEntry:
    spec = host.spec.model_copy(update={"nfs_mounts": tuple(NfsMount.model_validate(m) for m in mounts)})
    return host.model_copy(update={"name": name, "spec": spec})


def probe(entry: HostEntry) -> dict[str, CheckResult]:
    """Phase 1 on the VM (the real probe script over SSH), judged locally."""
    assert entry.ssh is not None
    facts = gather(entry.name, nfs.probes(entry.spec, Level.FULL), ssh_runner(entry.ssh))
    ctx = Context(node=entry.name, spec=entry.spec, facts=facts, level=Level.FULL)
    nfs.evaluate(ctx)
    return {r.id: r for r in ctx.results}


def outcomes(results: dict[str, CheckResult]) -> dict[str, Outcome]:
    return {k: r.outcome for k, r in results.items()}


def test_role_mounts_the_exports_and_the_probe_passes_on_a_real_nfs_server(
    vm: VmInfo, inventory: Path, host: HostEntry
) -> None:
    checked = play(inventory, check=True)  # check mode before anything exists: no failure, nothing written
    assert sh(vm, "ls /etc/systemd/system/ | grep -c '\\.mount$' || true").strip() == "0"
    assert checked.changes
    sh(vm, SERVER_SETUP)

    first = play(inventory)
    assert "Write the mount units" in {c.task for c in first.changes}
    fstype, source, options = sh(vm, "findmnt -n -o FSTYPE,SOURCE,OPTIONS /mnt/ckpt").split()
    assert (fstype, source) == ("nfs4", "127.0.0.1:/srv/ckpt")
    assert {"vers=4.2", "hard", "nconnect=2"} <= set(options.split(","))
    assert sh(vm, "systemctl is-enabled mnt-ckpt.mount").strip() == "enabled"
    second = play(inventory)
    assert second.changed_total == 0, [c.task for c in second.changes]

    results = probe(node(host, "node-a", [{**MOUNTS[0], "shared": False}]))
    assert outcomes(results) == {f"nfs.ckpt.{k}": Outcome.PASS for k in ("mounted", "options", "free", "consistency")}
    assert "O_DIRECT" in results["nfs.ckpt.consistency"].found  # the read went to the server
    assert results["nfs.ckpt.options"].found == "vers=4.2,hard,nconnect=2,rw"
    assert sh(vm, "ls /srv/ckpt/.provision-probe | wc -l").strip() == "0"  # the probe removed its file


def test_two_clients_read_what_the_other_wrote_and_a_lone_node_is_waived(vm: VmInfo, host: HostEntry) -> None:
    a, b = node(host, "node-a", MOUNTS[:1]), node(host, "node-b", MOUNTS[1:])
    assert a.ssh is not None
    facts = {e.name: gather(e.name, nfs.probes(e.spec, Level.FULL), ssh_runner(e.ssh)) for e in (a, b)}
    kept = sh(vm, "ls /srv/ckpt/.provision-probe").split()
    assert len([k for k in kept if k.startswith("keep-")]) == 2  # one file per writer, on the server's disk

    cross = across_nfs.across_nodes([a, b], facts, lambda e: ssh_runner(e.ssh))  # type: ignore[arg-type]
    assert [(r.id, r.outcome) for r in cross["node-a"]] == [("nfs.ckpt.cross_node", Outcome.PASS)]
    assert [(r.id, r.outcome) for r in cross["node-b"]] == [("nfs.ckpt2.cross_node", Outcome.PASS)]
    assert "same sha256 as node-b wrote" in cross["node-a"][0].found
    assert sh(vm, "ls /srv/ckpt/.provision-probe | wc -l").strip() == "0"  # each reader removed what it read

    # The writer's file vanished before the read (a server that lost it): the reader FAILS, never passes.
    facts = {e.name: gather(e.name, nfs.probes(e.spec, Level.FULL), ssh_runner(e.ssh)) for e in (a, b)}
    sh(vm, "rm -f /srv/ckpt/.provision-probe/keep-*")
    lost = across_nfs.across_nodes([a, b], facts, lambda e: ssh_runner(e.ssh))  # type: ignore[arg-type]
    assert lost["node-a"][0].outcome is Outcome.FAIL and "cannot read node-b's file" in lost["node-a"][0].found

    alone = across_nfs.across_nodes([a], {"node-a": facts["node-a"]}, lambda e: ssh_runner(e.ssh))  # type: ignore[arg-type]
    assert [r.outcome for r in alone["node-a"]] == [Outcome.WAIVED]


def test_wrong_options_low_space_and_an_unmounted_export_do_not_pass(vm: VmInfo, host: HostEntry) -> None:
    wrong = {**MOUNTS[0], "shared": False, "options": "vers=4.2,hard,nconnect=4", "min_free_gib": 1e6}
    results = probe(node(host, "node-a", [wrong]))
    assert results["nfs.ckpt.options"].outcome is Outcome.FAIL
    assert "nconnect=2, spec nconnect=4" in results["nfs.ckpt.options"].detail
    assert results["nfs.ckpt.free"].outcome is Outcome.FAIL
    assert results["nfs.ckpt.consistency"].outcome is Outcome.PASS

    sh(vm, "systemctl stop mnt-ckpt2.mount")
    try:
        results = probe(node(host, "node-b", MOUNTS[1:]))
        assert results["nfs.ckpt2.mounted"].outcome is Outcome.FAIL
        assert results["nfs.ckpt2.mounted"].found == "not mounted"
        assert {results[f"nfs.ckpt2.{k}"].outcome for k in ("options", "free", "consistency")} == {Outcome.ERROR}
    finally:
        sh(vm, "systemctl start mnt-ckpt2.mount")
