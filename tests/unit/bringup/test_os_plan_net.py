"""The os stage's network install (pxe, http_boot) as tables beside virtual media's: the steps of each
method, where an attempt of each resumes, and the cleanup a node that answers still gets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from provision.bringup.stages.os_plan import (
    NET_ORDER,
    ORDER,
    Attempt,
    OsObserved,
    Ssh,
    Step,
    orphaned_net_installer,
    plan_os,
    resume,
)
from provision.spec import HostEntry
from provision.spec.software import InstallMethod

URL = "http://images.example/install.iso"
FP = "SHA256:ours"
VM = [s.value for s in ORDER]
NET = [s.value for s in NET_ORDER]


def attempt(**outcomes: str | None) -> Attempt:
    return Attempt(outcomes={Step(f"os-{k.replace('_', '-')}"): v for k, v in outcomes.items()}, fingerprint=FP)


NET_TO_POWER_ON = {"hostkey": "ok", "netboot": "ok", "boot_net": "ok", "power_on": "ok"}
VM_TO_POWER_ON = {"hostkey": "ok", "media": "ok", "boot_cd": "ok", "power_on": "ok"}


@pytest.mark.parametrize(("method", "kinds", "boot"), [
    (InstallMethod.VIRTUAL_MEDIA, VM, "Cd once"),
    (InstallMethod.PXE, NET, "Pxe once"),
    (InstallMethod.HTTP_BOOT, NET, "UefiHttp once"),
])
def test_a_new_install_has_the_methods_steps(make_host: Callable[..., HostEntry], tmp_path: Path,
                                             method: InstallMethod, kinds: list[str], boot: str) -> None:
    observed = OsObserved(ssh=Ssh.DOWN, power="Off", known_hosts=tmp_path / "kh", installer=URL, method=method)
    plan = plan_os(make_host(), observed)
    assert [a.kind for a in plan.actions] == kinds
    booting = next(a for a in plan.actions if a.kind in ("os-boot-cd", "os-boot-net"))
    assert booting.after == boot
    assert ("network" in plan.note) is (method is not InstallMethod.VIRTUAL_MEDIA)


def test_both_orders_share_every_step_but_the_three_that_touch_the_boot_path() -> None:
    differ = [(a.value, b.value) for a, b in zip(ORDER, NET_ORDER, strict=True) if a is not b]
    assert differ == [("os-media", "os-netboot"), ("os-boot-cd", "os-boot-net"), ("os-eject", "os-netboot-off")]


@pytest.mark.parametrize(("outcomes", "power", "left"), [
    ({"hostkey": "ok", "netboot": "ok"}, "Off", None),  # killed before the reset: nothing written, start over
    ({"hostkey": "ok", "netboot": "ok", "boot_net": "ok", "power_on": None}, "Off", None),
    # killed while the installer runs: its seed's server died with the run, so start over (a reset, a new key)
    ({"hostkey": "ok", "netboot": "ok", "boot_net": "ok", "power_on": None}, "On", None),
    (NET_TO_POWER_ON, "On", None),
    ({**NET_TO_POWER_ON, "installing": None}, "On", None),
    (NET_TO_POWER_ON, "Off", NET[4:]),  # the installer powered off (it had its seed): wait on, its own cleanup
    ({**NET_TO_POWER_ON, "installing": None}, "Off", NET[4:]),
    ({**VM_TO_POWER_ON}, "On", VM[4:]),  # virtual media: the BMC holds the seed, the install goes on
    ({**NET_TO_POWER_ON, "installing": "ok"}, "Off", ["os-netboot-off", "os-boot-disk", "os-first-boot"]),
    ({**NET_TO_POWER_ON, "installing": "ok", "netboot_off": "ok"}, "Off", ["os-boot-disk", "os-first-boot"]),
    ({**NET_TO_POWER_ON, "installing": "failed"}, "Off", None),
    ({**NET_TO_POWER_ON, "installing": "ok", "netboot_off": "ok", "boot_disk": "ok", "first_boot": "ok"}, "On", []),
    ({**VM_TO_POWER_ON, "installing": "ok"}, "Off", ["os-eject", "os-boot-disk", "os-first-boot"]),
])
def test_resume_follows_the_attempts_own_method(outcomes: dict[str, str | None], power: str,
                                                 left: list[str] | None) -> None:
    got = resume(attempt(**outcomes), power)
    assert (None if got is None else [s.value for s in got]) == left


@pytest.mark.parametrize(("outcomes", "power", "orphaned"), [
    (NET_TO_POWER_ON, "On", True),
    ({**NET_TO_POWER_ON, "power_on": None}, "On", True),  # killed while resetting into it
    ({**NET_TO_POWER_ON, "installing": None}, "On", True),
    (NET_TO_POWER_ON, "Off", False),  # it powered off: it had its seed (or failed: first boot says so)
    ({**NET_TO_POWER_ON, "installing": "ok"}, "On", False),  # done: the disks are booting
    ({**NET_TO_POWER_ON, "installing": "failed"}, "On", False),  # a failed attempt: a new one anyway
    ({"hostkey": "ok", "netboot": "ok", "boot_net": "ok"}, "On", False),  # never powered on for it
    (VM_TO_POWER_ON, "On", False),  # virtual media: the BMC holds the seed
])
def test_an_orphaned_network_installer_is_one_powered_on_by_a_gone_run_and_not_done(
        outcomes: dict[str, str | None], power: str, orphaned: bool) -> None:
    assert orphaned_net_installer(attempt(**outcomes), power) is orphaned


@pytest.mark.parametrize(("now", "att", "kinds"), [
    # the profile switched methods while an install was under way: the attempt finishes as it started
    (InstallMethod.VIRTUAL_MEDIA, attempt(**NET_TO_POWER_ON, installing="ok"), NET[5:]),
    (InstallMethod.PXE, attempt(**VM_TO_POWER_ON), VM[4:]),
    # a failed network attempt: the next run installs again, by the method now configured
    (InstallMethod.HTTP_BOOT, attempt(**NET_TO_POWER_ON, installing="failed"), NET),
    (InstallMethod.VIRTUAL_MEDIA, attempt(**NET_TO_POWER_ON, installing="failed"), VM),
])
def test_a_resumed_attempt_keeps_its_method(make_host: Callable[..., HostEntry], tmp_path: Path,
                                            now: InstallMethod, att: Attempt, kinds: list[str]) -> None:
    observed = OsObserved(ssh=Ssh.DOWN, power="On", known_hosts=tmp_path / "kh", installer=URL, method=now,
                          expected_fingerprint=FP, attempt=att)
    assert [a.kind for a in plan_os(make_host(), observed).actions] == kinds


def test_a_node_up_with_the_new_key_still_gets_its_boot_entry_removed(make_host: Callable[..., HostEntry],
                                                                      tmp_path: Path) -> None:
    observed = OsObserved(ssh=Ssh.OK, power="On", known_hosts=tmp_path / "kh", installer=URL,
                          method=InstallMethod.PXE, expected_fingerprint=FP,
                          attempt=attempt(**NET_TO_POWER_ON, installing="ok"))
    plan = plan_os(make_host(), observed)
    assert [(a.kind, a.changes_node) for a in plan.actions] == [("os-netboot-off", True), ("os-first-boot", False)]


def test_the_boot_entry_step_names_the_installer_with_its_password_masked(make_host: Callable[..., HostEntry],
                                                                         tmp_path: Path) -> None:
    observed = OsObserved(ssh=Ssh.DOWN, power="Off", known_hosts=tmp_path / "kh", method=InstallMethod.PXE,
                          installer="https://ops:s3cret-pw@images.example/install.iso")
    plan = plan_os(make_host(), observed)
    assert all("s3cret-pw" not in a.describe() for a in plan.actions) and "s3cret-pw" not in plan.note
    assert "https://ops:<redacted>@images.example/install.iso" in plan.actions[1].after
