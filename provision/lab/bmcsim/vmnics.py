"""A VM host's NICs as its simulated BMC lists them: the system's EthernetInterfaces (DMTF EthernetInterface
schema), and the provisioning NIC's tap opened inside the lab's network namespace for qemu.

A VM node with a provisioning NIC (VmHostConfig.provisioning) has two: `NIC1` on qemu's user network (the
lab's SSH and repository forwards) and `NIC2` on the lab's private provisioning network, which the firmware
boots from at a `Pxe` override. The BMC lists those two in place of the captured board's interfaces (which
are not the VM's), each with the MAC the VM really has, as a real BMC reports its host's ports; the os stage
and `provision netboot` read the provisioning MAC from there (provision/redfish/ops/netif.py).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import struct
import threading
from typing import Any

from provision.errors import LabError
from provision.lab.bmcsim.config import VmHostConfig
from provision.lab.bmcsim.tree import Resources, norm

Json = dict[str, Any]
CLONE_NEWNET = 0x40000000
TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000


def nic_resources(system: str, cfg: VmHostConfig) -> dict[str, Json]:
    """The system's EthernetInterfaces collection and its members for the VM's NICs (pure)."""
    coll = f"{system}/EthernetInterfaces"
    nics = [("NIC1", cfg.mac, "qemu user network (the lab's SSH and repository forwards)")]
    if cfg.provisioning is not None:
        nics.append(("NIC2", cfg.provisioning.mac, "the lab's provisioning network"))
    out: dict[str, Json] = {coll: {
        "@odata.id": coll, "@odata.type": "#EthernetInterfaceCollection.EthernetInterfaceCollection",
        "Name": "Ethernet Network Interface Collection",
        "Members": [{"@odata.id": f"{coll}/{n}"} for n, _, _ in nics], "Members@odata.count": len(nics)}}
    for name, mac, what in nics:
        out[f"{coll}/{name}"] = {
            "@odata.id": f"{coll}/{name}", "@odata.type": "#EthernetInterface.v1_6_0.EthernetInterface",
            "Id": name, "Name": name, "Description": f"virtio-net on {what}",
            "MACAddress": mac.upper(), "PermanentMACAddress": mac.upper(), "EthernetInterfaceType": "Physical",
            "InterfaceEnabled": True, "SpeedMbps": 1000, "FullDuplex": True, "LinkStatus": "LinkUp",
            "Status": {"State": "Enabled", "Health": "OK"},
        }  # fmt: skip
    return out


def present(res: Resources, systems: list[str], cfg: VmHostConfig) -> None:
    """List the VM's NICs as each system's EthernetInterfaces (the captured members dropped)."""
    for system in systems:
        new = nic_resources(norm(system), cfg)
        coll = next(iter(new))
        old = res.get(coll) or {}
        for member in old.get("Members") or []:
            res.delete(norm(str(member.get("@odata.id", ""))))
        for uri, obj in new.items():
            res.put(uri, obj)
        sys_res = res.mutable(norm(system))
        sys_res["EthernetInterfaces"] = {"@odata.id": coll}
        sys_res.pop("@odata.etag", None)


def open_tap(netns: str, tap: str) -> int:
    """A file descriptor of the persistent tap `tap` in network namespace `netns` (opened from a thread of its
    own that joins the namespace, so this process stays in its own); LabError naming what failed."""
    got: list[int | BaseException] = []

    def inside() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            ns = os.open(f"/run/netns/{netns}", os.O_RDONLY | os.O_CLOEXEC)
            try:
                if libc.setns(ns, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, os.strerror(err))
            finally:
                os.close(ns)
            fd = os.open("/dev/net/tun", os.O_RDWR)
            try:
                fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", tap.encode(), IFF_TAP | IFF_NO_PI))
            except OSError:
                os.close(fd)
                raise
            got.append(fd)
        except BaseException as exc:  # handed to the caller's thread
            got.append(exc)

    worker = threading.Thread(target=inside, name=f"tap-{tap}", daemon=True)
    worker.start()
    worker.join(10)
    if not got:
        raise LabError(f"tap {tap} in netns {netns}: not opened within 10 s")
    if isinstance(got[0], BaseException):
        raise LabError(f"tap {tap} in netns {netns}: {got[0]}")
    os.set_inheritable(got[0], False)
    return got[0]
