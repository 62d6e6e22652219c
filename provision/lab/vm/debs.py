"""Real Debian packages for the VM: which ones a root filesystem lacks, fetched with apt's own client.

Packages already in the host's apt cache are reused; the others are downloaded with `apt-get download`
from the mirror the host's apt sources name (the only network the builder uses).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from provision.errors import LabError
from provision.lab.twins._cmd import last_line, run

APT_ARCHIVES = Path("/var/cache/apt/archives")
_INST = re.compile(r"^Inst (\S+) (?:\[\S+\] )?\((\S+) ")
KERNEL_META = "linux-image-cloud-amd64"
_KERNEL_DEB = "linux-image-6.1.*-cloud-amd64_*_amd64.deb"


def plan(status: Path, packages: list[str]) -> dict[str, str]:
    """name -> version of what `apt-get install PACKAGES` would add to the system whose dpkg `status` this is."""
    argv = [
        "apt-get", "-s", "-o", f"Dir::State::status={status}",
        "install", "--no-install-recommends", *packages,
    ]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0:  # empty or stale package lists on a fresh machine: refresh once
        run(["apt-get", "-o", "DPkg::Lock::Timeout=300", "update"], timeout=600)
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise LabError(f"apt cannot resolve {', '.join(packages)} for the VM: {last_line(proc.stderr)}")
    found = (_INST.match(line) for line in proc.stdout.splitlines())
    return {m.group(1): m.group(2) for m in found if m}


def installed_version(status: Path, package: str) -> str:
    """The version of `package` a dpkg status file records as installed; LabError when it is not."""
    found = re.search(rf"(?m)^Package: {re.escape(package)}\n(?:[^\n]+\n)*?Version: (\S+)", status.read_text())
    if found is None:
        raise LabError(f"{status}: {package} is not installed")
    return found.group(1)


def deb_file_name(name: str, version: str) -> str:
    """The pool file name glob of NAME at VERSION (an epoch's ':' is written '%3a')."""
    return f"{name}_{version.replace(':', '%3a')}_*.deb"


def fetch(wanted: dict[str, str], dest: Path) -> list[Path]:
    """Copy (from the host's apt cache) or download each name=version into `dest`; return the files."""
    dest.mkdir(parents=True, exist_ok=True)
    files = []
    for name, version in sorted(wanted.items()):
        pattern = deb_file_name(name, version)
        cached = sorted(APT_ARCHIVES.glob(pattern)) or sorted(dest.glob(pattern))
        if cached:
            target = dest / cached[0].name
            if cached[0] != target:
                shutil.copy2(cached[0], target)
        else:
            _download(f"{name}={version}", dest)
            found = sorted(dest.glob(pattern))
            if not found:
                raise LabError(f"apt-get download {name}={version}: no .deb appeared in {dest}")
            target = found[0]
        files.append(target)
    return files


def kernel_deb(dest: Path) -> Path:
    """The Debian cloud kernel image package: the host's cached one, else the one the meta package names."""
    cached = sorted(APT_ARCHIVES.glob(_KERNEL_DEB)) or sorted(dest.glob(_KERNEL_DEB))
    if cached:
        return cached[-1]
    empty = dest / "empty-status"
    empty.write_text("")
    planned = plan(empty, [KERNEL_META])
    images = {n: v for n, v in planned.items() if re.fullmatch(r"linux-image-6\.1\.\S+-cloud-amd64", n)}
    if not images:
        raise LabError(f"apt offers no kernel package through {KERNEL_META}")
    return fetch(images, dest)[0]


def _download(spec: str, dest: Path) -> None:
    proc = subprocess.run(
        ["apt-get", "download", spec], cwd=dest, capture_output=True, text=True, check=False, timeout=600
    )
    if proc.returncode != 0:
        raise LabError(f"apt-get download {spec} failed: {last_line(proc.stderr)}")
