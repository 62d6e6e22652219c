"""A real Slurm for the lab: Debian's slurm-wlm 22.05 with munge, slurmctld on the host, slurmd in the twins.

What it does, exactly (the lab tests' Slurm; nothing here is simulated):

- Host: `munged` (its own key, socket, pid, log and seed under a private work directory, never
  /etc/munge or /run/munge) and `slurmctld -D -c` (slurm.conf in the work directory, SlurmUser=root,
  SlurmctldHost=<hostname -s>(the first twin's host-side veth address), ports 16817/16818 so a site's own
  Slurm on 6817/6818 is never met), both children of this process, stopped on exit even on failure.
- Twins: they see no Debian mirror, so the host fetches slurmd, slurm-client, munge and the dependencies
  the twins' cached rootfs lacks with `apt-get download` into a flat repository (cached in the lab cache
  next to the rootfs, `dpkg-scanpackages`). `install_node` puts it, the munge key and the node's
  slurm.conf into the twin's state directory (bound at /var/lib/provision-lab) and, over SSH, installs
  the packages with the twin's own apt (services held back by policy-rc.d while it does), then starts
  the twin's munge and slurmd with its real systemd.
- The node's slurm.conf is the host's, without `AuthInfo=socket=` (the twin's munged uses the default
  socket); `SlurmdParameters=config_overrides` and `CPUs=1 RealMemory=1`, as a twin shows the spec'd
  server's /proc/cpuinfo and /proc/meminfo; proctrack/linuxproc, task/none, no accounting, no cgroups.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from provision.errors import LabError
from provision.lab.twins import rootfs

NODE_PACKAGES = ("slurmd", "slurm-client", "munge")
HOST_PROGRAMS = ("munged", "slurmctld", "scontrol", "sinfo", "apt-get", "dpkg-scanpackages")
CTLD_PORT, SLURMD_PORT = 16817, 16818
REPO_MOUNT = "/var/lib/provision-lab/slurm"


@dataclass(frozen=True)
class LabNode:
    """A twin as Slurm sees it: NodeName, NodeAddr, and the host directory bound at /var/lib/provision-lab."""

    name: str
    address: str
    state_dir: Path


@dataclass
class SlurmLab:
    """A running slurmctld (and munged) on the host."""

    work: Path
    conf: Path
    node_conf: str
    key: Path
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """The environment scontrol/sinfo need here: SLURM_CONF (the munge socket is in slurm.conf)."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, check: bool = True) -> str:
        proc = subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=30, check=False)
        if check and proc.returncode != 0:
            raise LabError(f"{' '.join(argv)}: {proc.stderr.strip() or proc.stdout.strip()}")
        return proc.stdout

    def log_tail(self, lines: int = 15) -> str:
        path = self.work / "slurmctld.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def missing_programs() -> list[str]:
    return [p for p in HOST_PROGRAMS if shutil.which(p) is None]


def slurm_conf(controller_host: str, controller_addr: str, nodes: list[LabNode], work: Path,
               munge_socket: Path | None, extra: str = "") -> str:
    """slurm.conf for the lab (host side with `munge_socket`, node side without)."""
    lines = [
        "ClusterName=provlab",
        f"SlurmctldHost={controller_host}({controller_addr})",
        f"SlurmctldPort={CTLD_PORT}", f"SlurmdPort={SLURMD_PORT}",
        "AuthType=auth/munge", "CredType=cred/munge",
        *([f"AuthInfo=socket={munge_socket}"] if munge_socket else []),
        "SlurmUser=root", "SlurmdUser=root",
        f"StateSaveLocation={work / 'state'}", f"SlurmctldPidFile={work / 'slurmctld.pid'}",
        f"SlurmctldLogFile={work / 'slurmctld.log'}",
        "SlurmdSpoolDir=/var/spool/slurmd", "SlurmdPidFile=/run/slurmd.pid", "SlurmdLogFile=/var/log/slurmd.log",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none", "MpiDefault=none", "ReturnToService=2",
        "SlurmdParameters=config_overrides", "SlurmdTimeout=60",
        *[f"NodeName={n.name} NodeAddr={n.address} CPUs=1 RealMemory=1 State=UNKNOWN" for n in nodes],
        f"PartitionName=lab Nodes={','.join(n.name for n in nodes)} Default=YES State=UP",
    ]  # fmt: skip
    return "\n".join(lines) + "\n" + extra


@contextmanager
def slurm_lab(work: Path, nodes: list[LabNode], controller_addr: str, extra_conf: str = "") -> Iterator[SlurmLab]:
    """munged and slurmctld on the host for `nodes`; both stopped (and waited for) on exit, even on failure."""
    if missing_programs():
        raise LabError(f"Slurm lab: missing {', '.join(missing_programs())} (apt-get install slurm-wlm munge)")
    work.mkdir(mode=0o700, parents=True, exist_ok=True)
    (work / "state").mkdir(exist_ok=True)
    key = work / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o400)
    sock = work / "munge.sock"
    host = socket.gethostname().split(".", 1)[0]
    conf = work / "slurm.conf"
    conf.write_text(slurm_conf(host, controller_addr, nodes, work, sock, extra_conf))
    lab = SlurmLab(work=work, conf=conf, key=key, node_conf=slurm_conf(host, controller_addr, nodes, work, None,
                                                                       extra_conf))
    with ExitStack() as stack:
        stack.callback(_stop_all, lab)
        files = [f"--{kind}-file={work / ('munged.' + kind)}" for kind in ("pid", "log", "seed")]
        lab.procs.append(_spawn(work, "munged", ["munged", "-F", "-f", f"--key-file={key}", f"--socket={sock}",
                                                 *files]))
        _wait_for(lambda: sock.exists(), 15, "munged did not create its socket")
        lab.procs.append(_spawn(work, "slurmctld", ["slurmctld", "-D", "-c", "-f", str(conf)], lab.env))
        _wait_for(lambda: _answers(lab), 30, "slurmctld did not answer `scontrol ping`")
        yield lab


def _spawn(work: Path, name: str, argv: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    with open(work / f"{name}.out", "ab") as out:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
                                start_new_session=True)


def _answers(lab: SlurmLab) -> bool:
    for proc in lab.procs:
        if proc.poll() is not None:
            name = Path(str(proc.args[0] if isinstance(proc.args, list) else proc.args)).name
            raise LabError(f"{name} exited ({proc.returncode}): {lab.log_tail()}")
    return "is UP" in lab.run("scontrol", "ping", check=False)


def _wait_for(ready: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise LabError(f"Slurm lab: {what} within {timeout:g} s")


def _stop_all(lab: SlurmLab) -> None:
    for proc in reversed(lab.procs):  # slurmctld first, then munged: each by its own pid
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


# --- the twins' packages -------------------------------------------------------------------------------


def node_repo(cache: Path | None = None) -> Path:
    """A flat apt repository of NODE_PACKAGES and what the twins' rootfs lacks of their dependencies."""
    cache = cache or rootfs.cache_dir()
    base = rootfs.ensure_rootfs(cache)
    digest = hashlib.sha256(f"{rootfs.recipe_id()}|{','.join(NODE_PACKAGES)}".encode()).hexdigest()[:12]
    target = cache / f"slurm-repo-{digest}"  # built once per rootfs recipe (the closure takes a minute)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "Packages").is_file():
            return target
        work = cache / f"slurm-repo.build-{os.getpid()}"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        try:
            _run(["apt-get", "download", *_missing_from(base, _closure(NODE_PACKAGES))], work, 600)
            (work / "Packages").write_text(_run(["dpkg-scanpackages", "-m", "."], work, 120))
            shutil.rmtree(target, ignore_errors=True)
            work.rename(target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return target


def _closure(packages: tuple[str, ...]) -> list[str]:
    out = _run(["apt-cache", "depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts",
                "--no-breaks", "--no-replaces", "--no-enhances", *packages], Path("/"), 120)
    return sorted({line.strip() for line in out.splitlines() if line and not line[0].isspace()
                   and not line.startswith("<")})


def _missing_from(root: Path, packages: list[str]) -> list[str]:
    installed = set()
    for stanza in (root / "var/lib/dpkg/status").read_text(errors="replace").split("\n\n"):
        name = re.search(r"^Package: (\S+)$", stanza, re.M)
        if name and re.search(r"^Status: install ok installed$", stanza, re.M):
            installed.add(name[1])
    return [p for p in packages if p not in installed and _downloadable(p)]


def _downloadable(package: str) -> bool:
    proc = subprocess.run(["apt-cache", "show", "--no-all-versions", package], capture_output=True, text=True,
                          timeout=30, check=False)
    return proc.returncode == 0 and "Filename:" in proc.stdout  # virtual packages have no file


def _run(argv: list[str], cwd: Path, timeout: float) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise LabError(f"{' '.join(argv[:3])}...: {proc.stderr.strip()[-300:]}")
    return proc.stdout


def stage_node(lab: SlurmLab, node: LabNode, repo: Path) -> None:
    """Put the repository (hard links), the munge key and the node's slurm.conf where the twin sees them."""
    dest = node.state_dir / "slurm"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(repo, dest / "repo", copy_function=os.link)
    (dest / "slurm.conf").write_text(lab.node_conf)
    shutil.copyfile(lab.key, dest / "munge.key")
    (dest / "munge.key").chmod(0o400)


# Run in the twin over SSH (real apt and systemd there). policy-rc.d keeps postinst from starting the
# daemons before their key and config are in place.
INSTALL_SCRIPT = f"""set -e
echo 'deb [trusted=yes] file:{REPO_MOUNT}/repo ./' > /etc/apt/sources.list.d/provision-lab-slurm.list
printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d; chmod 755 /usr/sbin/policy-rc.d
trap 'rm -f /usr/sbin/policy-rc.d' EXIT
apt-get -qq -o Dir::Etc::sourcelist=/etc/apt/sources.list.d/provision-lab-slurm.list \\
  -o Dir::Etc::sourceparts=- -o APT::Get::List-Cleanup=0 update
DEBIAN_FRONTEND=noninteractive apt-get -y -qq install --no-install-recommends {' '.join(NODE_PACKAGES)} >/dev/null
install -d -m 0755 /etc/slurm /var/spool/slurmd
install -m 0644 {REPO_MOUNT}/slurm.conf /etc/slurm/slurm.conf
install -o munge -g munge -m 0400 {REPO_MOUNT}/munge.key /etc/munge/munge.key
rm -f /usr/sbin/policy-rc.d
systemctl restart munge
systemctl restart slurmd
"""


# --- provision itself in the twin ----------------------------------------------------------------------
# A real node gets provision with `pip install`; a twin has no index to install from, so the controller's
# own environment is lent to it: this checkout's `provision` package and the running interpreter's
# site-packages, hard-linked into the state directory (the twin's Python is the same Debian 3.11).
PV_MOUNT = "/var/lib/provision-lab/pv"
SPEC_FILE = "/etc/provision/node.json"
HEALTHCHECK = "/usr/local/sbin/provision-healthcheck"
HEALTHCHECK_LOG = "/var/log/provision-healthcheck.log"


def stage_provision(node: LabNode, source: Path, site_packages: Path, spec_json: str) -> None:
    """provision, its dependencies and the node's spec file where the twin sees them."""
    dest = node.state_dir / "pv"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(source / "provision", dest / "src" / "provision", copy_function=os.link,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(site_packages, dest / "site-packages", copy_function=os.link, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__", "provision", "*.pth", "__editable__*"))
    (dest / "node.json").write_text(spec_json)


# The HealthCheckProgram as a site deploys it (README "Slurm"): the node's quick checks, drain/resume.
HEALTHCHECK_SCRIPT = f"""#!/bin/sh
# Slurm HealthCheckProgram: provision's node-side checks at --level quick; drains/resumes this node.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
exec provision verify --local --spec-file {SPEC_FILE} --level quick --drain >>{HEALTHCHECK_LOG} 2>&1
"""
PROVISION_WRAPPER = f"""#!/bin/sh
PYTHONPATH={PV_MOUNT}/src:{PV_MOUNT}/site-packages exec python3 -m provision.cli "$@"
"""
PROVISION_INSTALL = f"""set -e
install -d -m 0755 /etc/provision
install -m 0644 {PV_MOUNT}/node.json {SPEC_FILE}
cat > /usr/local/sbin/provision <<'_PV_'
{PROVISION_WRAPPER}_PV_
cat > {HEALTHCHECK} <<'_PV_'
{HEALTHCHECK_SCRIPT}_PV_
chmod 755 /usr/local/sbin/provision {HEALTHCHECK}
"""
