"""Node twins: the pure parts (no root, no services)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from provision.errors import InputError, LabError
from provision.lab.twins import hooks, lifecycle, netns, nspawn, rootfs, ssh, state, twinroot
from provision.lab.twins.models import TwinRecord, TwinRequest, TwinsState


@pytest.mark.parametrize(
    ("wanted", "used", "expected"),
    [
        ([1, 2], set(), [1, 2]),
        ([1, 2], {1}, [2, 3]),
        ([1, 2, 3], {2, 3}, [1, 4, 5]),
        ([5], {1, 2, 5}, [3]),
    ],
)
def test_slots_keep_the_index_when_free(wanted, used, expected):
    assert netns.choose_slots(wanted, used) == expected


def test_no_free_slot_is_a_lab_error():
    with pytest.raises(LabError, match="no free twin network slot"):
        netns.choose_slots([1], set(range(1, netns.MAX_SLOT + 1)))


DEB822 = """\
Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://mirror.example.org/debian
Suites: bookworm bookworm-updates
Components: main

Types: deb
URIs: http://security.example.org/debian-security
Suites: bookworm-security
Components: main
"""


def test_mirror_from_deb822_sources(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(DEB822)
    assert rootfs.host_mirror(tmp_path) == "http://mirror.example.org/debian"


def test_mirror_from_one_line_sources(tmp_path):
    (tmp_path / "sources.list").write_text(
        "# deb http://commented.example.org/debian bookworm main\n"
        "deb http://security.example.org/debian-security bookworm-security main\n"
        "deb [arch=amd64 signed-by=/k.gpg] https://one.example.org/debian bookworm main contrib\n"
    )
    assert rootfs.host_mirror(tmp_path) == "https://one.example.org/debian"


def test_mirror_falls_back_to_deb_debian_org(tmp_path):
    assert rootfs.host_mirror(tmp_path) == rootfs.FALLBACK_MIRROR


def test_recipe_id_changes_with_the_package_list(monkeypatch):
    before = rootfs.recipe_id()
    monkeypatch.setattr(rootfs, "INCLUDE", (*rootfs.INCLUDE, "vim"))
    assert rootfs.recipe_id() != before


def test_customize_strips_shared_identity_and_mirror(tmp_path):
    root = tmp_path / "root"
    for d in ("etc/ssh", "etc/apt", "etc/systemd/system", "var/lib/apt/lists", "var/lib/dbus"):
        (root / d).mkdir(parents=True)
    (root / "etc/ssh/ssh_host_ed25519_key").write_text("secret")
    (root / "etc/apt/sources.list").write_text("deb http://deb.debian.org/debian bookworm main\n")
    (root / "var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_InRelease").write_text("x")
    (root / "etc/machine-id").write_text("0123456789abcdef0123456789abcdef\n")
    rootfs.customize(root)
    assert not list((root / "etc/ssh").glob("ssh_host_*"))
    assert (root / "etc/apt/sources.list").read_text() == ""
    assert not list((root / "var/lib/apt/lists").iterdir())
    assert (root / "etc/machine-id").read_text() == ""
    assert str((root / "etc/systemd/system/systemd-remount-fs.service").readlink()) == "/dev/null"


def _record(tmp_path: Path, slot: int = 7) -> TwinRecord:
    return TwinRecord(name="node03", index=3, profile="ml_prod_v4", slot=slot, twin_dir=tmp_path / "node03")


def test_record_derives_names_and_addresses(tmp_path):
    twin = _record(tmp_path, slot=7)
    assert (twin.netns, twin.host_if, twin.host_address, twin.address) == (
        "pl-node07", "plv7", "10.203.7.1", "10.203.7.2",
    )  # fmt: skip


def test_nspawn_boots_the_overlay_in_the_twin_netns(tmp_path):
    argv = nspawn.nspawn_argv(_record(tmp_path))
    assert argv[0] == "systemd-nspawn" and "--boot" in argv
    assert f"--directory={tmp_path / 'node03' / 'root'}" in argv
    assert "--network-namespace-path=/run/netns/pl-node07" in argv
    assert "--hostname=node03" in argv and "--machine=pl-node07" in argv
    assert f"--bind={tmp_path / 'node03' / 'state'}:/var/lib/provision-lab" in argv
    assert not any(a.startswith("--volatile") for a in argv)  # state must survive reboots
    assert "--capability=CAP_NET_ADMIN" in argv
    assert "--resolv-conf=off" in argv  # the host's name server stays out of the twin


def test_proc_binds_unit_maps_state_files_inside(tmp_path):
    root, state_dir = tmp_path / "root", tmp_path / "state"
    (state_dir / "proc").mkdir(parents=True)
    binds = {"/proc/meminfo": state_dir / "proc/meminfo", "/proc/mdstat": state_dir / "proc/mdstat"}
    twinroot.write_proc_binds(root, state_dir, binds)
    lines = (root / twinroot.BINDS_FILE).read_text().splitlines()
    assert lines == [
        "/var/lib/provision-lab/proc/mdstat /proc/mdstat",
        "/var/lib/provision-lab/proc/meminfo /proc/meminfo",
    ]
    link = root / "etc/systemd/system/sysinit.target.wants" / twinroot.BIND_UNIT
    assert str(link.readlink()) == f"/etc/systemd/system/{twinroot.BIND_UNIT}"
    assert (root / twinroot.BIND_SCRIPT).stat().st_mode & 0o111
    # sshd stops before the presented files are unmounted (deepest first) when the twin shuts down
    dropin = (root / twinroot.SSH_DROPIN).read_text().split()
    assert dropin == ["[Unit]", "After=provision-lab-proc-binds.service", "proc-sys-kernel-random-boot_id.mount",
                      "proc-mdstat.mount", "proc-meminfo.mount"]


@pytest.mark.parametrize("path", ["/proc/x-y", "proc/x", "/proc/x y", "/"])
def test_mount_unit_refuses_paths_it_cannot_escape(path):
    with pytest.raises(ValueError):
        twinroot.mount_unit(path)


def test_proc_bind_outside_state_dir_is_refused(tmp_path):
    with pytest.raises(ValueError):
        twinroot.write_proc_binds(tmp_path / "root", tmp_path / "state", {"/proc/x": Path("/etc/passwd")})


def test_identity_keeps_an_existing_machine_id(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/machine-id").write_text("")
    twinroot.write_identity(tmp_path, "node09")
    first = (tmp_path / "etc/machine-id").read_text()
    assert len(first.strip()) == 32
    twinroot.write_identity(tmp_path, "node09")
    assert (tmp_path / "etc/machine-id").read_text() == first
    assert (tmp_path / "etc/hostname").read_text() == "node09\n"
    assert "nameserver" not in (tmp_path / "etc/resolv.conf").read_text()


def test_known_hosts_has_one_line_per_address(tmp_path):
    path = tmp_path / "known_hosts"
    ssh.write_known_hosts(path, {"10.203.2.2": "ssh-ed25519 BBBB", "10.203.1.2": "ssh-ed25519 AAAA"})
    assert path.read_text() == "10.203.1.2 ssh-ed25519 AAAA\n10.203.2.2 ssh-ed25519 BBBB\n"


def test_client_keeps_host_key_checking_on(tmp_path):
    argv = ssh.client_argv(tmp_path / "k", tmp_path / "kh", "10.203.1.2")
    assert "StrictHostKeyChecking=yes" in argv
    assert f"UserKnownHostsFile={tmp_path / 'kh'}" in argv
    assert argv[-1] == "root@10.203.1.2"


@pytest.mark.parametrize("name", ["Node01", "1node", "node_01", "", "n" * 64])
def test_bad_twin_names_are_refused(name):
    with pytest.raises(ValidationError):
        TwinRequest(name=name, index=1, profile="ml_prod_v4")


def test_duplicate_requests_are_input_errors():
    reqs = [TwinRequest(name="node01", index=1, profile="p"), TwinRequest(name="node01", index=2, profile="p")]
    with pytest.raises(InputError, match="twin name given twice: node01"):
        lifecycle._check_request(reqs)
    reqs = [TwinRequest(name="node01", index=1, profile="p"), TwinRequest(name="node02", index=1, profile="p")]
    with pytest.raises(InputError, match="twin index given twice: 1"):
        lifecycle._check_request(reqs)
    with pytest.raises(InputError, match="no twin requested"):
        lifecycle._check_request([])


def test_state_round_trip_and_unknown_node(tmp_path):
    with pytest.raises(LabError, match="no twins are up"), state.locked(tmp_path):
        pass
    with state.locked(tmp_path, create=True):
        current = TwinsState(rootfs=tmp_path / "rootfs", twins=[_record(tmp_path)])
        state.save(tmp_path, current)
    loaded = state.load(tmp_path)
    assert loaded == current
    assert state.find(loaded, tmp_path, "node03").slot == 7
    with pytest.raises(LabError, match="no twin named 'node99'"):
        state.find(loaded, tmp_path, "node99")


def test_corrupt_state_is_one_lab_error(tmp_path):
    (tmp_path / "twins").mkdir()
    (tmp_path / "twins/state.json").write_text("{not json")
    with pytest.raises(LabError, match="unreadable twins state"):
        state.load(tmp_path)


def test_unknown_fault_kind_is_input_error(tmp_path, monkeypatch):
    monkeypatch.setenv(hooks.SWITCH_ENV, "off")
    assert hooks.fault_kinds() == frozenset()
    with pytest.raises(InputError, match="unknown fault kind 'gpu_on_fire'"):
        hooks.apply_fault(tmp_path, "gpu_on_fire", clear=False)


def test_status_of_an_empty_lab_is_empty(tmp_path):
    assert lifecycle.status(tmp_path) == []
    lifecycle.down(tmp_path)  # nothing to do, no error
    with pytest.raises(LabError, match="no twins are up"):
        lifecycle.power(tmp_path, "node01", on=True)
    assert not (tmp_path / "twins").exists()  # a late power call does not recreate the lab


def _launch(tmp_path: Path, script: str) -> Path:
    import json

    launch = tmp_path / "launch.json"
    launch.write_text(json.dumps({"argv": ["sh", "-c", script], "log": str(tmp_path / "log"), "cgroup": ""}))
    return launch


def test_supervisor_restarts_on_reboot_exit_and_stops_on_other_exits(tmp_path):
    import subprocess
    import sys

    counter = tmp_path / "boots"
    script = f'echo x >> {counter}; [ "$(wc -l < {counter})" -lt 3 ] && exit 133; exit 0'
    proc = subprocess.run([sys.executable, "-S", str(nspawn.SUPERVISOR), str(_launch(tmp_path, script))],
                          timeout=30, check=False)
    assert proc.returncode == 0
    assert counter.read_text().count("x") == 3  # two reboots, then a poweroff
    log = (tmp_path / "log").read_text()
    assert log.count("nspawn exited 133") == 2 and "nspawn exited 0" in log


def test_supervisor_passes_a_failure_exit_code_on(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-S", str(nspawn.SUPERVISOR), str(_launch(tmp_path, "exit 7"))],
                          timeout=30, check=False)
    assert proc.returncode == 7


def test_supervisor_forwards_sigterm_and_does_not_restart(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    marker = tmp_path / "got-term"
    script = f"trap 'touch {marker}; exit 0' TERM; while :; do sleep 0.1; done"
    proc = subprocess.Popen([sys.executable, "-S", str(nspawn.SUPERVISOR), str(_launch(tmp_path, script))])
    deadline = time.monotonic() + 10
    while "boot 1" not in ((tmp_path / "log").read_text() if (tmp_path / "log").exists() else ""):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert marker.exists()
    assert "boot 2" not in (tmp_path / "log").read_text()


def test_procs_stop_a_process_that_ignores_the_first_sigterm(tmp_path):
    import subprocess

    from provision.lab.twins import procs

    marker = tmp_path / "stubborn"
    # ignores SIGTERM until it has seen one (like a twin that is still booting), then exits on the next
    script = f"n=0; trap 'n=$((n+1)); [ $n -ge 2 ] && exit 0' TERM; touch {marker}; while :; do sleep 0.05; done"
    proc = subprocess.Popen(["sh", "-c", script])
    _wait_for(marker)
    assert procs.alive(proc.pid, str(marker))
    assert not procs.alive(proc.pid, "some-other-marker")  # a reused pid is not ours
    assert procs.stop(proc.pid, str(marker), grace=10, resend=0.5) is True
    assert not procs.alive(proc.pid, str(marker))


def test_procs_kill_after_grace(tmp_path):
    import subprocess

    from provision.lab.twins import procs

    marker = tmp_path / "deaf"
    proc = subprocess.Popen(["sh", "-c", f"trap '' TERM; touch {marker}; while :; do sleep 0.05; done"])
    _wait_for(marker)
    assert procs.stop(proc.pid, str(marker), grace=0.6, resend=0.2) is False  # had to SIGKILL it
    assert not procs.alive(proc.pid, str(marker))


def _wait_for(path: Path) -> None:
    import time

    deadline = time.monotonic() + 10
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)
