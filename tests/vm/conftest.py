"""The vm tier's one VM, booted once for the session (boot ~30-60 s under plain emulation) and shared by the
modules: the boot_raid1 cases use its two data disks, the NFS cases its kernel's NFS server and client."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from provision.lab.vm import VmInfo, VmOptions, ensure_image, running_vm


@pytest.fixture(scope="session")
def vm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmInfo]:
    if os.geteuid() != 0:
        pytest.skip("the vm tier needs root (the twins' rootfs cache, chroot while building the image)")
    image = ensure_image()
    with running_vm(image, tmp_path_factory.mktemp("vmtier") / "run", VmOptions(name="vmraid")) as info:
        yield info
