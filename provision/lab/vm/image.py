"""Build (once, cached) the VM's bootable image from the twins' cached Debian rootfs.

The image directory holds the cloud kernel, a busybox initramfs, an ext4 root image (made with
`mke2fs -d`, no loop device) and a flat apt repository holding the real mdadm. The root gets the
kernel's modules, udev and initramfs-tools (so the role's initramfs handler really rebuilds
/boot/initrd.img-<version>), nfs-kernel-server (disabled; tests/vm/test_nfs_vm.py starts it), static
networking for qemu's user-mode network, and no mdadm: the role installs it from the repository, as on a node.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from provision.errors import LabError
from provision.lab.guestnet import GATEWAY
from provision.lab.twins import rootfs
from provision.lab.twins._cmd import have, last_line, run
from provision.lab.twins.mounts import remove_tree
from provision.lab.vm import debs, initrd
from provision.lab.vm.models import VmImage

# nfs-kernel-server (and with it nfs-common): the NFS test's server, installed here natively (its postinst
# takes minutes under plain emulation); disabled, the test starts it.
IMAGE_PACKAGES = ["udev", "initramfs-tools", "nfs-kernel-server"]
REPO_PACKAGES = ["mdadm"]  # what the role installs (at the spec's pinned version) from the repository
ROOT_SIZE = "2G"
GUEST_ADDRESS = "10.0.2.15/24"
NETWORK_UNIT = f"""[Match]
Name=en* eth*

[Network]
Address={GUEST_ADDRESS}
Gateway={GATEWAY}
"""
# Under plain emulation mkinitramfs with MODULES=most takes minutes; the VM never boots the image it
# makes (qemu gets our own initramfs), so it is kept to the listed modules plus what hooks (mdadm's) add.
INITRAMFS_CONF = "# written by provision's VM builder: plain emulation is slow\nMODULES=list\nCOMPRESS=gzip\n"
STAMP = "image.json"


def ensure_image(cache: Path | None = None) -> VmImage:
    """Return the cached image, building it first when absent (one builder at a time)."""
    if not have("qemu-system-x86_64"):
        raise LabError("qemu-system-x86_64 not found: PROVISION_TEST_VM=1 scripts/bootstrap.sh installs it")
    cache = cache or rootfs.cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".vm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        base = rootfs.ensure_rootfs(cache)
        kernel_deb = debs.kernel_deb(cache / "vm-debs")
        status = base / "var/lib/dpkg/status"
        image_set = debs.plan(status, IMAGE_PACKAGES)
        repo_set = {k: v for k, v in debs.plan(status, IMAGE_PACKAGES + REPO_PACKAGES).items() if k not in image_set}
        target = cache / f"vm-{_recipe(base, kernel_deb, image_set, repo_set)}"
        stamp = target / STAMP
        if stamp.is_file():
            return VmImage.model_validate_json(stamp.read_text())
        for stale in cache.glob("vm-*.build-*"):
            remove_tree(stale)  # a build that was interrupted (we hold the lock: nobody else builds)
        image = _build(target, base, kernel_deb, image_set, repo_set, cache / "vm-debs")
        for old in cache.glob("vm-*"):
            if old.is_dir() and old.name not in (target.name, "vm-debs") and ".build-" not in old.name:
                remove_tree(old)  # images of another recipe
    return image


def _recipe(base: Path, kernel_deb: Path, image_set: dict[str, str], repo_set: dict[str, str]) -> str:
    parts = [
        "v1", (base / rootfs.STAMP).read_text().strip(), kernel_deb.name, ROOT_SIZE, NETWORK_UNIT,
        initrd.INIT, INITRAMFS_CONF, repr(sorted(image_set.items())), repr(sorted(repo_set.items())),
    ]  # fmt: skip
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def _build(
    target: Path, base: Path, kernel_deb: Path, image_set: dict[str, str], repo_set: dict[str, str], deb_cache: Path
) -> VmImage:
    work = target.with_name(f"{target.name}.build-{os.getpid()}")
    remove_tree(work)
    try:
        work.mkdir(parents=True)
        tree = work / "tree"
        run(["cp", "-a", str(base), str(tree)], timeout=600)
        (tree / rootfs.STAMP).unlink(missing_ok=True)
        version = _add_kernel(tree, kernel_deb, work)
        _install(tree, debs.fetch(image_set, deb_cache))
        _configure(tree)
        busybox = _busybox(deb_cache, work)
        boot_initrd = initrd.build(work / "initrd.gz", busybox, tree / "lib/modules" / version)
        shutil.copy2(boot_initrd, tree / "boot" / f"initrd.img-{version}")  # what update-initramfs -u replaces
        shutil.copy2(busybox, work / "busybox")
        remove_tree(work / "busybox-deb")
        (work / "modules").mkdir()
        for name, path in initrd.module_files(tree / "lib/modules" / version).items():
            shutil.copy2(path, work / "modules" / f"{name}.ko")  # for each run's own initramfs
        _make_repo(work / "repo", debs.fetch(repo_set, deb_cache))
        run(["mke2fs", "-q", "-t", "ext4", "-L", "provision-vm", "-d", str(tree), str(work / "root.img"), ROOT_SIZE],
            timeout=600)  # fmt: skip
        remove_tree(tree)
    except BaseException:
        remove_tree(work)
        raise
    remove_tree(target)
    work.rename(target)
    image = VmImage(
        directory=target, kernel=target / "vmlinuz", kernel_version=version,
        root_image=target / "root.img", repo=target / "repo", built=True,
    )  # fmt: skip
    (target / STAMP).write_text(image.model_copy(update={"built": False}).model_dump_json(indent=1))
    return image


def _chroot(tree: Path, *env: str) -> list[str]:
    return ["chroot", str(tree), "env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive",
            *env]


def _add_kernel(tree: Path, kernel_deb: Path, work: Path) -> str:
    """Unpack the kernel package (modules, /boot) into the root; run depmod there; return the version.

    Unpacked aside first: extracting straight into the tree would replace its /lib -> usr/lib link.
    """
    unpacked = work / "kernel-deb"
    run(["dpkg-deb", "-x", str(kernel_deb), str(unpacked)], timeout=300)
    versions = sorted(p.name for p in (unpacked / "lib/modules").iterdir())
    if len(versions) != 1:
        raise LabError(f"{kernel_deb.name}: expected one kernel version, found {versions}")
    version = versions[0]
    (tree / "usr/lib/modules").mkdir(parents=True, exist_ok=True)
    shutil.move(unpacked / "lib/modules" / version, tree / "usr/lib/modules" / version)
    for item in (unpacked / "boot").iterdir():
        shutil.move(item, tree / "boot" / item.name)
    remove_tree(unpacked)
    run([*_chroot(tree), "depmod", version], timeout=300)
    shutil.copy2(tree / "boot" / f"vmlinuz-{version}", work / "vmlinuz")
    return version


def _install(tree: Path, files: list[Path], dpkg_options: tuple[str, ...] = (), env: tuple[str, ...] = ()) -> None:
    """dpkg -i the packages inside the root (no service is started: policy-rc.d says no); `env`: VAR=value
    for the maintainer scripts."""
    staging = tree / "tmp/provision-debs"
    staging.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy2(f, staging / f.name)
    policy = tree / "usr/sbin/policy-rc.d"
    policy.write_text("#!/bin/sh\nexit 101\n")
    policy.chmod(0o755)
    try:
        names = [f"/tmp/provision-debs/{f.name}" for f in files]
        run([*_chroot(tree, *env), "dpkg", *dpkg_options, "-i", *names], timeout=900)
    finally:
        policy.unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)


def _configure(tree: Path) -> None:
    """Static address on qemu's user network, networkd on, a hostname; nothing of the host leaks in."""
    (tree / "etc/systemd/network").mkdir(parents=True, exist_ok=True)
    (tree / "etc/systemd/network/10-provision-vm.network").write_text(NETWORK_UNIT)
    run([*_chroot(tree), "systemctl", "enable", "systemd-networkd.service"], timeout=120)
    run([*_chroot(tree), "systemctl", "disable", "nfs-server.service"], timeout=120)
    (tree / "etc/hostname").write_text("provision-vm\n")
    (tree / "etc/initramfs-tools/conf.d/provision-vm.conf").write_text(INITRAMFS_CONF)
    (tree / "etc/fstab").write_text("LABEL=provision-vm / ext4 rw 0 1\n")
    for deb in (tree / "var/cache/apt/archives").glob("*.deb"):
        deb.unlink()


def _busybox(deb_cache: Path, work: Path) -> Path:
    """The static busybox binary, from the busybox-static package (not installed on the host)."""
    deb = debs.fetch(_busybox_version(deb_cache), deb_cache)[0]
    unpacked = work / "busybox-deb"
    run(["dpkg-deb", "-x", str(deb), str(unpacked)], timeout=120)
    binary = unpacked / "bin/busybox"
    if not binary.is_file():
        raise LabError(f"{deb.name} holds no bin/busybox")
    return binary


def _busybox_version(deb_cache: Path) -> dict[str, str]:
    empty = deb_cache / "empty-status"
    deb_cache.mkdir(parents=True, exist_ok=True)
    empty.write_text("")
    return {k: v for k, v in debs.plan(empty, ["busybox-static"]).items() if k == "busybox-static"}


def _make_repo(repo: Path, files: list[Path]) -> None:
    repo.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy2(f, repo / f.name)
    proc = subprocess.run(
        ["dpkg-scanpackages", "--multiversion", ".", "/dev/null"],
        cwd=repo, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise LabError(f"dpkg-scanpackages failed in {repo}: {last_line(proc.stderr)}")
    (repo / "Packages").write_text(proc.stdout)
