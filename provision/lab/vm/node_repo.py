"""LAB ONLY: the apt repository an installed VM node's roles install from (real Debian packages).

A twin gets stand-in packages; a VM node installed by the lab's installer runs real ones: chrony,
smartmontools and the node exporter as the archive ships them, planned against the installed OS's own dpkg
status (so only what it lacks is added) and fetched with apt's client from the host's mirror, once per recipe.
The repository also carries the kernel and mdadm the OS was installed with: the roles pin and hold them,
and apt holds a pin only to a version some repository offers. Served on 127.0.0.1 by the lab's repository
server; the guest reaches it as 10.0.2.100, the one port its restricted network forwards
(provision/lab/guestnet.py).
"""

from __future__ import annotations

import fcntl
import hashlib
from pathlib import Path

from provision.lab.twins.mounts import remove_tree
from provision.lab.vm import debs, image
from provision.lab.vm.installer import InstallerTree

NODE_PACKAGES = ["chrony", "smartmontools", "prometheus-node-exporter"]


def node_repo(tree: InstallerTree) -> Path:
    """The flat repository (Packages + .debs) for nodes installed from `tree`, built once per recipe."""
    cache = tree.directory.parent
    deb_cache = cache / "vm-debs"
    with open(cache / ".node-repo.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        status = tree.directory / "os/var/lib/dpkg/status"
        wanted = {**debs.plan(status, NODE_PACKAGES), "mdadm": debs.installed_version(status, "mdadm")}
        kernel = debs.kernel_deb(deb_cache)
        recipe = hashlib.sha256(repr([kernel.name, *sorted(wanted.items())]).encode()).hexdigest()[:16]
        target = cache / f"node-repo-{recipe}"
        if (target / "Packages").is_file():
            return target
        for stale in cache.glob("node-repo-*"):
            remove_tree(stale)
        work = target.with_name(target.name + ".build")
        remove_tree(work)
        image._make_repo(work, [*debs.fetch(wanted, deb_cache), kernel])
        work.rename(target)
        return target
