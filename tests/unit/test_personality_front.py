"""The stand-in tools' shell front (data/tools/front.sh): a read-only call is rendered once by the Python
and then served as kept, until something it is rendered from changes (state, faults, dpkg, units, /dev).

Each tool runs as the twin runs it: a `#!/bin/sh` entry point sourcing the front, against a temp lab
state. The Python the front starts is a wrapper that logs each start, so a test sees which calls were
rendered and which were served.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_personality_helpers import CONVERGED, CONVERGED_UNITS, TOOLS, Twin
from test_personality_state import FAULT_EFFECTS, _stable, prepare_for

from provision.lab.twins.personality import apply_fault
from provision.lab.twins.personality.packages import APPTAINER_CONF, LAB_TOOLS_DIR, NVLIBLIST, entry_point


class FrontTwin(Twin):
    """A Twin whose tools run through their entry points and the front, logging every Python start."""

    def __init__(self, base: Path) -> None:
        super().__init__(base)
        self.log = base / "python.log"
        self.cgroup = base / "system.slice"
        self.cgroup.mkdir()
        python = base / "bin" / "logged-python"
        python.write_text(f'#!/bin/sh\necho "$*" >>{self.log}\nexec {sys.executable} "$@"\n')
        python.chmod(0o755)
        self.entries = base / "entries"
        self.entries.mkdir()

    def set_units(self, *units: str) -> None:
        """Active units, as systemd shows them: is-active (the systemctl double) and a cgroup made at each start."""
        super().set_units(*units)
        for group in self.cgroup.iterdir():
            group.rmdir()
        for unit in units:
            (self.cgroup / unit).mkdir()

    def env(self) -> dict[str, str]:
        env = super().env()
        env.update(PROVISION_LAB_TOOLS=str(TOOLS), PROVISION_LAB_PYTHON=str(self.base / "bin" / "logged-python"),
                   PROVISION_LAB_CGROUP=str(self.cgroup))
        return env

    def run(self, tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        entry = self.entries / tool
        if not entry.exists():
            entry.write_text(entry_point(tool).replace(LAB_TOOLS_DIR, str(TOOLS)))
            entry.chmod(0o755)
        done = subprocess.run([str(entry), *args], capture_output=True, text=True, env=self.env(), timeout=60,
                              check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"{tool} {' '.join(args)} exited {done.returncode}: {done.stderr or done.stdout}")
        return done

    def renders(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0


@pytest.fixture
def twin(tmp_path: Path) -> FrontTwin:
    t = FrontTwin(tmp_path)
    t.converge()
    t.set_units(*CONVERGED_UNITS)
    return t


def direct(twin: Twin, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return Twin.run(twin, tool, *args, check=False)


@pytest.mark.parametrize("argv", [
    ("nvidia_smi", "-q"), ("nvidia_smi", "-q", "-x"), ("nvidia_smi", "nvlink", "-s"), ("nvidia_smi", "-L"),
    ("nvidia_smi", "--query-gpu=index,name,memory.total", "--format=csv,noheader"),
    ("nvme", "list", "-o", "json"), ("nvme", "smart-log", "/dev/nvme3n1", "-o", "json"),
    ("smartctl", "-a", "-j", "/dev/nvme6"), ("ibstat",), ("lscpu",), ("dmidecode", "-t", "memory"),
    ("mdadm", "--detail", "/dev/md0"), ("dmesg",),
])
def test_served_output_is_the_rendered_output(twin: FrontTwin, argv: tuple[str, ...]) -> None:
    want = direct(twin, *argv)
    first = twin.run(*argv, check=False)
    assert twin.renders() == 1
    second = twin.run(*argv, check=False)
    assert twin.renders() == 1  # served, not rendered again
    for got in (first, second):
        assert (got.returncode, _stable(got.stdout), got.stderr) == (want.returncode, _stable(want.stdout), "")
    assert second.stdout == first.stdout


@pytest.mark.parametrize("kind", sorted(FAULT_EFFECTS))
def test_a_fault_and_its_clear_change_what_is_served(twin: FrontTwin, kind: str) -> None:
    argv, _marker = FAULT_EFFECTS[kind]
    prepare_for(twin, kind)
    before = _stable(twin.out(*argv))
    assert _stable(twin.out(*argv)) == before
    apply_fault(twin.state, kind, clear=False)
    during = twin.run(*argv, check=False)
    assert _stable(during.stdout) == _stable(direct(twin, *argv).stdout) != before
    apply_fault(twin.state, kind, clear=True)
    assert _stable(twin.out(*argv)) == before


IMAGE = "nvidia/cuda:12.4.1-base-ubuntu22.04"
CONTAINER_PACKAGES = {"nvidia-container-toolkit": "1.17.3-1", "docker-ce": "5:27.4.1-1~debian.12~bookworm",
                      "docker-ce-cli": "5:27.4.1-1~debian.12~bookworm"}


def test_a_containers_nvidia_smi_is_the_hosts_served_and_follows_a_fault(twin: FrontTwin) -> None:
    twin.set_packages({**CONVERGED, **CONTAINER_PACKAGES})
    twin.set_units(*CONVERGED_UNITS, "docker.service")
    twin.run("docker", "pull", IMAGE)
    run = ("docker", "run", "--rm", "--pull=never", "--gpus", "all", IMAGE, "nvidia-smi", "-L")

    def smi_renders() -> int:
        return sum("nvidia_smi.py" in line for line in twin.log.read_text().splitlines())

    host = twin.out("nvidia_smi", "-L")
    assert smi_renders() == 1
    inside = twin.run(*run)
    assert (inside.stdout, inside.stderr, smi_renders()) == (host, "", 1)  # the host's rendering, served
    apply_fault(twin.state, "gpu_missing", clear=False)  # what the container sees follows the twin's GPUs
    missing = twin.run(*run).stdout
    assert missing == direct(twin, "nvidia_smi", "-L").stdout != host
    assert len(missing.splitlines()) == len(host.splitlines()) - 1
    assert smi_renders() == 2  # rendered anew through the front, once
    assert (twin.run(*run).stdout, smi_renders()) == (missing, 2)
    apply_fault(twin.state, "container_gpu_hidden", clear=False)  # checked before the front: never served
    hidden = twin.run(*run, check=False)
    assert (hidden.returncode, hidden.stdout) == (6, "No devices were found\n")


def test_a_new_kernel_written_in_place_changes_the_served_kernel_log(twin: FrontTwin) -> None:
    osrelease = twin.state / "proc" / "sys" / "kernel" / "osrelease"
    osrelease.parent.mkdir(parents=True, exist_ok=True)
    osrelease.write_text("6.1.0-27-amd64\n")
    before = twin.out("dmesg")
    assert "vmlinuz-6.1.0-27-amd64" in before and twin.out("dmesg") == before
    stamp = osrelease.stat().st_mtime_ns
    with osrelease.open("r+") as fh:  # lab_kernel.py rewrites it in place at boot: the state dir is unchanged
        fh.write("6.1.0-28-amd64\n")
    os.utime(osrelease, ns=(stamp + 2_000_000_000, stamp + 2_000_000_000))
    after = twin.out("dmesg")
    assert after == direct(twin, "dmesg").stdout and "vmlinuz-6.1.0-28-amd64" in after
    assert twin.run("dmesg", "-h").stdout.startswith("Usage:")  # an option: run, never served from the log


def _containers(twin: FrontTwin) -> None:
    twin.set_packages({**CONVERGED, **CONTAINER_PACKAGES, "apptainer": "1.3.6"})
    twin.set_units(*CONVERGED_UNITS, "docker.service")


def test_docker_answers_are_served_until_the_daemon_its_config_or_its_images_change(twin: FrontTwin) -> None:
    _containers(twin)
    info = ("docker", "info", "--format", "{{json .Runtimes}}")
    run = ("docker", "run", "--rm", "--pull=never", "--gpus", "all", IMAGE, "nvidia-smi", "-L")
    missing = twin.run(*run, check=False)
    assert missing.returncode == 125 and "No such image" in missing.stderr  # an error: never kept
    twin.run("docker", "pull", IMAGE)  # the images file changes
    host = twin.out("nvidia_smi", "-L")
    assert twin.out(*run) == host
    plain = twin.out(*info)
    starts = twin.renders()
    assert (twin.out(*info), twin.out(*run), twin.renders()) == (plain, host, starts)  # both served
    twin.run("nvidia_ctk", "runtime", "configure", "--runtime=docker")  # daemon.json written
    configured = twin.out(*info)
    assert '"nvidia"' in configured and configured == direct(twin, *info).stdout != plain
    Twin.set_units(twin, *CONVERGED_UNITS)  # docker.service alone stopped (its cgroup gone, the others kept):
    (twin.cgroup / "docker.service").rmdir()  # the daemon's error, not a kept answer
    for argv in (info, run):
        down = twin.run(*argv, check=False)
        assert down.returncode != 0 and "Cannot connect to the Docker daemon" in down.stderr and not down.stdout
    Twin.set_units(twin, *CONVERGED_UNITS, "docker.service")
    (twin.cgroup / "docker.service").mkdir()
    assert (twin.out(*info), twin.out(*run)) == (configured, host)
    (twin.base / "root/var/lib/docker/provision-lab-images.json").write_text("[]\n")  # the image gone
    gone = twin.run(*run, check=False)
    assert gone.returncode == 125 and "No such image" in gone.stderr and not gone.stdout


def test_apptainer_exec_is_served_until_its_image_or_config_change(twin: FrontTwin, tmp_path: Path) -> None:
    _containers(twin)
    sif = str(tmp_path / "cuda.sif")
    exec_nv = ("apptainer", "exec", "--nv", sif, "nvidia-smi", "-L")
    assert twin.run(*exec_nv, check=False).returncode == 255  # no image yet: an error, never kept
    twin.run("apptainer", "pull", sif, f"docker://{IMAGE}")
    no_libs = twin.run(*exec_nv, check=False)  # no nvliblist.conf: the warning, and no GPU
    assert "Could not find any nv files" in no_libs.stderr and not no_libs.stdout
    conf = twin.base / "root" / "etc" / "apptainer"
    conf.mkdir(parents=True, exist_ok=True)
    (conf / "apptainer.conf").write_text(APPTAINER_CONF.replace("{version}", "1.3.6"))
    (conf / "nvliblist.conf").write_text(NVLIBLIST)
    host = twin.out("nvidia_smi", "-L")
    assert twin.out(*exec_nv) == host
    starts = twin.renders()
    assert (twin.out(*exec_nv), twin.renders()) == (host, starts)  # served
    (conf / "nvliblist.conf").write_text("# emptied\n")
    again = twin.run(*exec_nv, check=False)
    assert "Could not find any nv files" in again.stderr and not again.stdout
    (conf / "nvliblist.conf").write_text(NVLIBLIST)
    assert twin.out(*exec_nv) == host
    Path(sif).write_text("not a SIF\n")  # the image replaced
    bad = twin.run(*exec_nv, check=False)
    assert bad.returncode == 255 and "image format not recognized" in bad.stderr


def test_package_and_unit_changes_are_seen(twin: FrontTwin) -> None:
    assert "Driver Version                            : 550.127.08" in twin.out("nvidia_smi", "-q")
    twin.set_packages({"nvidia-driver": "560.35.03-1", "nvidia-kernel-open-dkms": "560.35.03-1"})
    assert "Driver Version                            : 560.35.03" in twin.out("nvidia_smi", "-q")
    twin.converge()
    twin.set_units(*CONVERGED_UNITS)
    assert "In Progress" not in twin.out("nvidia_smi", "-q")
    twin.set_units("nvidia-dcgm.service", "nvidia-persistenced.service")  # fabric manager stopped
    assert "In Progress" in twin.out("nvidia_smi", "-q")
    twin.set_units(*CONVERGED_UNITS)  # started again: a new invocation
    assert "In Progress" not in twin.out("nvidia_smi", "-q")


def test_writes_always_run_and_reads_see_them(twin: FrontTwin) -> None:
    twin.set_units("nvidia-fabricmanager.service")
    assert "Persistence Mode                      : Disabled" in twin.out("nvidia_smi", "-q")
    for _ in range(2):
        assert twin.out("nvidia_smi", "-pm", "1").endswith("All done.\n")
    assert twin.renders() == 3
    assert "Persistence Mode                      : Enabled" in twin.out("nvidia_smi", "-q")


def test_errors_and_odd_arguments_are_never_kept(twin: FrontTwin) -> None:
    for _ in range(2):
        done = twin.run("nvme", "smart-log", "/dev/nvme99n1", "-o", "json", check=False)
        assert done.returncode == 1 and "Failed to open /dev/nvme99n1" in done.stderr
    for _ in range(2):
        assert twin.run("zpool", "status", "no pool", check=False).returncode != 0
    assert twin.renders() == 4
    assert not [p for p in (twin.base / "run" / "render").iterdir() if "99" in p.name or "no pool" in p.name]


def test_a_lost_entry_or_marker_is_rendered_again(twin: FrontTwin) -> None:
    want = twin.out("ibstat")
    render = twin.base / "run" / "render"
    (entry,) = [p for p in render.iterdir() if p.name == "ibstat"]
    (marker,) = [p for p in render.iterdir() if p.name.startswith(".ibstat.") and p.name.endswith(".m")]
    marker.unlink()
    assert twin.out("ibstat") == want and twin.renders() == 2
    entry.unlink()
    assert twin.out("ibstat") == want and twin.renders() == 3
    assert twin.out("ibstat") == want and twin.renders() == 3
    assert all(p.name.endswith(".m") for p in render.iterdir() if p.name.startswith("."))  # no output left behind


def test_outputs_with_quotes_and_no_final_newline_are_served_exactly(twin: FrontTwin, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "front.sh").write_text((TOOLS / "front.sh").read_text())
    text = "it's \\ 'quoted' $HOME `x` %s\n\ttab\n\nend"
    (tools / "lscpu.py").write_text(f"import sys\nsys.stdout.write({text!r})\n")
    env = {**twin.env(), "PROVISION_LAB_TOOLS": str(tools)}
    entry = twin.entries / "lscpu-quoted"
    entry.write_text(entry_point("lscpu").replace(LAB_TOOLS_DIR, str(tools)))
    entry.chmod(0o755)
    got = [subprocess.run([str(entry)], capture_output=True, env=env, check=True).stdout for _ in range(3)]
    assert got == [text.encode()] * 3 and twin.renders() == 1


def test_entry_point_is_a_shell_script_that_sources_the_front() -> None:
    text = entry_point("nvme")
    assert text.startswith("#!/bin/sh\n# LAB STAND-IN: simulated hardware, not the real tool\n")
    assert f". {LAB_TOOLS_DIR}/front.sh" in text
    assert os.access(TOOLS / "nvme.py", os.R_OK) and (TOOLS / "front.sh").is_file()


def test_fabric_manager_daemon_stops_when_a_fault_is_set(twin: FrontTwin) -> None:
    proc = subprocess.Popen([sys.executable, str(TOOLS / "fabricmanager.py")], env=twin.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=3)  # healthy: keeps running across unchanged polls
        apply_fault(twin.state, "fabric_manager_failed", clear=False)
        assert proc.wait(timeout=30) == 1
        assert "LAB FAULT fabric_manager_failed" in (proc.stdout.read() if proc.stdout else "")
    finally:
        proc.kill()
        proc.wait()
