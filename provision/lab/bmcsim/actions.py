"""POST on one simulated BMC: its actions (system and manager reset, updates, virtual media, certificates, logs,
BIOS defaults), a new account, and the update service's push and multipart URIs."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from provision.lab.bmcsim import events, multipart, vmedia
from provision.lab.bmcsim.bios import Bios
from provision.lab.bmcsim.reply import Reply, accepted, error, no_content, success
from provision.lab.bmcsim.request import Request, json_body
from provision.lab.bmcsim.tree import ROOT, Json

if TYPE_CHECKING:
    from provision.lab.bmcsim.bmc import Bmc


class Actions:
    """The POSTs one BMC answers (the rest of its state is the Bmc's)."""

    def __init__(self, bmc: Bmc) -> None:
        self.bmc = bmc

    def post(self, path: str, req: Request) -> Reply:
        target = self.bmc.seed.tree.action_targets.get(path)
        if target is not None:
            body = json_body(req.body or b"{}")
            if body is None:
                return error(400, "MalformedJSON")
            return self._action(target[0], target[1], body)
        if path == self.bmc.accounts.collection:
            body = json_body(req.body)
            return self.bmc.accounts.create(body) if body is not None else error(400, "MalformedJSON")
        ctype = req.headers.get("Content-Type", "")
        if path == self.bmc.seed.multipart_uri and ctype.startswith("multipart/"):
            return self._multipart(ctype, req.body)
        if path == self.bmc.seed.push_uri:
            return self.bmc.updater.push(req.body, {}, method="http_push", uri=path)
        if not self.bmc.res.exists(path):
            return error(404, "ResourceMissingAtURI", path)
        return error(405, "OperationNotAllowed")

    def _action(self, owner: str, name: str, body: Json) -> Reply:
        action = _find_action(self.bmc.res.get(owner) or {}, name)
        if name == "ComputerSystem.Reset" and owner in self.bmc.power:
            return self.bmc.power[owner].reset(body, action)
        if name == "UpdateService.SimpleUpdate":
            return self.bmc.updater.simple_update(body)
        if name == "VirtualMedia.InsertMedia":
            bmc = self.bmc
            reply = bmc.link.media_refused(body) or vmedia.insert_action(bmc.name, bmc.res, bmc.sel, owner, body)
            if reply.status < 300:
                self.bmc.link.media_changed(owner)
            return reply
        if name == "VirtualMedia.EjectMedia":
            reply = vmedia.eject(self.bmc.name, self.bmc.res, self.bmc.sel, owner)
            self.bmc.link.media_changed(owner)
            return reply
        if name in ("CertificateService.GenerateCSR", "CertificateService.ReplaceCertificate"):
            return self._certificate_action(name, body)
        if name == "Manager.Reset":
            asyncio.get_running_loop().call_soon(self.bmc.reboot, f"Manager.Reset {body.get('ResetType', '')}")
            return no_content()
        if name == "LogService.ClearLog":
            return self._clear_log(owner)
        if name == "Bios.ResetBios" and (bios := self._bios_at(owner)) is not None:
            bios.reset_to_defaults()
            return success()
        if name in ("Bios.ResetBios", "SmcUpdateService.Install", "DellUpdateService.Install"):
            self.bmc.sel.add(f"Action {name} accepted (no effect in the lab)")
            return success()
        return error(400, "ActionNotSupported", name)

    def _certificate_action(self, name: str, body: Json) -> Reply:
        if self.bmc.certs is None:
            return error(400, "ActionNotSupported", name)
        if name == "CertificateService.ReplaceCertificate":
            return self.bmc.certs.replace(body)
        if self.bmc.faults.get("csr-never-completes") is not None:  # an asynchronous CSR whose task never ends
            task = self.bmc.tasks.create("Generate CSR", f"{ROOT}/CertificateService/Actions/{name}", body)
            events.record(self.bmc.name, "fault.csr_never_completes", task=task.ident)
            return accepted(task.uri, self.bmc.tasks.body(task))
        return self.bmc.certs.generate_csr(body)

    def _bios_at(self, uri: str) -> Bios | None:
        return next((b for b in self.bmc.bios.values() if b.layout.bios == uri.rstrip("/")), None)

    def _clear_log(self, service: str) -> Reply:
        entries = str((self.bmc.res.get(service) or {}).get("Entries", {}).get("@odata.id", "")).rstrip("/")
        if entries and self.bmc.res.exists(entries):
            coll = self.bmc.res.mutable(entries)
            coll.update(Members=[], **{"Members@odata.count": 0})
        return success()

    def _multipart(self, ctype: str, raw: bytes) -> Reply:
        try:
            parts = multipart.parse(ctype, raw)
        except multipart.MultipartError:
            return error(400, "GeneralError")
        params: Json = {}
        image: bytes | None = None
        for part in parts:
            if part.name == "UpdateParameters":
                params = json_body(part.payload) or {}
            elif part.name == "UpdateFile" or part.filename:
                image = part.payload
        if image is None:
            return error(400, "ActionParameterMissing", "MultipartHttpPushUri", "UpdateFile")
        return self.bmc.updater.push(image, params, uri=self.bmc.seed.multipart_uri or "")


def _find_action(res: Json, name: str) -> Json:
    acts = res.get("Actions") or {}
    for key, val in [*acts.items(), *(acts.get("Oem") or {}).items()]:
        if key.split("#")[-1] == name and isinstance(val, dict):
            return val
    return {}
