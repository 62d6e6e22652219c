"""The BMC simulator's host backends: Redfish actions -> what the host is told (tables), the VM host's
qemu command line and boot order (tables), its image fetch and its process life (a fake qemu on PATH)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from provision.errors import LabError
from provision.lab.bmcsim import vmnics
from provision.lab.bmcsim.bmc import Bmc
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.config import TREES_DIR, BmcConfig, SimConfig, VmDrive, VmHostConfig, VmProvisioningNic
from provision.lab.bmcsim.host import BootTarget, HostBackend, HostEvent, HostEventKind, next_boot
from provision.lab.bmcsim.request import Request
from provision.lab.bmcsim.seed import get_seed
from provision.lab.bmcsim.server import host_backend
from provision.lab.bmcsim.vmhost import VmHost, boot_indexes, drive_file, media_refusal, qemu_argv
from provision.redfish.image_server import ImageServer
from provision.redfish.ops.netif import parse_nics, provisioning_mac

SYS = "/redfish/v1/Systems/1"
CD = "/redfish/v1/Managers/1/VirtualMedia/CD1"  # the Supermicro tree completed: a CD and a USB stick
USB = "/redfish/v1/Managers/1/VirtualMedia/USB1"
BASIC = {"Authorization": "Basic " + base64.b64encode(b"admin:pw").decode()}
RESET = f"{SYS}/Actions/ComputerSystem.Reset"


class Recorder(HostBackend):
    """A host that records what the BMC tells it (in call order)."""

    def __init__(self) -> None:
        super().__init__("node01")
        self.calls: list[tuple[str, ...]] = []

    def power(self, on: bool, boot: BootTarget) -> None:
        self.calls.append(("on", boot.value) if on else ("off",))

    def insert_media(self, url: str, slot: str = "CD1") -> None:
        self.calls.append(("insert", url) if slot == "CD1" else ("insert", url, slot))

    def eject_media(self, slot: str = "CD1") -> None:
        self.calls.append(("eject",) if slot == "CD1" else ("eject", slot))

    def check_media(self, url: str) -> str | None:
        return media_refusal(url, ("127.0.0.1",))


def make(tmp: Path, host: HostBackend | None) -> Bmc:
    node = BmcConfig(name="node01", index=1, password=SecretStr("pw"), tree=TREES_DIR / "supermicro")
    cfg = SimConfig(lab_dir=tmp, nodes=[node], speed=600, control_token=SecretStr("t"),
                    ready_file=tmp / "r.json", log_file=tmp / "log")  # fmt: skip
    return Bmc(node, cfg, get_seed(node.tree, False, cfg.parts), SimClock(cfg.speed), host)


def call(bmc: Bmc, method: str, path: str, body: Any = None) -> int:
    return bmc.handle(Request(method, path, BASIC, json.dumps(body).encode() if body is not None else b"")).status


async def settle(bmc: Bmc) -> None:
    """Until no power transition is pending (600x simulated speed: a restart is ~15 ms)."""
    for _ in range(300):
        if bmc.power[SYS].state in ("On", "Off") and not any(
            not h.cancelled() for h in bmc.power[SYS]._pending if h.when() > asyncio.get_running_loop().time()
        ):
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"power still {bmc.power[SYS].state}")


# --- the mapping: Boot object -> next boot device ------------------------------------------------------
@pytest.mark.parametrize(
    ("boot", "expected"),
    [
        ({}, BootTarget.HDD),
        ({"BootSourceOverrideEnabled": "Disabled", "BootSourceOverrideTarget": "Cd"}, BootTarget.HDD),
        ({"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": "Cd"}, BootTarget.CD),
        ({"BootSourceOverrideEnabled": "Continuous", "BootSourceOverrideTarget": "Pxe"}, BootTarget.PXE),
        ({"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": "Hdd"}, BootTarget.HDD),
        ({"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": "BiosSetup"}, BootTarget.HDD),
        ({"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": "None"}, BootTarget.HDD),
    ],
)
def test_next_boot_follows_an_enabled_override_only(boot: dict[str, str], expected: BootTarget) -> None:
    assert next_boot(boot) is expected


@pytest.mark.parametrize(
    ("target", "media", "expected"),
    [
        (BootTarget.CD, True, {"cd": 0, "boot0": 1, "boot1": 2}),
        (BootTarget.CD, False, {"boot0": 0, "boot1": 1}),  # an empty drive: on to the disks
        (BootTarget.HDD, True, {"boot0": 0, "boot1": 1, "cd": 2}),
        (BootTarget.HDD, False, {"boot0": 0, "boot1": 1}),
        (BootTarget.PXE, True, {"nic": 0, "boot0": 1, "boot1": 2}),
    ],
)
def test_boot_order_per_target(target: BootTarget, media: bool, expected: dict[str, int]) -> None:
    assert boot_indexes(target, 2, media) == expected


@pytest.mark.parametrize(
    ("target", "media", "expected"),
    [
        (BootTarget.PXE, False, {"pxe": 0, "boot0": 1, "boot1": 2}),  # the provisioning NIC, never the user one
        (BootTarget.PXE, True, {"pxe": 0, "boot0": 1, "boot1": 2}),
        (BootTarget.HDD, False, {"boot0": 0, "boot1": 1}),  # no NIC boots after an install
        (BootTarget.CD, True, {"cd": 0, "boot0": 1, "boot1": 2}),
    ],
)
def test_boot_order_with_a_provisioning_nic(target: BootTarget, media: bool, expected: dict[str, int]) -> None:
    assert boot_indexes(target, 2, media, provisioning=True) == expected


def vm_cfg(tmp: Path, port: int = 2299) -> VmHostConfig:
    return VmHostConfig(
        work_dir=tmp / "vm", ssh_port=port,
        boot_drives=(VmDrive(serial="BOOT-A", size_mib=64), VmDrive(serial="BOOT-B", size_mib=64)),
        scratch_drives=(VmDrive(serial="SCRATCH-0", size_mib=32),),
    )  # fmt: skip


def devices(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]


def test_qemu_argv_has_uefi_nvme_serials_and_the_cd_first_for_a_cd_boot(tmp_path: Path) -> None:
    cfg = vm_cfg(tmp_path)
    argv = qemu_argv(cfg, BootTarget.CD, tmp_path / "os.iso", tmp_path / "console.log")
    joined = " ".join(argv)
    assert "-enable-kvm" not in argv and argv[argv.index("-accel") + 1] == "tcg"
    assert f"if=pflash,format=raw,readonly=on,file={cfg.firmware_code}" in joined
    assert f"if=pflash,format=raw,file={cfg.work_dir / 'OVMF_VARS.fd'}" in joined  # the node's own NVRAM
    assert devices(argv) == [
        "virtio-net-pci,netdev=net0,mac=52:54:00:12:34:56,speed=1000,duplex=full",
        "nvme,drive=boot0,serial=BOOT-A,bootindex=1",
        "nvme,drive=boot1,serial=BOOT-B,bootindex=2",
        "nvme,drive=scratch0,serial=SCRATCH-0",  # never a boot device
        "virtio-scsi-pci,id=scsi0",
        "scsi-cd,bus=scsi0.0,drive=cd,bootindex=0",
    ]
    assert f"file={drive_file(cfg, 'BOOT-A')},if=none,id=boot0,format=raw" in argv
    assert f"file={tmp_path / 'os.iso'},if=none,id=cd,media=cdrom,readonly=on,format=raw" in argv
    assert "hostfwd=tcp:127.0.0.1:2299-:22" in joined and f"file:{tmp_path / 'console.log'}" in argv
    assert argv[argv.index("-netdev") + 1].startswith("user,restrict=on,")  # the guest reaches only what is forwarded


def test_qemu_argv_without_media_has_no_cd_and_pxe_puts_the_nic_first(tmp_path: Path) -> None:
    argv = qemu_argv(vm_cfg(tmp_path), BootTarget.PXE, None, tmp_path / "c.log")
    assert devices(argv)[0] == "virtio-net-pci,netdev=net0,mac=52:54:00:12:34:56,speed=1000,duplex=full,bootindex=0"
    assert not any(d.startswith("scsi-cd") for d in devices(argv))


def prov_cfg(tmp: Path) -> VmHostConfig:
    nic = VmProvisioningNic(mac="52:54:00:4e:56:01", netns="pvnv-1", tap="pvtap0")
    return vm_cfg(tmp).model_copy(update={"provisioning": nic})


def test_qemu_argv_puts_the_provisioning_nic_on_its_tap_and_boots_it_at_pxe(tmp_path: Path) -> None:
    argv = qemu_argv(prov_cfg(tmp_path), BootTarget.PXE, None, tmp_path / "c.log", tap_fd=7)
    assert devices(argv)[:2] == [
        "virtio-net-pci,netdev=net0,mac=52:54:00:12:34:56,speed=1000,duplex=full",  # the user network: not booted
        "virtio-net-pci,netdev=net1,mac=52:54:00:4e:56:01,speed=1000,duplex=full,bootindex=0",
    ]
    netdevs = [argv[i + 1] for i, a in enumerate(argv) if a == "-netdev"]
    assert netdevs[1] == "tap,id=net1,fd=7" and netdevs[0].startswith("user,restrict=on,")
    disk = qemu_argv(prov_cfg(tmp_path), BootTarget.HDD, None, tmp_path / "c.log", tap_fd=7)
    assert devices(disk)[1].endswith("duplex=full") and "bootindex=0" in devices(disk)[2]  # boot0 first
    with pytest.raises(ValueError, match="tap's file descriptor"):
        qemu_argv(prov_cfg(tmp_path), BootTarget.PXE, None, tmp_path / "c.log")


def test_the_bmc_of_a_vm_with_a_provisioning_nic_lists_the_vms_two_nics(tmp_path: Path) -> None:
    cfg = prov_cfg(tmp_path)
    bmc = make(tmp_path, None)
    captured = bmc.res.get(f"{SYS}/EthernetInterfaces")
    assert captured is not None and len(captured["Members"]) > 2  # the board's own, before
    vmnics.present(bmc.res, [SYS], cfg)
    coll = bmc.res.get(f"{SYS}/EthernetInterfaces")
    assert coll is not None and [m["@odata.id"] for m in coll["Members"]] == [
        f"{SYS}/EthernetInterfaces/NIC1", f"{SYS}/EthernetInterfaces/NIC2"]
    for old in captured["Members"]:
        assert bmc.res.get(old["@odata.id"]) is None
    members = [bmc.res.get(m["@odata.id"]) or {} for m in coll["Members"]]
    nics = parse_nics(members)  # as the os stage and `provision netboot` read them
    assert [n.mac for n in nics] == ["52:54:00:12:34:56", "52:54:00:4e:56:01"]
    assert provisioning_mac(nics)[0] is None  # two NICs: the inventory names the one to boot from
    assert (bmc.res.get(SYS) or {})["EthernetInterfaces"] == {"@odata.id": f"{SYS}/EthernetInterfaces"}


def test_qemu_argv_puts_the_other_virtual_drives_on_the_scsi_bus_never_bootable(tmp_path: Path) -> None:
    argv = qemu_argv(vm_cfg(tmp_path), BootTarget.CD, tmp_path / "os.iso", tmp_path / "c.log", [tmp_path / "seed"])
    assert devices(argv)[-3:] == ["virtio-scsi-pci,id=scsi0", "scsi-cd,bus=scsi0.0,drive=cd,bootindex=0",
                                  "scsi-cd,bus=scsi0.0,drive=cd1,scsi-id=1"]
    assert f"file={tmp_path / 'seed'},if=none,id=cd1,media=cdrom,readonly=on,format=raw" in argv
    alone = qemu_argv(vm_cfg(tmp_path), BootTarget.HDD, None, tmp_path / "c.log", [tmp_path / "seed"])
    assert devices(alone)[-2:] == ["virtio-scsi-pci,id=scsi0", "scsi-cd,bus=scsi0.0,drive=cd1,scsi-id=1"]


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("http://127.0.0.1:8080/os.iso", None),
        ("https://127.0.0.1/os.iso", None),
        ("http://10.0.0.5/os.iso", "the lab fetches images from 127.0.0.1 only"),
        ("nfs://127.0.0.1/os.iso", "only http and https"),
        ("/tmp/os.iso", "only http and https"),
    ],
)
def test_media_refusal(url: str, refused: str | None) -> None:
    why = media_refusal(url, ("127.0.0.1",))
    assert (why is None) if refused is None else (why is not None and refused in why and url in why)


def test_a_node_with_a_vm_gets_a_vm_host_else_its_twin_else_none(tmp_path: Path) -> None:
    plain = BmcConfig(name="node01", index=1, password=SecretStr("pw"))
    with_vm = BmcConfig(name="node02", index=2, password=SecretStr("pw"), vm=vm_cfg(tmp_path))
    for twins, node, kind in [(True, with_vm, "VmHost"), (False, with_vm, "VmHost"), (True, plain, "TwinHost"),
                              (False, plain, None)]:  # fmt: skip
        cfg = SimConfig(lab_dir=tmp_path, nodes=[node], control_token=SecretStr("t"), twins=twins,
                        ready_file=tmp_path / "r", log_file=tmp_path / "l")  # fmt: skip
        host = host_backend(cfg, node)
        assert (type(host).__name__ if host else None) == kind


# --- Redfish actions -> host calls (in-process BMC, recording host) -------------------------------------
ACTIONS: list[tuple[str, list[tuple[str, str, dict[str, Any]]], list[tuple[str, ...]]]] = [
    ("off then on boots the disks", [
        ("POST", RESET, {"ResetType": "ForceOff"}), ("POST", RESET, {"ResetType": "On"})],
     [("off",), ("on", "Hdd")]),
    ("a Cd Once override then a restart boots the CD once, then the disks", [
        ("PATCH", SYS, {"Boot": {"BootSourceOverrideEnabled": "Once", "BootSourceOverrideTarget": "Cd"}}),
        ("POST", RESET, {"ResetType": "ForceRestart"}), ("POST", RESET, {"ResetType": "ForceRestart"})],
     [("off",), ("on", "Cd"), ("off",), ("on", "Hdd")]),
    ("a Continuous Pxe override holds across restarts", [
        ("PATCH", SYS, {"Boot": {"BootSourceOverrideEnabled": "Continuous", "BootSourceOverrideTarget": "Pxe"}}),
        ("POST", RESET, {"ResetType": "ForceRestart"}), ("POST", RESET, {"ResetType": "PowerCycle"})],
     [("off",), ("on", "Pxe"), ("off",), ("on", "Pxe")]),
    ("insert and eject reach the host's CD and its USB stick (the seed medium), each by its Id", [
        ("POST", f"{CD}/Actions/VirtualMedia.InsertMedia", {"Image": "http://127.0.0.1:9/os.iso"}),
        ("POST", f"{USB}/Actions/VirtualMedia.InsertMedia", {"Image": "http://127.0.0.1:9/usb.img"}),
        ("POST", f"{CD}/Actions/VirtualMedia.EjectMedia", {}),
        ("POST", f"{USB}/Actions/VirtualMedia.EjectMedia", {})],
     [("insert", "http://127.0.0.1:9/os.iso"), ("insert", "http://127.0.0.1:9/usb.img", "USB1"), ("eject",),
      ("eject", "USB1")]),
    ("a PATCH of the CD's Image inserts, Image null ejects", [
        ("PATCH", CD, {"Image": "http://127.0.0.1:9/os.iso", "Inserted": True}), ("PATCH", CD, {"Image": None})],
     [("insert", "http://127.0.0.1:9/os.iso"), ("eject",)]),
]  # fmt: skip


@pytest.mark.parametrize(("why", "requests", "expected"), ACTIONS, ids=[a[0] for a in ACTIONS])
def test_redfish_actions_reach_the_host(tmp_path: Path, why: str, requests: list[tuple[str, str, dict[str, Any]]],
                                        expected: list[tuple[str, ...]]) -> None:  # fmt: skip
    async def go() -> None:
        host = Recorder()
        bmc = make(tmp_path, host)
        for method, path, body in requests:
            assert call(bmc, method, path, body) < 300, (method, path, body)
            await settle(bmc)
        assert host.calls == expected

    asyncio.run(go())


def test_an_image_url_the_host_refuses_is_a_400_and_nothing_is_inserted(tmp_path: Path) -> None:
    host = Recorder()
    bmc = make(tmp_path, host)
    assert call(bmc, "POST", f"{CD}/Actions/VirtualMedia.InsertMedia", {"Image": "http://10.9.9.9/os.iso"}) == 400
    assert call(bmc, "PATCH", CD, {"Image": "ftp://127.0.0.1/os.iso"}) == 400
    assert host.calls == [] and not (bmc.res.get(CD) or {}).get("Inserted")


def test_the_host_powering_off_by_itself_shows_off_and_a_failed_fetch_ejects(tmp_path: Path) -> None:
    async def go() -> None:
        host = Recorder()
        bmc = make(tmp_path, host)
        assert bmc.power[SYS].state == "On"
        assert call(bmc, "POST", f"{CD}/Actions/VirtualMedia.InsertMedia", {"Image": "http://127.0.0.1:9/x.iso"}) == 204
        host._report(HostEvent(kind=HostEventKind.MEDIA_FAILED, detail="http://127.0.0.1:9/x.iso: refused"))
        host._report(HostEvent(kind=HostEventKind.POWERED_OFF, detail="qemu exited 0"))
        await asyncio.sleep(0.05)
        assert bmc.power[SYS].state == "Off" and not (bmc.res.get(CD) or {}).get("Inserted")
        assert any("could not be fetched" in m for m in bmc.sel_messages())
        assert host.calls == [("insert", "http://127.0.0.1:9/x.iso"), ("off",)]

    asyncio.run(go())


# --- the VM host itself: image fetch, and qemu's life (a fake qemu on PATH) ------------------------------
@pytest.fixture
def image_server(tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """The URL of a file in a served directory, through the project's own image server (what a BMC fetches)."""
    root = tmp_path / "www"
    root.mkdir()
    (root / "os.iso").write_bytes(b"CD001" * 1000)
    with ImageServer() as srv:
        yield lambda name: srv.url_for(root / name)


@pytest.fixture
def fake_qemu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """qemu-system-x86_64 on PATH that writes its argv to argv-<pid> (whole, by a rename) and lives while
    `stay` exists."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "qemu-system-x86_64"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/.argv-$$ && mv {tmp_path}/.argv-$$ {tmp_path}/argv-$$\n'
                      f"while [ -e {tmp_path}/stay ]; do sleep 0.05; done\n")  # fmt: skip
    script.chmod(0o755)
    (tmp_path / "stay").touch()
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return tmp_path


def wait(pred: Any, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.02)


def test_vm_host_fetches_the_image_and_boots_it_first_then_stops(tmp_path: Path, image_server: Callable[[str], str],
                                                                fake_qemu: Path) -> None:  # fmt: skip
    events: list[HostEvent] = []
    host = VmHost("node01", vm_cfg(tmp_path), ("127.0.0.1",))
    host.bind(events.append)
    host.insert_media(image_server("os.iso"))
    host.power(True, BootTarget.CD)
    wait(lambda: list(fake_qemu.glob("argv-*")))
    argv = next(fake_qemu.glob("argv-*")).read_text().splitlines()
    media = tmp_path / "vm/media/os.iso.media"
    assert media.read_bytes() == b"CD001" * 1000
    assert f"file={media},if=none,id=cd,media=cdrom,readonly=on,format=raw" in argv
    assert "scsi-cd,bus=scsi0.0,drive=cd,bootindex=0" in argv
    for serial in ("BOOT-A", "BOOT-B", "SCRATCH-0"):  # blank sparse drives, made at the first power-on
        assert drive_file(host.cfg, serial).stat().st_size > 0 and drive_file(host.cfg, serial).stat().st_blocks == 0
    assert (tmp_path / "vm/OVMF_VARS.fd").stat().st_size == host.cfg.firmware_vars.stat().st_size
    pid = int((tmp_path / "vm/qemu.pid").read_text())
    host.power(False, BootTarget.HDD)
    host.close()
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
    assert events == []  # stopped by the BMC: not reported as the host's own power-off


def test_vm_host_reports_the_guest_powering_off_and_a_failed_fetch(tmp_path: Path, image_server: Callable[[str], str],
                                                                  fake_qemu: Path) -> None:  # fmt: skip
    events: list[HostEvent] = []
    host = VmHost("node01", vm_cfg(tmp_path), ("127.0.0.1",))
    host.bind(events.append)
    host.insert_media(image_server("missing.iso"))
    host.power(True, BootTarget.CD)
    wait(lambda: list(fake_qemu.glob("argv-*")))
    assert "scsi-cd" not in " ".join(next(fake_qemu.glob("argv-*")).read_text().splitlines())  # nothing fetched
    (fake_qemu / "stay").unlink()  # the guest powers off
    wait(lambda: len(events) == 2)
    assert [e.kind for e in events] == [HostEventKind.MEDIA_FAILED, HostEventKind.POWERED_OFF]
    assert "missing.iso" in events[0].detail
    host.close()


def test_a_bmc_with_a_vm_host_starts_with_the_host_off_a_twin_host_on(tmp_path: Path) -> None:
    assert make(tmp_path, VmHost("node01", vm_cfg(tmp_path), ("127.0.0.1",))).power[SYS].state == "Off"
    assert make(tmp_path, Recorder()).power[SYS].state == "On"
    assert not (tmp_path / "vm").exists()  # nothing made before the first power-on


def test_a_tap_in_a_namespace_that_is_not_there_is_a_lab_error_naming_both() -> None:
    with pytest.raises(LabError, match="tap pvtap9 in netns pvnv-absent-0: "):
        vmnics.open_tap("pvnv-absent-0", "pvtap9")
