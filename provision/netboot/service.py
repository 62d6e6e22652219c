"""dnsmasq run by provision (`provision netboot up|down|status`) or by the site (provision writes its files).

up: every refusal first (config.refusals; dnsmasq missing; the loader missing), then the directory
written, `dnsmasq --test` on the config, dnsmasq started (it writes its pid file once it listens); an up
over a running one stops it first. down: the dnsmasq whose pid file and command line name this
directory's config is stopped (SIGTERM, then SIGKILL), then the directory removed: no process, port
or file is left. status: whether it runs, the nodes it answers, its leases, the installs under way.

The os stage writes a node's tftp/<mac>/ (its boot script and the loader) during its install and removes
it after: dnsmasq reads TFTP files as they are asked for, nothing is signalled.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provision.errors import InputError, ProvisionError
from provision.netboot.config import (
    CONF,
    HOSTS,
    LEASES,
    LOADER,
    PID,
    SCRIPT,
    TFTP,
    NetbootNode,
    NetbootSettings,
    mac_dir,
    render_conf,
    render_hosts,
)
from provision.private import ensure_private_dir

DEFAULT_DIR = Path("/var/lib/provision/netboot")
DIR_ENV = "PROVISION_NETBOOT_DIR"
DEFAULT_LOADER = Path("/usr/lib/ipxe/ipxe.efi")


class NetbootError(ProvisionError):
    """dnsmasq would not start or stop (names the directory and dnsmasq's own words)."""


class Lease(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    mac: str
    address: str
    hostname: str


class NetbootStatus(BaseModel):
    """What `netboot status` shows."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    directory: Path
    written: bool
    pid: int | None = None
    nodes: tuple[str, ...] = ()
    """MAC,tag lines of the hosts file, as node tags."""
    leases: tuple[Lease, ...] = ()
    installing: tuple[str, ...] = ()
    """Node tags (or MACs) whose boot entry the os stage has written (an install under way)."""


def default_dir() -> Path:
    return Path(os.environ.get(DIR_ENV) or DEFAULT_DIR)


def dnsmasq_binary() -> str | None:
    return shutil.which("dnsmasq") or next((p for p in ("/usr/sbin/dnsmasq", "/sbin/dnsmasq") if Path(p).is_file()),
                                           None)


def running_pid(directory: Path) -> int | None:
    """The pid of the dnsmasq that runs on `directory`'s config (its pid file, checked against its command
    line, so a reused pid is never signalled); None: none runs."""
    try:
        pid = int((directory / PID).read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        return None
    return pid if str(directory / CONF) in cmdline and any(c.endswith("dnsmasq") for c in cmdline[:1]) else None


def write_files(settings: NetbootSettings, nodes: list[NetbootNode], loader: Path | None) -> None:
    """The directory: config, hosts file, tftp/ with the loader (installs under way keep their tftp/<mac>/)."""
    d = ensure_private_dir(settings.directory, parents=True)
    (d / TFTP).mkdir(mode=0o755, exist_ok=True)
    if loader is not None:
        shutil.copyfile(loader, d / TFTP / LOADER)
    _atomic(d / HOSTS, render_hosts(nodes))
    _atomic(d / CONF, render_conf(settings, getpass.getuser()))


def up(settings: NetbootSettings, nodes: list[NetbootNode], loader: Path | None, run: bool = True,
       timeout_s: float = 10.0) -> int | None:
    """Write the files; with `run`, (re)start dnsmasq on them and return its pid. Refusals come first."""
    binary = dnsmasq_binary()
    if run and binary is None:
        raise InputError("netboot: dnsmasq is not installed (apt-get install dnsmasq-base), or use --write-only "
                         "and run it yourself")
    if loader is not None and not loader.is_file():
        raise InputError(f"netboot: --loader {loader}: no such file (the iPXE EFI binary: apt-get install ipxe)")
    if run:
        stop(settings.directory)
    write_files(settings, nodes, loader)
    if not run:
        return None
    assert binary is not None
    conf = str(settings.directory / CONF)
    test = subprocess.run([binary, "--test", "-C", conf], capture_output=True, text=True, timeout=30, check=False)
    if test.returncode != 0:
        raise NetbootError(f"netboot: dnsmasq refuses {conf}: {_last(test.stderr or test.stdout)}")
    started = subprocess.run([binary, "-C", conf], capture_output=True, text=True, timeout=30, check=False)
    if started.returncode != 0:
        raise NetbootError(f"netboot: dnsmasq did not start on {settings.interface}: "
                           f"{_last(started.stderr or started.stdout)}")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pid = running_pid(settings.directory)
        if pid is not None:
            return pid
        time.sleep(0.05)
    raise NetbootError(f"netboot: dnsmasq wrote no pid file in {settings.directory} within {timeout_s:.0f} s")


def stop(directory: Path, timeout_s: float = 10.0) -> bool:
    """Stop the dnsmasq running on `directory` (True: one ran); NetbootError if it stays."""
    pid = running_pid(directory)
    if pid is None:
        return False
    for sig, wait in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if running_pid(directory) != pid:
                return True
            time.sleep(0.05)
    raise NetbootError(f"netboot: dnsmasq (pid {pid}) on {directory} did not stop")


def down(directory: Path) -> bool:
    """Stop dnsmasq and remove the directory; True: there was something to take down."""
    ran = stop(directory)
    existed = directory.exists()
    shutil.rmtree(directory, ignore_errors=False) if existed else None
    return ran or existed


def status(directory: Path) -> NetbootStatus:
    if not (directory / CONF).is_file():
        return NetbootStatus(directory=directory, written=False)
    tags = tuple(line.split(",set:", 1)[1].strip() for line in _lines(directory / HOSTS) if ",set:" in line)
    leases = tuple(Lease(mac=f[1], address=f[2], hostname=f[3]) for f in
                   (line.split() for line in _lines(directory / LEASES)) if len(f) >= 4)
    macs = {line.split(",", 1)[0]: line.split(",set:", 1)[1].strip() for line in _lines(directory / HOSTS)
            if ",set:" in line}
    installing = tuple(sorted(macs.get(p.name.replace("-", ":"), p.name) for p in (directory / TFTP).glob("*")
                              if p.is_dir()))
    return NetbootStatus(directory=directory, written=True, pid=running_pid(directory), nodes=tags, leases=leases,
                         installing=installing)


def hosts_entry(directory: Path, node: str) -> NetbootNode | None:
    """The node's line of the hosts file `netboot up` wrote (None: it is not there)."""
    tag = NetbootNode(name=node, mac="00:00:00:00:00:00").tag
    for line in _lines(directory / HOSTS):
        mac, _, rest = line.partition(",set:")
        if rest.strip() == tag:
            return NetbootNode(name=node, mac=mac.strip())
    return None


def add_boot_entry(directory: Path, node: NetbootNode, script: str) -> Path:
    """The node's tftp/<mac>/: its boot script and the loader, read over TFTP by its MAC only."""
    root = directory / TFTP / mac_dir(node.mac)
    root.mkdir(mode=0o755, exist_ok=True)
    loader = directory / TFTP / LOADER
    if loader.is_file():
        shutil.copyfile(loader, root / LOADER)  # this MAC's root replaces tftp/ for every file it reads
    _atomic(root / SCRIPT, script)
    return root


def remove_boot_entry(directory: Path, node: str) -> bool:
    """Remove the node's tftp/<mac>/ (True: there was one); its next network boot finds no script."""
    entry = hosts_entry(directory, node)
    root = directory / TFTP / mac_dir(entry.mac) if entry is not None else None
    if root is None or not root.exists():
        return False
    shutil.rmtree(root)
    return True


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _lines(path: Path) -> list[str]:
    try:
        return [ln for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    except OSError:
        return []


def _last(text: str) -> str:
    return (text.strip().splitlines() or ["no output"])[-1][:300]
