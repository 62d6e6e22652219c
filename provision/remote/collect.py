"""`provision collect NODE`: a tarball of logs and diagnostics from a node."""

from __future__ import annotations

import tarfile
import time
from io import BytesIO
from pathlib import Path

from provision.errors import InputError
from provision.private import open_private_bytes
from provision.remote.ssh import run
from provision.spec import HostEntry

# (file name in the bundle, command). nvidia-bug-report.sh writes a gzip; we keep its text.
DIAGNOSTICS: tuple[tuple[str, str], ...] = (
    ("uname.txt", "uname -a"),
    ("os-release.txt", "cat /etc/os-release"),
    ("nvidia-smi-q.txt", "nvidia-smi -q"),
    ("nvidia-smi-topo.txt", "nvidia-smi topo -m"),
    ("nvlink.txt", "nvidia-smi nvlink -s"),
    ("fabricmanager.txt", "systemctl status nvidia-fabricmanager --no-pager"),
    ("ibstat.txt", "ibstat"),
    ("mdstat.txt", "cat /proc/mdstat"),
    ("zpool-status.txt", "zpool status"),
    ("nvme-list.json", "nvme list -o json"),
    ("dmesg.txt", "dmesg --ctime 2>/dev/null | tail -n 2000"),
    ("journal.txt", "journalctl -b --no-pager -n 5000"),
    ("packages.txt", "dpkg-query -W -f='${Package} ${Version} ${db:Status-Abbrev}\\n'"),
    ("nvidia-bug-report.log", "command -v nvidia-bug-report.sh >/dev/null && "
     "nvidia-bug-report.sh --output-file /tmp/nvbr.log >/dev/null 2>&1 && zcat /tmp/nvbr.log.gz"),
)


def collect(host: HostEntry, out_dir: Path) -> Path:
    """Run every diagnostic (failures are kept as their stderr) and write NODE-TIMESTAMP.tar.gz."""
    try:
        out_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out_dir}: cannot create the bundle directory: {exc.strerror}") from None
    bundle = out_dir / f"{host.name}-{time.strftime('%Y%m%dT%H%M%S')}.tar.gz"
    # 0600 from the first byte: the bundle holds the node's logs and inventory
    with open_private_bytes(bundle) as fh, tarfile.open(fileobj=fh, mode="w:gz") as tar:
        for name, command in DIAGNOSTICS:
            res = run(host, command, timeout=300)
            body = res.stdout if res.ok else f"# exit {res.exit_code}\n{res.stdout}\n{res.stderr}"
            _add(tar, f"{host.name}/{name}", body.encode())
    return bundle


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    info.mode = 0o600
    tar.addfile(info, BytesIO(data))
