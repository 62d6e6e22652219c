"""The simulated BMC's side of its host (a VM, or none): power and the next boot passed on, the virtual media
drives the host has, and what the host reports (powered off, an image it could not fetch)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from provision.lab.bmcsim import events, vmedia
from provision.lab.bmcsim.host import HostBackend, HostEvent, HostEventKind, next_boot
from provision.lab.bmcsim.reply import Reply, error
from provision.lab.bmcsim.sel import Sel
from provision.lab.bmcsim.tree import Json, Resources, SeedTree


class HostLink:
    """What one BMC tells its host and hears from it."""

    def __init__(self, name: str, res: Resources, sel: Sel, tree: SeedTree, host: HostBackend | None,
                 host_off: Callable[[str], None]) -> None:
        self.name = name
        self.res = res
        self.sel = sel
        self.tree = tree
        self.host = host
        self.host_off = host_off  # every system of the BMC sees its host power off (the detail says why)
        self._cds: dict[str, str] | None = None

    def power_changed(self, system: str, on: bool) -> None:
        if self.host is not None:
            boot = (self.res.get(system) or {}).get("Boot") or {}
            self.host.power(on, next_boot(boot))

    def listener(self) -> Callable[[HostEvent], None]:
        """What the host reports (from its own thread) is handled on the simulator's loop."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None

        def report(event: HostEvent) -> None:
            if loop is None:
                self._event(event)
            else:
                loop.call_soon_threadsafe(self._event, event)

        return report

    def _event(self, event: HostEvent) -> None:
        events.record(self.name, "host.event", kind=event.kind.value, detail=event.detail)
        if event.kind is HostEventKind.POWERED_OFF:
            self.host_off(event.detail)
        elif event.kind is HostEventKind.MEDIA_FAILED:
            for uri in self.media():  # the drive whose image could not be fetched is ejected
                media = self.res.get(uri) or {}
                if media.get("Inserted") and media.get("Image") and event.detail.startswith(f"{media['Image']}:"):
                    vmedia.eject(self.name, self.res, self.sel, uri)
            self.sel.add(f"Virtual media image could not be fetched: {event.detail}", severity="Warning")

    def media(self) -> dict[str, str]:
        """URI -> Id of the tree's virtual media the host has a drive for (CD/DVD, USB stick), found once."""
        if self._cds is None:
            found = ((uri, self.res.get(uri) or {}) for uri in self.tree.uris())
            self._cds = {uri: str(res.get("Id") or uri.rsplit("/", 1)[-1]) for uri, res in found
                         if str(res.get("@odata.type", "")).startswith("#VirtualMedia.")
                         and any(t in ("CD", "DVD", "USBStick") for t in res.get("MediaTypes") or [])}
        return self._cds

    def media_changed(self, uri: str) -> None:
        """Tell the host what one of its virtual media drives now holds (which drive: its Id)."""
        slot = self.media().get(uri)
        if self.host is None or slot is None:
            return
        media = self.res.get(uri) or {}
        if media.get("Inserted") and media.get("Image"):
            self.host.insert_media(str(media["Image"]), slot)
        else:
            self.host.eject_media(slot)

    def media_refused(self, body: Json) -> Reply | None:
        image = body.get("Image")
        why = self.host.check_media(image) if self.host is not None and isinstance(image, str) and image else None
        if why is None:
            return None
        self.sel.add(f"Virtual media refused: {why}", severity="Warning")
        return error(400, "ActionParameterValueNotInList", str(image), "Image", "VirtualMedia.InsertMedia")
