"""`provision clean` and `provision retire` on the lab: one ML-PROD-V4 twin (real sshd, stand-in nvme/zpool/mdadm
over 64 MiB drive files) and its simulated BMC.

After a minimal converge (the scratch pool, data written at the start and end of every scratch drive) and a
preflight (the node's identity in the journal):
- `clean --level sanitize --yes` killed right after its first drive's sanitize (failpoint drive-erase:after),
  then run again: every scratch drive sanitized exactly once, each with its evidence journaled (one proven done
  from the drive after the kill), read back zeroed; the pool gone, the boot pair untouched; BIOS reset to
  defaults and the spec re-applied and verified; the SEL saved to the journal and cleared; `status` says cleaned;
- killed after the BIOS reset to defaults and run again: each scratch drive erased once more, no more;
- a tenant's BMC account and data, then `clean --level sanitize`: the account is gone (the spec's bmc: section
  names none; the login account stays), the scratch drives are zeroed; `provision bringup` then brings the
  cleaned node back to a passing verify (the scratch pool made again);
- a drive whose sanitize fails (fault nvme_sanitize_fails): exit 1 naming the drive, node "clean failed";
- a node whose serial differs from the journal's latest reading is refused, nothing erased;
- `retire --yes` powers the node off and marks it retired; `campaign plan` lists it retired; `unretire`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr

from provision.clean import nvme, records
from provision.journal import Journal
from provision.journal.identities import identities, record_identity
from provision.lab import twins
from provision.lab.inventory import lab_group_vars_text, lab_host_vars
from provision.lab.twins.models import TwinInfo
from provision.redfish.ops import accounts as acc
from provision.redfish.ops.session import open_endpoint, options_for
from provision.spec import load_fleet
from tests.lab.verify_lab import ROOT, _zpool_create, project_spec, ssh, verify_lab

pytestmark = [
    pytest.mark.lab,
    pytest.mark.twins,
    pytest.mark.skipif(os.geteuid() != 0, reason="node twins need root"),
]

NODE = "node01"
CAMPAIGN = ROOT / "campaigns" / "ml_prod_v4_2026q4.yml"
HW = "/var/lib/provision-lab/hardware.json"
DIRTY = ("set -e; for d in $(python3 -c 'import json; print(\" \".join(\"/dev/\" + d[\"name\"] for d in "
         f"json.load(open(\"{HW}\"))[\"nvme\"]))'); do "
         "dd if=/dev/urandom of=$d bs=1M count=1 conv=notrunc status=none; "
         "dd if=/dev/urandom of=$d bs=1M count=1 seek=63 conv=notrunc status=none; done")
NONZERO = ("for d in $(python3 -c 'import json; print(\" \".join(\"/dev/\" + d[\"name\"] for d in "
           f"json.load(open(\"{HW}\"))[\"nvme\"]))'); do "
           "echo $d $(cat $d | tr -d '\\000' | wc -c); done")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, Path, TwinInfo]]:
    base = tmp_path_factory.mktemp("clean-lab")
    spec = project_spec()
    assert spec.storage.scratch is not None
    with verify_lab(base, 1) as (inventory, twin_dir, infos):
        host_vars = inventory.parent / "host_vars" / f"{NODE}.yml"
        data = yaml.safe_load(host_vars.read_text()) or {}
        data["provision_bmc_setup"] = {}  # a bmc: section naming no account: a clean keeps only the login one
        # what the roles need on a twin (as `lab up` writes them): a bring-up after the clean runs site.yml
        (base / "hardware.json").write_text(ssh(infos[NODE], f"cat {HW}"))
        data.update(lab_host_vars(infos[NODE].repo_url, base / "hardware.json"), ansible_ssh_common_args=(
            f"-o UserKnownHostsFile={infos[NODE].known_hosts} -o StrictHostKeyChecking=yes"))
        lab_vars = inventory.parent / "group_vars" / "all" / "lab.yml"
        lab_vars.parent.mkdir(parents=True, exist_ok=True)
        lab_vars.write_text(lab_group_vars_text())
        host_vars.write_text("---\n" + yaml.safe_dump(data, sort_keys=False))
        ssh(infos[NODE], _zpool_create(spec.storage.scratch.zfs) + " && " + DIRTY)
        journal = base / "journal.db"
        done = cli(inventory, journal, "bringup", NODE, "--only", "preflight")
        assert done.returncode == 0, done.stdout + done.stderr
        yield inventory, twin_dir, journal, infos[NODE]


def cli(inventory: Path, journal: Path, *args: str, env: dict[str, str] | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "provision.cli", *args, "-i", str(inventory), "--journal",
                           str(journal)], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env={**os.environ, **(env or {})}, check=False)


def drives(info: TwinInfo) -> dict[str, dict[str, str]]:
    hw = json.loads(ssh(info, f"cat {HW}"))
    return {d["name"]: d for d in hw["nvme"]}


def nonzero(info: TwinInfo) -> dict[str, int]:
    return {line.split()[0].removeprefix("/dev/"): int(line.split()[1]) for line in ssh(info, NONZERO).splitlines()}


def erases(info: TwinInfo) -> dict[str, int]:
    text = ssh(info, "cat /var/lib/provision-lab/nvme-erase.json 2>/dev/null || echo '{}'")
    return {k: v["erases"] for k, v in json.loads(text).items()}


def test_clean_killed_at_a_drive_resumes_without_erasing_it_twice(lab: tuple[Path, Path, Path, TwinInfo]) -> None:
    inventory, _twin_dir, journal, info = lab
    hw = drives(info)
    scratch = sorted(n for n, d in hw.items() if d["role"] == "scratch")
    boot = sorted(n for n, d in hw.items() if d["role"] == "boot")
    assert all(nonzero(info)[n] for n in scratch + boot)  # data everywhere before
    plan = cli(inventory, journal, "clean", NODE, "--plan")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert all(f"/dev/{n}" in plan.stdout for n in scratch) and not any(f"/dev/{n} " in plan.stdout for n in boot)
    started = time.monotonic()
    killed = cli(inventory, journal, "clean", NODE, "--level", "sanitize", "--yes",
                 env={"PROVISION_FAILPOINT": "drive-erase:after"})
    assert killed.returncode == -9, killed.stdout + killed.stderr
    assert sum(erases(info).values()) == 1
    done = cli(inventory, journal, "clean", NODE, "--level", "sanitize", "--yes")
    seconds = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    assert erases(info) == dict.fromkeys(scratch, 1)  # each once: the killed one was not sanitized again
    left = nonzero(info)
    assert all(left[n] == 0 for n in scratch) and all(left[n] for n in boot)
    assert nvme.parse_zpools(ssh(info, "zpool list -H -o name")) == ()
    with Journal(journal) as jr:
        kept = records.last_evidence(jr, NODE)
        stages = {s.stage: s for s in jr.stages(NODE) if s.run_id == max(r.run_id for r in jr.stages(NODE))}
        acts = [a for a in jr.actions(NODE) if a.action in ("bios-defaults", "sel-saved", "sel-clear")]
    assert sorted(e.device for e in kept) == [f"/dev/{n}" for n in scratch]
    assert {e.serial for e in kept} == {hw[n]["serial"] for n in scratch}
    assert all(e.method.value == "sanitize-crypto" and e.read_back.zeroed and e.sanitize and e.sanitize.succeeded
               for e in kept)
    assert [e.resumed for e in kept].count(True) == 1
    assert {"bios-defaults", "sel-saved", "sel-clear"} <= {a.action for a in acts if a.outcome == "ok"}
    assert all(stages[s].outcome in ("applied", "converged") for s in ("bios-defaults", "bios", "reset", "bmc-state",
                                                                         "done")), stages
    # the spec's BIOS holds after the reset to defaults: a bring-up's bios stage finds nothing to write
    bios = cli(inventory, journal, "bringup", NODE, "--only", "bios", "--plan", "--json")
    assert json.loads(bios.stdout)["nodes"][0]["stages"][0]["outcome"] == "converged", bios.stdout + bios.stderr
    status = cli(inventory, journal, "status", NODE, "--json")
    assert json.loads(status.stdout)[0]["cleaned"].startswith("cleaned at "), status.stdout
    print(f"\nclean of {len(scratch)} drives, killed once and resumed: {seconds:.1f} s; stages of the resumed run: "
          + ", ".join(f"{s.stage} {s.duration_s}s" for s in stages.values()))
    print("bios-defaults, bios, reset: " + " | ".join(stages[s].detail for s in ("bios-defaults", "bios", "reset")))


@pytest.mark.parametrize("failpoint", ["bios-defaults:after"])  # a BMC step; the drive steps: above and unit tests
def test_a_kill_at_a_step_resumes_and_erases_each_drive_once(lab: tuple[Path, Path, Path, TwinInfo],
                                                             failpoint: str) -> None:
    inventory, _twin_dir, journal, info = lab
    spec = project_spec()
    assert spec.storage.scratch is not None
    ssh(info, _zpool_create(spec.storage.scratch.zfs) + " && " + DIRTY)
    scratch = sorted(n for n, d in drives(info).items() if d["role"] == "scratch")
    before = erases(info)
    killed = cli(inventory, journal, "clean", NODE, "--yes", env={"PROVISION_FAILPOINT": failpoint})
    assert killed.returncode == -9, killed.stdout + killed.stderr
    done = cli(inventory, journal, "clean", NODE, "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    after = erases(info)
    assert {n: after[n] - before.get(n, 0) for n in scratch} == dict.fromkeys(scratch, 1)
    assert all(nonzero(info)[n] == 0 for n in scratch)


def _bmc_users(inventory: Path) -> set[str]:
    host = load_fleet(inventory).hosts[NODE]
    with open_endpoint(options_for(NODE, host.bmc)) as conn:
        return {a.user for a in acc.read_accounts(conn, acc.collection_uri(conn))}


def _stage_seconds(journal: Path, kind: str) -> str:
    with Journal(journal) as jr:
        rows = jr.stages(NODE)
        last = max(r.run_id for r in rows if r.stage in (("done",) if kind == "clean" else ("verify",)))
        return ", ".join(f"{r.stage} {r.duration_s}s" for r in rows if r.run_id == last)


def test_bringup_brings_a_cleaned_node_back_to_a_passing_verify(lab: tuple[Path, Path, Path, TwinInfo]) -> None:
    inventory, _twin_dir, journal, info = lab
    spec = project_spec()
    assert spec.storage.scratch is not None
    host = load_fleet(inventory).hosts[NODE]
    with open_endpoint(options_for(NODE, host.bmc)) as conn:  # what a tenant leaves: an account, data
        acc.create_account(conn, acc.collection_uri(conn), "tenant", "Operator", SecretStr("Tenant-pw-4711"))
    ssh(info, _zpool_create(spec.storage.scratch.zfs) + " && " + DIRTY)
    assert "tenant" in _bmc_users(inventory)
    started = time.monotonic()
    clean = cli(inventory, journal, "clean", NODE, "--level", "sanitize", "--yes")
    clean_s = time.monotonic() - started
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert _bmc_users(inventory) == {host.bmc.username}  # the tenant's account gone, the login account kept
    scratch = sorted(n for n, d in drives(info).items() if d["role"] == "scratch")
    assert all(nonzero(info)[n] == 0 for n in scratch)
    assert nvme.parse_zpools(ssh(info, "zpool list -H -o name")) == ()
    started = time.monotonic()
    up = cli(inventory, journal, "bringup", NODE, "--json", "--poll-seconds", "0.2", timeout=1200)
    up_s = time.monotonic() - started
    summary = json.loads(up.stdout or "{}")
    assert summary.get("ok"), up.stdout[-4000:] + up.stderr[-2000:]
    outcomes = {s["stage"]: s["outcome"] for s in summary["nodes"][0]["stages"]}
    assert outcomes["verify"] in ("applied", "converged"), outcomes
    assert spec.storage.scratch.zfs.pool in nvme.parse_zpools(ssh(info, "zpool list -H -o name"))
    print(f"\nclean --level sanitize: {clean_s:.1f} s ({_stage_seconds(journal, 'clean')})")
    print(f"bringup after the clean: {up_s:.1f} s ({_stage_seconds(journal, 'bringup')})")


def test_a_failed_sanitize_names_the_drive(lab: tuple[Path, Path, Path, TwinInfo]) -> None:
    inventory, twin_dir, journal, info = lab
    hw = drives(info)
    first = sorted(n for n, d in hw.items() if d["role"] == "scratch")[0]
    ssh(info, DIRTY)
    twins.fault(twin_dir, NODE, "nvme_sanitize_fails", False)
    try:
        done = cli(inventory, journal, "clean", NODE, "--level", "sanitize", "--yes")
    finally:
        twins.fault(twin_dir, NODE, "nvme_sanitize_fails", True)
    assert done.returncode == 1, done.stdout + done.stderr
    said = " ".join(done.stdout.split())
    assert f"/dev/{first} ({hw[first]['serial']}): sanitize-crypto failed" in said
    assert f"{NODE}: clean failed at disks" in said
    assert nonzero(info)[first]  # its data is still there, and nothing called it cleaned
    with Journal(journal) as jr:
        assert hw[first]["serial"] not in {e.serial for e in records.evidence(jr, NODE)}


def test_a_node_whose_serial_changed_is_refused(lab: tuple[Path, Path, Path, TwinInfo]) -> None:
    inventory, _twin_dir, journal, info = lab
    with Journal(journal) as jr:
        last = identities(jr, NODE)[-1]
        swapped = last.identity.model_copy(update={"system": last.identity.system.model_copy(
            update={"serial_number": "SWAPPED-BOARD"})})
        record_identity(jr, NODE, swapped, "test: the board recorded before a swap")
    before = erases(info)
    try:
        done = cli(inventory, journal, "clean", NODE, "--yes")
    finally:
        with Journal(journal) as jr:
            record_identity(jr, NODE, last.identity, "test: the board it is")
    said = " ".join(done.stdout.split())
    assert done.returncode == 1 and "holds SWAPPED-BOARD" in said and "nothing erased" in said, said
    assert erases(info) == before


def test_retire_lists_it_retired_in_a_campaign_plan(lab: tuple[Path, Path, Path, TwinInfo]) -> None:
    inventory, _twin_dir, journal, _info = lab
    done = cli(inventory, journal, "retire", NODE, "--yes")
    assert done.returncode == 0, done.stdout + done.stderr
    with Journal(journal) as jr:
        assert NODE in records.retired(jr)
    plan = cli(inventory, journal, "campaign", "plan", str(CAMPAIGN), "--json")
    assert json.loads(plan.stdout)["retired"] == [NODE], plan.stdout + plan.stderr
    assert cli(inventory, journal, "unretire", NODE).returncode == 0
    with Journal(journal) as jr:
        assert NODE not in records.retired(jr)
