"""SSH for the twins: the lab key pair, per-twin host keys, authorized_keys and the known_hosts file.

Host-key checking stays on for every client: each twin's own host key is recorded under its address.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from provision.errors import LabError
from provision.lab.twins._cmd import run

KEY_NAME = "id_ed25519"
SSHD_DROPIN = """\
# written by provision lab: key-only root login with this twin's own host key
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
"""


def lab_key(lab_dir: Path) -> Path:
    """The lab's client key pair in <lab>/ssh/ (0600), made on first use."""
    ssh_dir = lab_dir / "ssh"
    ssh_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = ssh_dir / KEY_NAME
    if not key.exists():
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "provision-lab", "-f", str(key)])
    key.chmod(0o600)
    return key


def known_hosts_path(lab_dir: Path) -> Path:
    return lab_dir / "known_hosts"


def prepare_root(root: Path, hostname: str, client_pub: str) -> str:
    """Give a twin's root its host key, sshd drop-in and root's authorized_keys; return the host key line."""
    ssh_etc = root / "etc/ssh"
    host_key = ssh_etc / "ssh_host_ed25519_key"
    if not host_key.exists():
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"root@{hostname}", "-f", str(host_key)])
    (ssh_etc / "sshd_config.d").mkdir(parents=True, exist_ok=True)
    (ssh_etc / "sshd_config.d/provision-lab.conf").write_text(SSHD_DROPIN)
    dot_ssh = root / "root/.ssh"
    dot_ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
    auth = dot_ssh / "authorized_keys"
    auth.write_text(client_pub.strip() + "\n")
    auth.chmod(0o600)
    kind, blob = host_key.with_suffix(".pub").read_text().split()[:2]
    return f"{kind} {blob}"


def write_known_hosts(path: Path, entries: dict[str, str]) -> None:
    """Write one line per twin address: `ADDRESS KEYTYPE BASE64`."""
    lines = [f"{address} {key}\n" for address, key in sorted(entries.items())]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(lines))
    os.replace(tmp, path)


def client_argv(key: Path, known_hosts: Path, address: str, port: int = 22) -> list[str]:
    """An ssh command line with host-key checking on, for this lab's twins."""
    return [
        "ssh", "-i", str(key), "-p", str(port),
        "-o", "StrictHostKeyChecking=yes", "-o", f"UserKnownHostsFile={known_hosts}",
        "-o", "GlobalKnownHostsFile=/dev/null", "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
        "-o", "ConnectTimeout=5", "-o", "LogLevel=ERROR", f"root@{address}",
    ]  # fmt: skip


def wait_port(address: str, port: int, deadline: float) -> bool:
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((address, port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def wait_ssh(key: Path, known_hosts: Path, address: str, timeout: float = 240) -> None:
    """Wait until `ssh root@address true` succeeds with host-key checking on."""
    deadline = time.monotonic() + timeout
    last = "port 22 never opened"
    while wait_port(address, 22, deadline):
        proc = subprocess.run(
            [*client_argv(key, known_hosts, address), "true"], capture_output=True, text=True, check=False
        )
        if proc.returncode == 0:
            return
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    raise LabError(f"twin at {address}: ssh not ready after {timeout:.0f} s ({last})")
