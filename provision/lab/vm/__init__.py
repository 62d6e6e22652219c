"""LAB ONLY: a real Debian kernel under qemu (plain emulation, TCG) for what the twins cannot show.

The twins share the host kernel, which has no md driver. This VM boots the Debian cloud kernel with the
twins' root filesystem, two blank virtio disks and real sshd, so that the boot_raid1 role meets a real
md RAID1 and a real /proc/mdstat. Public API:

    ensure_image(cache=None) -> VmImage      build (once, cached) the kernel, root image and apt repository
    running_vm(image, work, options) -> VmInfo   context manager: boot, wait for sshd, always tear down
    ssh(vm, command) -> CompletedProcess     run a shell command in the VM (host-key checking on)
"""

from __future__ import annotations

from provision.lab.vm.image import ensure_image
from provision.lab.vm.models import VmImage, VmInfo, VmOptions
from provision.lab.vm.qemu import running_vm, ssh

__all__ = ["VmImage", "VmInfo", "VmOptions", "ensure_image", "running_vm", "ssh"]
