"""PATCH on one simulated BMC: which piece owns the resource (an account, a system's power and boot, BIOS
settings, the manager's network, virtual media) and the errors it answers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from provision.lab.bmcsim import netsettings, vmedia
from provision.lab.bmcsim.tree import Json, norm

if TYPE_CHECKING:
    from provision.lab.bmcsim.bmc import Bmc


class Patches:
    """The PATCHes one BMC applies (the rest of its state is the Bmc's)."""

    def __init__(self, bmc: Bmc) -> None:
        self.bmc = bmc

    def errors(self, path: str, body: Json) -> list[Json] | None:
        """What a PATCH of `path` answers: its errors ([] when applied); None where nothing may be patched (405)."""
        acct = self.bmc.accounts.at(path)
        if acct is not None:
            return self.bmc.accounts.patch(acct, body)
        if path in self.bmc.power:
            return self.bmc.power[path].patch(body)
        for bios in self.bmc.bios.values():
            if path == (bios.layout.settings or bios.layout.bios):
                return bios.patch_settings(body)
        kind = str((self.bmc.res.get(path) or {}).get("@odata.type", ""))
        manager = next((m for m in self.bmc.seed.managers if path.startswith(m + "/")), None)
        if manager is not None and kind.startswith(("#ManagerNetworkProtocol.", "#EthernetInterface.")):
            return self._network(manager, path, kind, body)
        if kind.startswith("#VirtualMedia."):
            refused = self.bmc.link.media_refused(body)
            reply = refused or vmedia.patch(self.bmc.name, self.bmc.res, self.bmc.sel, path, body)
            if reply.status < 300:
                self.bmc.link.media_changed(path)
            return [] if reply.status < 300 else (reply.body or {}).get("error", {}).get("@Message.ExtendedInfo")
        return None

    def _network(self, manager: str, path: str, kind: str, body: Json) -> list[Json] | None:
        mgr = self.bmc.res.get(manager) or {}
        proto = norm(str((mgr.get("NetworkProtocol") or {}).get("@odata.id", ""))) or None
        coll = self.bmc.res.get(norm(str((mgr.get("EthernetInterfaces") or {}).get("@odata.id", "")))) or {}
        nics = [norm(str(m.get("@odata.id", ""))) for m in coll.get("Members") or []]
        if kind.startswith("#ManagerNetworkProtocol."):
            return netsettings.patch_protocol(self.bmc.name, self.bmc.res, path, body, nics)
        if path not in nics:
            return None
        return netsettings.patch_interface(self.bmc.name, self.bmc.res, path, body, proto, nics)
