"""The cached Debian bookworm root filesystem every twin boots from (read-only lower layer).

Built once with debootstrap from the mirror the host's apt sources use, then reused. No Debian
mirror is configured inside: the twins only ever see the lab's own apt repository.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
from pathlib import Path

from provision.errors import LabError
from provision.lab.twins._cmd import have, ok, run
from provision.lab.twins.mounts import remove_tree

SUITE = "bookworm"
DEFAULT_CACHE = Path("/var/cache/provision-lab")
CACHE_ENV = "PROVISION_LAB_CACHE"
FALLBACK_MIRROR = "http://deb.debian.org/debian"
INCLUDE = (
    "openssh-server", "python3", "python3-apt", "procps", "iproute2", "kmod", "systemd", "systemd-sysv",
    "dbus", "libpam-systemd", "sudo", "e2fsprogs", "util-linux", "gnupg", "ca-certificates", "curl", "less",
)  # fmt: skip
HOST_TOOLS = {
    "debootstrap": "debootstrap",
    "systemd-nspawn": "systemd-container",
    "ip": "iproute2",
    "ssh-keygen": "openssh-client",
    "ssh": "openssh-client",
    "dpkg-scanpackages": "dpkg-dev",
}
STAMP = ".provision-lab-rootfs"
MASKED_UNITS = ("systemd-remount-fs.service",)


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def recipe_id() -> str:
    """Changes whenever what goes into the rootfs changes; a cached tree with another id is rebuilt."""
    text = f"v1|{SUITE}|minbase|{','.join(INCLUDE)}|{','.join(MASKED_UNITS)}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ensure_host_tools() -> None:
    """Install the host packages the twins need when one of their programs is missing."""
    missing = sorted({pkg for prog, pkg in HOST_TOOLS.items() if not have(prog)})
    if not missing:
        return
    if not have("apt-get"):
        raise LabError(f"missing host packages {', '.join(missing)} and no apt-get to install them")
    apt = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", "DPkg::Lock::Timeout=300"]
    install = [*apt, "install", "-y", "--no-install-recommends", *missing]
    if not ok(install, timeout=900):  # empty or stale package lists: refresh once, then retry
        run([*apt, "update"], timeout=600)
        run(install, timeout=900)


def ensure_rootfs(cache: Path | None = None) -> Path:
    """Return the cached rootfs, building it first when absent or built from another recipe."""
    cache = cache or cache_dir()
    target = cache / f"rootfs-{SUITE}"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time; the others wait and reuse
        if _is_ready(target):
            return target
        ensure_host_tools()
        _build(target)
    return target


def _is_ready(target: Path) -> bool:
    stamp = target / STAMP
    return stamp.is_file() and stamp.read_text().strip() == recipe_id()


def _build(target: Path) -> None:
    for stale in target.parent.glob(f"{target.name}.build-*"):
        remove_tree(stale)  # a build that was interrupted (debootstrap mounts /proc and /sys in it)
    work = target.with_name(f"{target.name}.build-{os.getpid()}")
    mirror = host_mirror()
    argv = ["debootstrap", "--variant=minbase", f"--include={','.join(INCLUDE)}", SUITE, str(work), mirror]
    try:
        run(argv, timeout=1800)
        customize(work)
    except BaseException:
        remove_tree(work)
        raise
    (work / STAMP).write_text(recipe_id() + "\n")
    _replace(target, work)


def _replace(target: Path, new: Path) -> None:
    """Put `new` in place of `target`; an old tree still under a running twin's overlay is kept aside."""
    old = target.with_name(f"{target.name}.old-{os.getpid()}")
    in_use = _lower_of_a_mount(target)  # mountinfo keeps the path as mounted, even after a rename
    if target.exists():
        target.rename(old)
    new.rename(target)
    if old.exists() and not in_use:
        remove_tree(old)


def _lower_of_a_mount(path: Path) -> bool:
    needle = f"lowerdir={path.resolve()}"
    return any(needle in line for line in Path("/proc/self/mountinfo").read_text().splitlines())


def customize(root: Path) -> None:
    """Make a fresh debootstrap tree fit to boot as a twin: no mirror, no shared identity."""
    for unit in MASKED_UNITS:
        link = root / "etc/systemd/system" / unit
        link.unlink(missing_ok=True)
        link.symlink_to("/dev/null")
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()  # every twin gets its own host keys
    (root / "etc/apt/sources.list").write_text("")
    for leftover in (root / "var/lib/apt/lists").glob("*_*"):
        leftover.unlink()
    (root / "etc/machine-id").write_text("")
    (root / "var/lib/dbus/machine-id").unlink(missing_ok=True)
    (root / "var/cache/apt/archives").mkdir(parents=True, exist_ok=True)
    for deb in (root / "var/cache/apt/archives").glob("*.deb"):
        deb.unlink()


def host_mirror(etc_apt: Path = Path("/etc/apt")) -> str:
    """The Debian mirror the host's apt sources use for the main suite (fallback deb.debian.org)."""
    for path in sorted(etc_apt.glob("sources.list.d/*.sources")):
        found = _mirror_from_deb822(path.read_text())
        if found:
            return found
    for path in [etc_apt / "sources.list", *sorted(etc_apt.glob("sources.list.d/*.list"))]:
        if path.is_file():
            found = _mirror_from_one_line(path.read_text())
            if found:
                return found
    return FALLBACK_MIRROR


def _mirror_from_deb822(text: str) -> str | None:
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" in fields.get("types", "").split() and SUITE in fields.get("suites", "").split():
            uris = [u for u in fields.get("uris", "").split() if u.startswith(("http://", "https://"))]
            if uris:
                return uris[0]
    return None


def _mirror_from_one_line(text: str) -> str | None:
    for line in text.splitlines():
        words = re.sub(r"\[[^\]]*\]", "", line.split("#", 1)[0]).split()
        if len(words) >= 3 and words[0] == "deb" and words[2] == SUITE and words[1].startswith("http"):
            return words[1]
    return None
