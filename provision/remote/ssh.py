"""Fabric connections with host-key checking ON: unknown or changed host keys are refused."""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import invoke.exceptions
import paramiko
from fabric import Connection
from pydantic import BaseModel, ConfigDict

from provision.errors import InputError, ProvisionError
from provision.redact import scrub
from provision.spec import HostEntry, SshEndpoint


class SshError(ProvisionError):
    """A node could not be reached or a command could not run over SSH."""


# What a node that is rebooting, or a session that drops, raises from a command: invoke's Failure
# (CommandTimedOut, UnexpectedExit), its IO threads' errors, paramiko's, and the socket's.
TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (
    invoke.exceptions.Failure, invoke.exceptions.ThreadException, paramiko.SSHException, EOFError, OSError,
)


def _why(exc: BaseException) -> str:
    """`Type: message` on one line, secrets scrubbed."""
    text = " ".join(str(exc).split())
    return scrub(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:300]


class CommandResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    node: str
    command: str
    exit_code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.exit_code == 0


def endpoint(host: HostEntry) -> SshEndpoint:
    if host.ssh is None:
        raise InputError(f"host {host.name}: no ansible_host set, cannot reach it over SSH")
    return host.ssh


def known_hosts_file(ssh: SshEndpoint) -> Path:
    """The known_hosts file for a node: its own, else the user's."""
    if ssh.known_hosts is not None:
        return ssh.known_hosts
    for token in shlex.split(ssh.common_args):
        if token.startswith("UserKnownHostsFile="):
            return Path(token.split("=", 1)[1])
    return Path.home() / ".ssh" / "known_hosts"


def connect(host: HostEntry, timeout: float = 10.0) -> Connection:
    """An open Fabric connection that checks the host key against known_hosts."""
    ssh = endpoint(host)
    kwargs: dict[str, object] = {"banner_timeout": timeout, "auth_timeout": timeout,
                                 "allow_agent": False, "look_for_keys": ssh.key_file is None}
    if ssh.key_file is not None:
        kwargs["key_filename"] = str(ssh.key_file)
    conn = Connection(host=ssh.host, port=ssh.port, user=ssh.user, connect_kwargs=kwargs,
                      connect_timeout=timeout)
    conn.client.set_missing_host_key_policy(paramiko.RejectPolicy())
    known = known_hosts_file(ssh)
    if known.is_file():
        conn.client.load_host_keys(str(known))
    try:
        conn.open()
    except paramiko.SSHException as exc:
        raise SshError(f"{host.name}: SSH to {ssh.host}:{ssh.port} refused: {exc}") from None
    except EOFError:  # sshd closed the connection mid-handshake (still starting, or going down)
        raise SshError(f"{host.name}: SSH to {ssh.host}:{ssh.port} failed: connection closed during handshake") \
            from None
    except (TimeoutError, OSError) as exc:
        raise SshError(f"{host.name}: SSH to {ssh.host}:{ssh.port} failed: {exc}") from None
    return conn


def run(host: HostEntry, command: str, timeout: float = 60.0) -> CommandResult:
    """Run one command on a node; a non-zero exit is a result, not an error."""
    started = time.monotonic()
    with connect(host) as conn:
        try:
            res = conn.run(command, hide=True, warn=True, timeout=timeout, in_stream=False)
        except TRANSPORT_ERRORS as exc:  # invoke's CommandTimedOut and transport errors, nothing else
            raise SshError(f"{host.name}: {command!r} did not complete: {_why(exc)}") from None
    return CommandResult(node=host.name, command=command, exit_code=res.exited, stdout=res.stdout,
                         stderr=res.stderr, seconds=round(time.monotonic() - started, 3))


def wait_for_ssh(host: HostEntry, timeout: float = 300.0, interval: float = 2.0) -> float:
    """Poll until the node accepts SSH (host key checked); returns seconds waited."""
    started = time.monotonic()
    last = ""
    while time.monotonic() - started < timeout:
        try:
            with connect(host, timeout=min(10.0, interval * 5)) as conn:
                conn.run("true", hide=True, in_stream=False)
            return round(time.monotonic() - started, 3)
        except SshError as exc:
            last = str(exc)
            if "refused:" in last and ("not found in known_hosts" in last or "does not match" in last):
                raise  # an unknown or changed host key is not "not up yet"
        except TRANSPORT_ERRORS as exc:  # the session dropped while the node came up; a bug is not retried
            last = f"session dropped: {_why(exc)}"
        time.sleep(interval)
    raise SshError(f"{host.name}: SSH not up after {timeout:.0f} s ({last})")
