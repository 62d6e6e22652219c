"""The host behind a simulated BMC: what power, boot override and virtual media do to it.

A BMC changes its own Redfish resources (PowerState, Boot, VirtualMedia) and then tells its host backend:

    power(on, boot)       the host powers on (booting from `boot`) or off
    insert_media(url, slot)   an image was inserted into virtual drive `slot` (the resource's Id: CD1,
                              USB1): the backend fetches it, as a real BMC does
    eject_media(slot)         that drive was ejected

Two backends: `TwinHost` (a systemd-nspawn twin: it carries its OS, so boot order and media change
nothing on it) and `VmHost` (provision/lab/bmcsim/vmhost.py: a qemu VM with UEFI firmware, NVMe
drives and a virtual CD, started, stopped and re-ordered as the BMC says). Each backend applies its
calls in order on one worker thread of its own (the asyncio loop never blocks on a host); what the
host does by itself (the OS powered the VM off; an image could not be fetched) comes back through
the `report` callable given at bind time, which the BMC makes safe to call from that thread.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from provision.lab.bmcsim import events
from provision.lab.bmcsim.tree import Json


class BootTarget(StrEnum):
    """Where the next power-on boots from (Redfish BootSourceOverrideTarget values a VM can honour)."""

    HDD = "Hdd"
    CD = "Cd"
    PXE = "Pxe"


class HostEventKind(StrEnum):
    POWERED_OFF = "powered-off"  # the host's OS turned it off (or it crashed): the BMC shows Off
    MEDIA_FAILED = "media-failed"  # the inserted image could not be fetched: the BMC ejects it


class HostEvent(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: HostEventKind
    detail: str = ""


Report = Callable[[HostEvent], None]


def next_boot(boot: Json) -> BootTarget:
    """The device the next power-on boots from, given the system's Boot object.

    An override (Once or Continuous) to Cd, Hdd or Pxe wins; anything else (Disabled, None, a target a
    VM has no device for, such as BiosSetup or Usb) boots the firmware's default order: the disks.
    """
    if boot.get("BootSourceOverrideEnabled") not in ("Once", "Continuous"):
        return BootTarget.HDD
    try:
        return BootTarget(str(boot.get("BootSourceOverrideTarget")))
    except ValueError:
        return BootTarget.HDD


class HostBackend:
    """One host. Subclasses implement the `_do_*` methods; calls run in order on the host's own thread."""

    starts_on = True  # the power state the BMC shows at start (a twin is up; a blank VM is not)

    def __init__(self, node: str) -> None:
        self.node = node
        self._lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"host-{node}")
        self._report: Report = lambda _event: None

    def bind(self, report: Report) -> None:
        self._report = report

    def power(self, on: bool, boot: BootTarget) -> None:
        self._submit("power", self._do_power, on, boot)

    def insert_media(self, url: str, slot: str = "CD1") -> None:
        self._submit("insert_media", self._do_insert, url, slot)

    def eject_media(self, slot: str = "CD1") -> None:
        self._submit("eject_media", self._do_eject, slot)

    def check_media(self, url: str) -> str | None:
        """Why this host refuses the image URL before anything is fetched (None: accepted)."""
        return None

    def close(self) -> None:
        """Stop the host and the worker (at simulator shutdown)."""
        self._lane.submit(self._do_close).result(timeout=120)
        self._lane.shutdown(wait=True)

    def _submit(self, what: str, fn: Callable[..., None], *args: object) -> None:
        def run() -> None:
            try:
                fn(*args)
            except Exception as exc:  # the host failing must not take the BMC down
                events.record(self.node, "host.failed", call=what, error=f"{exc.__class__.__name__}: {exc}")

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._lane.submit(run)
            return
        loop.run_in_executor(self._lane, run)

    def _do_power(self, on: bool, boot: BootTarget) -> None:
        raise NotImplementedError

    def _do_insert(self, url: str, slot: str) -> None:
        return None

    def _do_eject(self, slot: str) -> None:
        return None

    def _do_close(self) -> None:
        return None


class TwinHost(HostBackend):
    """A node twin (systemd-nspawn): power starts and stops it; it carries its OS, so boot order and
    virtual media are recorded by the BMC and change nothing on the twin."""

    def __init__(self, node: str, lab_dir: Path) -> None:
        super().__init__(node)
        self._lab_dir = lab_dir

    def _do_power(self, on: bool, boot: BootTarget) -> None:
        twins = importlib.import_module("provision.lab.twins")
        twins.power(self._lab_dir, self.node, on)
        events.record(self.node, "twin.power", on=on)
