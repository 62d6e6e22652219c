"""Hardware personality of the node twins: the simulated server, its tools, packages and faults.

LAB ONLY. A twin is a container; everything "hardware" it shows is simulated from the node's spec:
fake `nvidia-smi`, `ibstat`, `zpool`, `mdadm`, `nvme`, ... (data/tools/, stdlib Python run inside
the twin), /proc/{meminfo,cpuinfo,mdstat} bind-mounted from the host, sparse files standing in for
NVMe drives, and an apt repository of stand-in packages with the real names and versions.

The infra side (provision/lab/twins/) calls, per twin:
  prepare_node(state_dir, spec, index)   write hardware.json, faults.json, proc files, disk files
  proc_binds(state_dir)                  the /proc bind mounts to add to systemd-nspawn
  factory_image(spec)                    which factory image a twin of the spec comes from ("gpu", "no-gpu")
  install_tools(rootfs, image)           once per (cached) rootfs and image: tools, templates, boot unit
  build_repo(repo_dir)                   once per lab: the stand-in .debs + Packages index
  apply_fault(state_dir, kind, clear)    `provision lab fault NODE KIND [--clear]`
and bind-mounts state_dir read-write at /var/lib/provision-lab in the twin.
"""

from provision.lab.twins.personality.faults import FAULT_KINDS
from provision.lab.twins.personality.repo import build_repo
from provision.lab.twins.personality.rootfs import factory_image, install_tools
from provision.lab.twins.personality.state import TWIN_STATE_DIR, apply_fault, prepare_node, proc_binds

__all__ = [
    "FAULT_KINDS",
    "TWIN_STATE_DIR",
    "apply_fault",
    "build_repo",
    "factory_image",
    "install_tools",
    "prepare_node",
    "proc_binds",
]
