"""A throwaway PostgreSQL cluster for tests: initdb + pg_ctl in a temp directory, torn down always.

Debian's postgresql package (scripts/bootstrap.sh installs it) ships initdb/pg_ctl under
/usr/lib/postgresql/<major>/bin. PostgreSQL refuses to run as root, so as root the cluster belongs to the
package's `postgres` user (runuser). It listens on 127.0.0.1 on a free port with password (SCRAM) logins, so
the tests go through the same password path an operator's controller does, and on a socket in its directory.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

USER = "provision"


def pg_bindir() -> Path | None:
    """The newest Debian PostgreSQL bin directory holding initdb, or None."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name))
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Cluster:
    directory: Path
    port: int
    password: str

    def url(self, database: str = "postgres", options: str = "") -> str:
        """A URL without the password (the tests pass it as PROVISION_JOURNAL_PASSWORD)."""
        query = f"?options={options}" if options else ""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}{query}"

    def admin(self) -> object:
        import psycopg

        return psycopg.connect(host="127.0.0.1", port=self.port, user=USER, password=self.password,
                               dbname="postgres", autocommit=True)


@contextmanager
def cluster() -> Iterator[Cluster]:
    bindir = pg_bindir()
    if bindir is None:
        raise RuntimeError("PostgreSQL's initdb is not installed (apt-get install postgresql; "
                           "scripts/bootstrap.sh does it)")
    directory = Path(tempfile.mkdtemp(prefix="provision-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(directory, owner.pw_uid, owner.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    password = secrets.token_hex(16)
    pwfile = directory / "pw"
    pwfile.write_text(password + "\n")
    if as_user:
        os.chown(pwfile, pwd.getpwnam("postgres").pw_uid, -1)
    data, log = directory / "data", directory / "log"
    port = _free_port()
    try:
        subprocess.run([*as_user, str(bindir / "initdb"), "-D", str(data), "-U", USER, "--pwfile", str(pwfile),
                        "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync"],
                       check=True, capture_output=True, timeout=120)
        pwfile.unlink()
        opts = (f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={directory} "
                "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200")
        subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", opts,
                        "-w", "-t", "60", "start"], check=True, capture_output=True, timeout=90)
        yield Cluster(directory, port, password)
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                           capture_output=True, timeout=60)
        shutil.rmtree(directory, ignore_errors=True)
