"""Transport security, node side: SSH host keys are checked against known_hosts. A known key connects; an
unknown host and a changed host key are refused, and waiting for SSH does not wait out a changed key.

The server is a real SSH server (paramiko's server side) on loopback in a thread, with its own host key.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import paramiko
import pytest

from provision.remote.ssh import SshError, connect, run, wait_for_ssh
from provision.spec import HostEntry, SshEndpoint, load_fleet


class _Server(paramiko.ServerInterface):
    def __init__(self, client_key: paramiko.PKey) -> None:
        self.client_key = client_key
        self.exec_done = threading.Event()

    def get_allowed_auths(self, username: str) -> str:
        return "publickey"

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        ok = username == "root" and key.get_base64() == self.client_key.get_base64()
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return paramiko.OPEN_SUCCEEDED if kind == "session" else paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel: paramiko.Channel, command: bytes) -> bool:
        def answer() -> None:
            channel.sendall(b"ok\n")
            channel.send_exit_status(0)
            channel.close()

        # Answer after paramiko has acknowledged the exec request: closing the channel before that ack
        # makes the client see "Channel closed" (a race of this test server, not of the code under test).
        timer = threading.Timer(0.2, answer)
        timer.daemon = True
        timer.start()
        return True


@dataclass
class SshServer:
    port: int
    host_key: paramiko.PKey
    client_key_file: Path


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[SshServer]:
    host_key = paramiko.Ed25519Key.from_private_key_file(str(_keygen(tmp_path / "host")))
    client_file = _keygen(tmp_path / "client")
    client_key = paramiko.Ed25519Key.from_private_key_file(str(client_file))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    stop = threading.Event()
    transports: list[paramiko.Transport] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                sock, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            t = paramiko.Transport(sock)
            t.add_server_key(host_key)
            transports.append(t)
            try:
                t.start_server(server=_Server(client_key))
            except (paramiko.SSHException, EOFError, OSError):
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield SshServer(listener.getsockname()[1], host_key, client_file)
    finally:
        stop.set()
        thread.join(5)
        for t in transports:
            t.close()
        listener.close()


def _keygen(path: Path) -> Path:
    """An Ed25519 private key in OpenSSH format (what ssh-keygen writes), via cryptography."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    return path


def _known_hosts(path: Path, port: int, key: paramiko.PKey | None) -> Path:
    path.write_text(f"[127.0.0.1]:{port} {key.get_name()} {key.get_base64()}\n" if key else "")
    return path


def _host(inventory_copy: Path, srv: SshServer, known: Path) -> HostEntry:
    base = load_fleet(inventory_copy).select(["node01"])[0]
    ssh = SshEndpoint(host="127.0.0.1", port=srv.port, user="root", key_file=srv.client_key_file,
                      known_hosts=known)
    return base.model_copy(update={"ssh": ssh})


def test_known_host_key_connects_and_runs(inventory_copy: Path, sshd: SshServer, tmp_path: Path) -> None:
    host = _host(inventory_copy, sshd, _known_hosts(tmp_path / "known", sshd.port, sshd.host_key))
    result = run(host, "true")
    assert result.ok and result.stdout == "ok\n"


def test_unknown_host_is_refused(inventory_copy: Path, sshd: SshServer, tmp_path: Path) -> None:
    host = _host(inventory_copy, sshd, _known_hosts(tmp_path / "known", sshd.port, None))
    with pytest.raises(SshError, match="not found in known_hosts"):
        connect(host)


def test_changed_host_key_is_refused(inventory_copy: Path, sshd: SshServer, tmp_path: Path) -> None:
    other = paramiko.Ed25519Key.from_private_key_file(str(_keygen(tmp_path / "other")))
    host = _host(inventory_copy, sshd, _known_hosts(tmp_path / "known", sshd.port, other))
    with pytest.raises(SshError, match="refused") as err:
        connect(host)
    assert "does not match" in str(err.value)


def test_waiting_for_ssh_stops_at_a_changed_host_key(inventory_copy: Path, sshd: SshServer, tmp_path: Path) -> None:
    """A changed key is not "SSH not up yet": the wait ends at once instead of polling until its timeout."""
    other = paramiko.Ed25519Key.from_private_key_file(str(_keygen(tmp_path / "other")))
    host = _host(inventory_copy, sshd, _known_hosts(tmp_path / "known", sshd.port, other))
    started = time.monotonic()
    with pytest.raises(SshError, match="does not match"):
        wait_for_ssh(host, timeout=20, interval=0.2)
    assert time.monotonic() - started < 15, "waited out the timeout on a changed host key"


def test_the_lab_inventory_tells_ansible_to_check_host_keys() -> None:
    """Ansible side: ansible.cfg keeps host_key_checking on, the lab's SSH args make it strict."""
    from tests.conftest import ROOT

    cfg = (ROOT / "ansible.cfg").read_text()
    assert "host_key_checking = true" in cfg
    lab_vars = (ROOT / "provision" / "lab" / "inventory.py").read_text()
    manager = (ROOT / "provision" / "lab" / "inventory_writer.py").read_text()  # what `lab up` writes
    assert "StrictHostKeyChecking=yes" in lab_vars and "StrictHostKeyChecking=yes" in manager
    assert "StrictHostKeyChecking=no" not in lab_vars + manager
