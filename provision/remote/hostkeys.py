"""SSH host keys the project decides: a new node's key pair made here, its public half in known_hosts.

The os stage makes each node's host key before the install (as Ironic hands a node its config drive), so
the key SSH must later present is known before the node ever boots: nothing has to come back from the
installer. The private half is a secret: written only into a directory of mode 0700 as a file of mode
0600, never logged, never in argv or the environment, removed when the install is over.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from provision.errors import InputError, ProvisionError
from provision.spec import SshEndpoint

KEY_NAME = "ssh_host_ed25519_key"


class HostKeyError(ProvisionError):
    """A host key pair could not be made, or known_hosts could not be read or written."""


def host_pattern(ssh: SshEndpoint) -> str:
    """How known_hosts names the endpoint: `host` on port 22, `[host]:port` otherwise (as ssh writes it)."""
    return ssh.host if ssh.port == 22 else f"[{ssh.host}]:{ssh.port}"


def fingerprint(public_line: str) -> str:
    """`SHA256:...` of an OpenSSH public key line (as `ssh-keygen -l` prints it)."""
    parts = public_line.split()
    if len(parts) < 2:
        raise HostKeyError(f"not an OpenSSH public key: {public_line[:40]!r}")
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except ValueError:
        raise HostKeyError(f"not an OpenSSH public key (bad base64): {public_line[:40]!r}") from None
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def expected_key(known_hosts: Path, pattern: str) -> str | None:
    """The `type base64` key known_hosts records for exactly `pattern` (None: none). Hashed entries are
    not read: the project writes plain ones for the nodes it installs."""
    try:
        text = known_hosts.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HostKeyError(f"{known_hosts}: cannot read: {exc.strerror or exc}") from None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3 and not line.startswith("#") and pattern in fields[0].split(","):
            return f"{fields[1]} {fields[2]}"
    return None


def record_key(known_hosts: Path, pattern: str, public_line: str) -> None:
    """Make `public_line` the one key known_hosts holds for `pattern` (other lines kept; atomic replace)."""
    kind, blob = public_line.split()[:2]
    try:
        old = known_hosts.read_text(encoding="utf-8").splitlines() if known_hosts.exists() else []
        kept = [ln for ln in old if not (ln.split() and pattern in ln.split()[0].split(","))]
        known_hosts.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=known_hosts.parent, prefix=".known_hosts.")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("\n".join([*kept, f"{pattern} {kind} {blob}"]) + "\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, known_hosts)
    except OSError as exc:
        raise HostKeyError(f"{known_hosts}: cannot record the host key of {pattern}: {exc.strerror or exc}") from None


def private_dir(root: Path, name: str) -> Path:
    """`root/name`, a fresh directory of mode 0700 (a stale one from a killed run is removed first)."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = root.stat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise InputError(f"{root}: must be owned by uid {os.getuid()} and not open to others (mode 0700)")
    path = root / name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(mode=0o700)
    return path


def make_key_pair(directory: Path, comment: str) -> str:
    """An ed25519 host key pair in `directory` (KEY_NAME, mode 0600, and KEY_NAME.pub); returns the
    public line. ssh-keygen's own output is never shown (it prints the key's art and fingerprint only,
    but nothing of it is needed)."""
    if shutil.which("ssh-keygen") is None:
        raise HostKeyError("ssh-keygen not found (openssh-client): needed to make the node's host key")
    key = directory / KEY_NAME
    proc = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(key)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, check=False)
    if proc.returncode != 0 or not key.is_file():
        raise HostKeyError(f"ssh-keygen failed (exit {proc.returncode}) making the host key in {directory}")
    key.chmod(0o600)
    return key.with_suffix(".pub").read_text(encoding="utf-8").strip()
