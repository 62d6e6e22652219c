"""Node twins against the real thing: systemd-nspawn, network namespaces, sshd, systemd (needs root).

Two twins come up once for the module and always go down at the end, even on failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from provision.lab import twins
from provision.lab.twins import cgroup, hooks
from provision.lab.twins.models import TwinInfo, TwinRequest
from provision.lab.twins.ssh import client_argv
from provision.spec import NodeSpec, load_fleet

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.lab,
    pytest.mark.twins,
    pytest.mark.skipif(os.geteuid() != 0 or not Path("/run").is_dir(), reason="node twins need root"),
]


def _spec_for(profile: str) -> NodeSpec:
    fleet = load_fleet(ROOT / "inventory" / "hosts.yml")
    return next(h.spec for h in fleet.hosts.values() if h.profile == profile)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory):
    lab_dir = tmp_path_factory.mktemp("twins-lab")
    nodes = [TwinRequest(name=f"node{i:02d}", index=i, profile="ml_prod_v4") for i in (1, 2)]
    try:
        infos = twins.up(lab_dir, nodes, _spec_for)
        yield lab_dir, {i.name: i for i in infos}
    finally:
        twins.down(lab_dir)


def ssh(info: TwinInfo, command: str, check: bool = True, known_hosts: Path | None = None) -> str:
    argv = [*client_argv(info.key_file, known_hosts or info.known_hosts, info.address, info.port), command]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"ssh {info.name} {command!r}: exit {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def boot_id(info: TwinInfo) -> str:
    return ssh(info, "cat /proc/sys/kernel/random/boot_id").strip()


def wait_for_new_boot(info: TwinInfo, old: str, timeout: float = 90) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            new = boot_id(info)
        except (AssertionError, subprocess.TimeoutExpired):
            new = ""
        if new and new != old:
            return new
        time.sleep(0.5)
    raise AssertionError(f"{info.name} did not come back with a new boot id within {timeout} s")


def test_each_twin_answers_ssh_as_itself(lab):
    _, infos = lab
    assert sorted(infos) == ["node01", "node02"]
    addresses = {i.address for i in infos.values()}
    assert len(addresses) == 2
    for name, info in infos.items():
        assert ssh(info, "hostname").strip() == name
        assert ssh(info, "ip -4 -o addr show eth0").split()[3] == f"{info.address}/24"
        assert info.key_file.stat().st_mode & 0o077 == 0
        assert "nameserver" not in ssh(info, "cat /etc/resolv.conf")
        ssh(info, "ip link set eth0 mtu 1400 && ip link set eth0 mtu 1500")  # NET_ADMIN in its own netns
    state = json.loads((lab[0] / "twins" / "state.json").read_text())
    for twin in state["twins"]:
        host_if = f"plv{twin['slot']}"
        assert Path(f"/proc/sys/net/ipv4/conf/{host_if}/forwarding").read_text().strip() == "0"


def test_wrong_host_key_is_refused(lab, tmp_path):
    _, infos = lab
    info = infos["node01"]
    other_key = infos["node02"].known_hosts.read_text().splitlines()
    node02_line = next(line for line in other_key if line.startswith(infos["node02"].address + " "))
    forged = tmp_path / "known_hosts"
    forged.write_text(f"{info.address} {node02_line.split(' ', 1)[1]}\n")
    argv = [*client_argv(info.key_file, forged, info.address), "true"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 255
    assert "host key" in proc.stderr.lower()


def test_systemd_is_running(lab):
    _, infos = lab
    for info in infos.values():
        state = ssh(info, "systemctl is-system-running --wait", check=False).strip()
        failed = ssh(info, "systemctl --failed --no-legend --plain", check=False).strip()
        assert state in {"running", "degraded"}, failed
        assert ssh(info, "systemctl is-active ssh.service").strip() == "active"


def test_no_debian_mirror_only_the_lab_repo(lab):
    _, infos = lab
    for info in infos.values():
        assert ssh(info, "cat /etc/apt/sources.list; ls -A /etc/apt/sources.list.d").strip() == ""
        assert re.fullmatch(r"http://10\.203\.\d+\.1:\d+/", info.repo_url)
        assert info.repo_url.split("//")[1].split(":")[0] == info.address.rsplit(".", 1)[0] + ".1"
        index = ssh(info, f"curl -fsS {info.repo_url}Packages")
        host_index = (info.key_file.parents[1] / "repo" / "Packages").read_text()
        assert index == host_index


def test_reboot_inside_keeps_state(lab):
    _, infos = lab
    info = infos["node02"]
    ssh(info, "echo kept > /root/reboot-marker")
    before = boot_id(info)
    ssh(info, "systemctl reboot", check=False)
    wait_for_new_boot(info, before)
    assert ssh(info, "cat /root/reboot-marker").strip() == "kept"
    assert ssh(info, "systemctl is-active provision-lab-proc-binds.service").strip() == "active"
    assert [i.running for i in twins.status(lab[0])] == [True, True]


def test_power_off_then_on(lab):
    lab_dir, infos = lab
    info = infos["node01"]
    ssh(info, "echo kept > /root/power-marker")
    before = boot_id(info)
    twins.power(lab_dir, "node01", on=False)
    status = {i.name: i.running for i in twins.status(lab_dir)}
    assert status == {"node01": False, "node02": True}
    assert subprocess.run([*client_argv(info.key_file, info.known_hosts, info.address), "true"],
                          capture_output=True, timeout=30, check=False).returncode == 255
    twins.power(lab_dir, "node01", on=True, wait=True)
    assert wait_for_new_boot(info, before) != before
    assert ssh(info, "cat /root/power-marker").strip() == "kept"


def test_second_lab_runs_side_by_side(lab, tmp_path):
    _, infos = lab
    other = tmp_path / "other-lab"
    try:
        (mine,) = twins.up(other, [TwinRequest(name="node01", index=1, profile="ml_prod_v4")], _spec_for)
        assert mine.address not in {i.address for i in infos.values()}
        assert mine.known_hosts != infos["node01"].known_hosts
        assert ssh(mine, "hostname").strip() == "node01"
    finally:
        twins.down(other)
    assert ssh(infos["node01"], "hostname").strip() == "node01"  # the first lab is untouched


def test_ansible_reaches_twins_with_host_key_checking(lab, tmp_path):
    _, infos = lab
    inventory = _inventory(tmp_path, infos)
    out = _ansible(tmp_path, inventory, "command", "cat /etc/hostname")
    for name in infos:
        assert re.search(rf"^{name} \| CHANGED \| rc=0 >>\n{name}$", out, re.M), out


def test_ansible_reboot_module_works(lab, tmp_path):
    _, infos = lab
    info = infos["node02"]
    before = boot_id(info)
    inventory = _inventory(tmp_path, {"node02": info})
    out = _ansible(tmp_path, inventory, "ansible.builtin.reboot", "reboot_timeout=120")
    assert re.search(r"^node02 \| CHANGED", out, re.M), out
    assert boot_id(info) != before


needs_personality = pytest.mark.skipif(hooks.personality() is None, reason="no twin personality installed")


@needs_personality
def test_twins_present_the_spec_server(lab, tmp_path):
    _, infos = lab
    spec = _spec_for("ml_prod_v4")
    out = _ansible(tmp_path, _inventory(tmp_path, infos), "command", "nvidia-smi -L")
    blocks = _per_host(out)
    assert sorted(blocks) == sorted(infos), out
    for block in blocks.values():
        gpus = [line for line in block.splitlines() if line.startswith("GPU ")]
        assert len(gpus) == spec.gpu.count == 8, block
        assert all(f": {spec.gpu.model} (UUID: GPU-" in g for g in gpus), block
    for info in infos.values():
        total_gib = int(ssh(info, "free -g").splitlines()[1].split()[1])
        assert abs(total_gib - spec.memory.total_gb) / spec.memory.total_gb < 0.05, total_gib
        threads = int(ssh(info, "grep -c ^processor /proc/cpuinfo"))
        assert threads == spec.cpu.total_threads
        assert spec.cpu.model in ssh(info, "grep -m1 '^model name' /proc/cpuinfo")


@needs_personality
def test_faults_reach_the_twin_and_clear(lab):
    lab_dir, infos = lab
    info = infos["node01"]
    assert ssh(info, "nvidia-smi -L").count("GPU ") == 8
    twins.fault(lab_dir, "node01", "gpu_missing", clear=False)
    try:
        assert ssh(info, "nvidia-smi -L").count("GPU ") == 7
        assert ssh(infos["node02"], "nvidia-smi -L").count("GPU ") == 8
    finally:
        twins.fault(lab_dir, "node01", "gpu_missing", clear=True)
    assert ssh(info, "nvidia-smi -L").count("GPU ") == 8


def test_down_leaves_nothing_behind(lab):
    lab_dir, _ = lab
    state = json.loads((lab_dir / "twins" / "state.json").read_text())
    slots = [t["slot"] for t in state["twins"]]
    pids = [t["supervisor_pid"] for t in state["twins"]] + [state["repo"]["pid"]]
    twins.down(lab_dir)
    twins.down(lab_dir)  # idempotent
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    assert str(lab_dir) not in ps
    assert str(lab_dir) not in Path("/proc/self/mountinfo").read_text()
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
    for slot in slots:
        assert not re.search(rf"^pl-node{slot:02d}\b", netns, re.M)
        assert not re.search(rf"^\d+: plv{slot}[@:]", links, re.M)
        assert cgroup.groups_for(f"pl-node{slot:02d}") == []
        assert not Path(f"/run/systemd/nspawn/propagate/pl-node{slot:02d}").exists()
    for made in ("twins", "known_hosts", "repo", "ssh"):
        assert not (lab_dir / made).exists(), made
    assert twins.status(lab_dir) == []


def _per_host(out: str) -> dict[str, str]:
    """Split `ansible -m command` output into each host's stdout."""
    parts = re.split(r"^(\S+) \| CHANGED \| rc=0 >>$", out, flags=re.M)
    return {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts) - 1, 2)}


def _inventory(tmp_path: Path, infos: dict[str, TwinInfo]) -> Path:
    lines = ["all:", "  hosts:"]
    for info in infos.values():
        lines += [
            f"    {info.name}:",
            f"      ansible_host: {info.address}",
            f"      ansible_user: {info.user}",
            f"      ansible_ssh_private_key_file: {info.key_file}",
            f"      ansible_ssh_common_args: -o UserKnownHostsFile={info.known_hosts} -o StrictHostKeyChecking=yes",
        ]
    path = tmp_path / "hosts.yml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _ansible(tmp_path: Path, inventory: Path, module: str, args: str) -> str:
    env = dict(os.environ, ANSIBLE_HOST_KEY_CHECKING="True", ANSIBLE_CONFIG=str(tmp_path / "none.cfg"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"), ANSIBLE_SSH_CONTROL_PATH_DIR=str(tmp_path / "cp"))
    ansible = shutil.which("ansible") or str(Path(sys.executable).with_name("ansible"))
    proc = subprocess.run([ansible, "-i", str(inventory), "all", "-m", module, "-a", args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180, env=env, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_failed_up_leaves_nothing_behind(tmp_path, monkeypatch):
    from provision.errors import LabError
    from provision.lab.twins import lifecycle

    calls: list[str] = []

    def broken_prepare(state_dir: Path, spec: NodeSpec, index: int) -> None:
        calls.append(str(state_dir))
        if len(calls) == 2:  # the first twin is prepared, its netns and overlay exist
            raise LabError("personality broke on purpose")

    monkeypatch.setattr(lifecycle.hooks, "prepare_node", broken_prepare)
    lab_dir = tmp_path / "broken-lab"
    nodes = [TwinRequest(name=f"node{i:02d}", index=i, profile="ml_prod_v4") for i in (1, 2)]
    before = _netns_names()
    with pytest.raises(LabError, match="broke on purpose"):
        twins.up(lab_dir, nodes, _spec_for)
    assert len(calls) == 2
    assert str(lab_dir) not in Path("/proc/self/mountinfo").read_text()
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    assert str(lab_dir) not in ps
    # ours never ran a twin, so any namespace left idle would be ours; other labs' new ones are busy
    left_idle = [n for n in _netns_names() - before if not _netns_busy(n)]
    assert left_idle == []
    assert not (lab_dir / "known_hosts").exists() and not (lab_dir / "repo").exists()
    twins.down(lab_dir)
    assert not (lab_dir / "twins").exists()


def _netns_names() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def _netns_busy(name: str) -> bool:
    return bool(subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, check=False).stdout)
