"""The os stage's network install (pxe) against a fake BMC and host, as test_os_stage.py does for virtual
media: a whole install journals the network steps in order; the host "firmware" reads the node's boot
script where dnsmasq would serve it to its MAC (tftp/<mac>/boot.ipxe), the installer fetches the seed from
the stage's image server by the URL in it, and SSH presents the key made here; the boot entry is gone
after; a kill at any point resumes where the journal says; and what refuses a network install."""

from __future__ import annotations

import contextlib
import re
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from provision.bringup import failpoint
from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.bringup.stages import os_net, os_stage
from provision.bringup.stages.os_plan import NET_ORDER, OsObserved, Ssh
from provision.bringup.stages.os_stage import OsStage
from provision.journal import Journal
from provision.netboot import service
from provision.netboot.config import Mode, NetbootNode, NetbootSettings
from provision.remote import hostkeys
from provision.spec import HostEntry, SshEndpoint
from provision.spec.fleet import InstallerAccess
from provision.spec.software import InstallMethod, OsInstaller

URL = "http://images.example/os.iso"
MAC = "52:54:00:4e:42:01"
INSTALLER = OsInstaller(url=URL, method=InstallMethod.PXE, kernel="http://images.example/vmlinuz",
                        initrd="http://images.example/initrd.gz")


class Killed(BaseException):
    """What the failpoint does here instead of SIGKILL."""


@dataclass
class FakeNetHost:
    netboot: Path
    power: str = "Off"
    override: str = ""
    running: str = ""
    polls_left: int = 0
    installed_key: str = ""
    installs: int = 0
    seed_url: str = ""
    scripts: list[str] = field(default_factory=list)
    calls: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.calls.append(f"reset {self.override or '-'}")
        boot, self.override = self.override, ""
        self.power = "On"
        script = self.netboot / "tftp" / MAC.replace(":", "-") / "boot.ipxe"
        if boot == "Pxe" and script.is_file():  # iPXE reads its script as dnsmasq serves it to this MAC
            text = script.read_text()
            self.scripts.append(text)
            seed = re.search(r"provision\.seed=(\S+)", text)
            assert seed, "the boot script names no seed"
            self.seed_url = seed.group(1)
            self.running, self.polls_left, self.installs = "installer", 3, self.installs + 1
        else:
            self.running = "os" if self.installed_key else ""

    def state(self) -> str:
        if self.running == "installer":
            if self.seed_url and self.polls_left == 1:  # fetched a while into the install, as the lab's does
                url, self.seed_url = self.seed_url, ""
                try:
                    with urllib.request.urlopen(url + "ssh_host_ed25519_key.pub", timeout=10) as resp:
                        self.installed_key = " ".join(resp.read().decode().split()[:2])
                except OSError:  # its server is gone: the installer fails, nothing installed
                    self.power, self.running, self.installed_key = "Off", "", ""
                    return self.power
            self.polls_left -= 1
            if self.polls_left <= 0:
                self.power, self.running = "Off", ""
        return self.power

    def ssh(self, known_hosts: Path, pattern: str) -> Ssh:
        if self.power != "On" or self.running != "os":
            return Ssh.DOWN
        return Ssh.OK if hostkeys.expected_key(known_hosts, pattern) == self.installed_key else Ssh.WRONG_KEY


def net_host(make_host: Callable[..., HostEntry], tmp: Path) -> HostEntry:
    host = make_host()
    software = host.spec.software.model_copy(update={"os_installer": INSTALLER})
    return host.model_copy(update={"spec": host.spec.model_copy(update={"software": software}),
                                   "installer": InstallerAccess(provisioning_mac=MAC),
                                   "ssh": SshEndpoint(host="127.0.0.1", port=2222, known_hosts=tmp / "known_hosts")})


@pytest.fixture
def rig(make_host: Callable[..., HostEntry], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    nb = tmp_path / "nb"
    settings = NetbootSettings(directory=nb, interface="pv0", mode=Mode.DHCP, network=IPv4Network("10.77.0.0/24"),
                               first=IPv4Address("10.77.0.100"), last=IPv4Address("10.77.0.150"))
    host = net_host(make_host, tmp_path)
    service.write_files(settings, [NetbootNode(name=host.name, mac=MAC)], None)
    fake = FakeNetHost(netboot=nb)
    monkeypatch.setattr(os_stage.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))

    @contextlib.contextmanager
    def fake_bmc(ctx: StageContext, opts: BringupOptions) -> Iterator[Any]:
        yield SimpleNamespace(conn=SimpleNamespace(waiting=lambda seconds: contextlib.nullcontext()),
                              system=SimpleNamespace(uri="/redfish/v1/Systems/1"))

    def boot_once(node: Any, target: str) -> None:
        fake.calls.append(f"boot {target}")
        fake.override = target

    def no_media(*args: Any) -> None:
        raise AssertionError("virtual media touched by a network install")

    monkeypatch.setattr(os_stage, "bmc", fake_bmc)
    monkeypatch.setattr(os_stage.power, "media_slots", no_media)
    monkeypatch.setattr(os_stage.power, "insert_media", no_media)
    monkeypatch.setattr(os_stage.power, "boot_once", boot_once)
    monkeypatch.setattr(os_stage.power, "host_reset", lambda node, clock, timeout: fake.reset())
    monkeypatch.setattr(os_stage, "_wait_off", lambda node, clock, timeout, where: _until_off(fake))
    monkeypatch.setattr(os_stage, "_first_boot", lambda h, timeout, where: _until_ssh(fake, h))
    stage = OsStage(BringupOptions(inventory=Path("inventory/hosts.yml"), poll_s=0.01, netboot_dir=nb))
    monkeypatch.setattr(stage, "_probe", lambda h: (fake.ssh(tmp_path / "known_hosts", "[127.0.0.1]:2222"), "x"))
    monkeypatch.setattr(stage, "_net_refusals", lambda ctx: ())
    monkeypatch.setattr(os_stage.power, "power_state", lambda conn, uri: fake.state())
    with Journal(tmp_path / "journal.db") as journal:
        yield fake, host, stage, journal, tmp_path


def _until_off(fake: FakeNetHost) -> None:
    for _ in range(10):
        if fake.state() == "Off":
            return
    raise os_stage.InstallFailed("never off")


def _until_ssh(fake: FakeNetHost, host: HostEntry) -> None:
    assert host.ssh is not None and host.ssh.known_hosts is not None
    if fake.ssh(host.ssh.known_hosts, "[127.0.0.1]:2222") is not Ssh.OK:
        raise os_stage.InstallFailed(f"{host.name}: os-first-boot: no SSH with the seeded host key")


def _pass(stage: OsStage, host: HostEntry, journal: Journal) -> tuple[OsObserved, list[str]]:
    ctx = StageContext(host=host, journal=journal, run_id=journal.start_run("bringup", host.name))
    observed = stage.observe(ctx)
    plan = stage.plan(host, observed)
    if plan.actions:
        stage.apply(ctx, plan)
    return observed, [a.kind for a in plan.actions]


def test_a_whole_network_install_then_a_second_run_changes_nothing(rig: Any) -> None:
    fake, host, stage, journal, tmp = rig
    observed, kinds = _pass(stage, host, journal)
    assert observed.method is InstallMethod.PXE and kinds == [s.value for s in NET_ORDER]
    assert [(r.action, r.outcome) for r in journal.actions(host.name, stage="os")] == \
        [(s.value, "ok") for s in NET_ORDER]
    assert fake.calls == ["boot Pxe", "reset Pxe", "boot Hdd", "reset Hdd"]
    assert hostkeys.expected_key(tmp / "known_hosts", "[127.0.0.1]:2222") == fake.installed_key != ""
    script = fake.scripts[0]
    assert "kernel --name vmlinuz http://images.example/vmlinuz " in script and f"url={URL}" in script
    assert "initrd --name initrd http://images.example/initrd.gz" in script
    assert not (tmp / "nb" / "tftp" / MAC.replace(":", "-")).exists(), "the boot entry outlived the install"
    assert not list((tmp / "tmp").glob("provision-os-seed-*/*")), "the key pair or seed was left behind"
    observed, kinds = _pass(stage, host, journal)
    assert observed.ssh is Ssh.OK and kinds == [] and fake.installs == 1


FRESH = {f"{k}:{w}" for k in ("os-hostkey", "os-netboot", "os-boot-net") for w in ("before", "after")} | \
    {"os-power-on:before"}
# Killed while the installer runs (before it fetched its seed from the run's image server, gone with the run):
# a new attempt, whose power-on resets the host into the installer again.
AGAIN = {"os-power-on:after", "os-installing:before"}


@pytest.mark.parametrize(("kind", "when"), [(s.value, w) for s in NET_ORDER for w in ("before", "after")])
def test_a_kill_at_any_point_of_a_network_install_resumes_where_the_journal_says(
        rig: Any, monkeypatch: pytest.MonkeyPatch, kind: str, when: str) -> None:
    fake, host, stage, journal, tmp = rig

    def hit(action: str, at: str) -> None:
        if (action, at) == (kind, when):
            raise Killed

    monkeypatch.setattr(failpoint, "hit", hit)
    real = os_stage._forget_entry
    monkeypatch.setattr(os_stage, "_forget_entry", lambda h, d: None)  # a SIGKILL runs no `finally`
    with pytest.raises(Killed):
        _pass(stage, host, journal)
    monkeypatch.setattr(os_stage, "_forget_entry", real)
    monkeypatch.setattr(failpoint, "hit", lambda action, at: None)
    probed: list[str] = []
    probe = stage._probe
    monkeypatch.setattr(stage, "_probe", lambda h: (probed.append(fake.power), probe(h))[1])
    _, kinds = _pass(stage, host, journal)
    order = [s.value for s in NET_ORDER]
    if f"{kind}:{when}" in FRESH:
        assert kinds == order and fake.installs == 1
    elif f"{kind}:{when}" in AGAIN:  # the installer was running without the seed's server: started over
        assert kinds == order and fake.installs == 2 and fake.calls.count("reset Pxe") == 2
        assert probed[:1] != ["On"], "SSH probed (minutes on a real node) while the orphaned installer ran"
    elif kind == "os-first-boot":
        assert kinds == ["os-first-boot"]
    else:
        assert kinds[0] != "os-hostkey" and kinds == order[len(order) - len(kinds):]
        assert fake.installs == 1, "the install was started twice"
    assert fake.power == "On" and fake.running == "os"
    assert not (tmp / "nb" / "tftp" / MAC.replace(":", "-")).exists()
    assert hostkeys.expected_key(tmp / "known_hosts", "[127.0.0.1]:2222") == fake.installed_key
    assert _pass(stage, host, journal)[1] == []


def _node(allowed: tuple[str, ...], nics: list[dict[str, Any]]) -> Any:
    conn = SimpleNamespace(get=lambda uri: {"EthernetInterfaces": {"@odata.id": "/s/EthernetInterfaces"}},
                           members_or_unreadable=lambda uri: nics)
    return SimpleNamespace(conn=conn, system=SimpleNamespace(uri="/s", boot=SimpleNamespace(allowed_targets=allowed)))


ONE_NIC = [{"Id": "1", "MACAddress": MAC}]


@pytest.mark.parametrize(("mac", "allowed", "nics", "entry", "why"), [
    (MAC, ("Pxe", "Hdd", "Cd"), [], MAC, []),
    (None, ("Pxe", "Hdd"), ONE_NIC, MAC, []),  # the MAC read from the BMC
    (MAC, (), [], MAC, []),  # the BMC does not say what it allows: boot_once checks when it sends
    (MAC, ("Hdd", "Cd"), [], MAC, ["the BMC does not offer boot target Pxe (it offers Hdd, Cd)"]),
    (None, ("Pxe",), [], MAC, ["no provisioning MAC: the BMC lists no physical EthernetInterface with a MAC for "
                               "the system"]),
    (MAC, ("Pxe",), [], None, ["has no entry for it (provision netboot up node01)"]),
    (MAC, ("Pxe",), [], "52:54:00:4e:42:02", ["answers MAC 52:54:00:4e:42:02, its provisioning MAC is "
                                              "52:54:00:4e:42:01 (provision netboot up again)"]),
])
def test_what_refuses_a_network_install(make_host: Callable[..., HostEntry], tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch, mac: str | None, allowed: tuple[str, ...],
                                        nics: list[dict[str, Any]], entry: str | None, why: list[str]) -> None:
    host = net_host(make_host, tmp_path)
    host = host.model_copy(update={"installer": InstallerAccess(provisioning_mac=mac)})
    monkeypatch.setattr(os_net, "answers", lambda url, h: None)
    nb = tmp_path / "nb"
    nb.mkdir()
    if entry is not None:
        (nb / "hosts").write_text(f"{entry},set:pv-node01\n")
    got = os_net.refusals(host, _node(allowed, nics), INSTALLER, InstallMethod.PXE, nb)
    assert len(got) == len(why) and all(w in g for w, g in zip(why, got, strict=True))


def test_an_installer_kernel_that_does_not_answer_is_refused(make_host: Callable[..., HostEntry],
                                                             tmp_path: Path) -> None:
    from provision.redfish.image_server import ImageServer

    host = net_host(make_host, tmp_path)
    kernel = tmp_path / "vmlinuz"
    kernel.write_bytes(b"\x00" * 4096)
    with ImageServer() as srv:
        assert os_net.answers(srv.url_for(kernel), host) is None
        missing = srv.url_for(kernel).replace("vmlinuz", "gone")
        assert os_net.answers(missing, host) == f"{missing}: HTTP 404"


@pytest.mark.parametrize(("bind", "advertise", "refused"), [
    ("127.0.0.1", None, "advertised as 127.0.0.1"),  # bringup's default: fine for a BMC on the lab host only
    ("0.0.0.0", None, "advertised as 0.0.0.0"),
    ("0.0.0.0", "10.77.0.1", None),
    ("10.77.0.1", None, None),
    ("::1", None, "advertised as ::1"),
    ("0.0.0.0", "deploy.example", None),  # a name: the site's to resolve
    ("0.0.0.0", "localhost", "advertised as localhost"),
])
def test_a_network_install_needs_an_image_server_the_node_can_reach(bind: str, advertise: str | None,
                                                                   refused: str | None) -> None:
    got = os_net.server_refusal(bind, advertise)
    assert (got is None) if refused is None else (got is not None and refused in got)
