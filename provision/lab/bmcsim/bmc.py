"""One simulated BMC: routes a request to the piece that owns it and answers a Reply."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from urllib.parse import unquote

from provision.lab.bmcsim import events, expand, multipart, vmedia
from provision.lab.bmcsim.auth import Sessions
from provision.lab.bmcsim.bios import Bios
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.config import BmcConfig, SimConfig
from provision.lab.bmcsim.faults import Faults
from provision.lab.bmcsim.hardware import Hardware
from provision.lab.bmcsim.host import HostBackend, HostEvent, HostEventKind, next_boot
from provision.lab.bmcsim.metadata import metadata_xml, service_document
from provision.lab.bmcsim.power import Power
from provision.lab.bmcsim.reply import Reply, error, no_content, success
from provision.lab.bmcsim.seed import Seed
from provision.lab.bmcsim.sel import Sel
from provision.lab.bmcsim.synth import SESSIONS
from provision.lab.bmcsim.tasks import Tasks
from provision.lab.bmcsim.tree import ROOT, Json, Resources, etags_match, norm
from provision.lab.bmcsim.update import Updater

PUBLIC_GETS = {"/redfish", ROOT, f"{ROOT}/$metadata", f"{ROOT}/odata"}


@dataclass(slots=True)
class Request:
    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes = b""
    query: str = ""


class Bmc:
    """State and behaviour of one simulated BMC."""

    def __init__(self, cfg: BmcConfig, sim: SimConfig, seed: Seed, clock: SimClock,
                 host: HostBackend | None = None) -> None:
        self.name = cfg.name
        self.cfg = cfg
        self.seed = seed
        self.clock = clock
        self.res = Resources(seed.tree)
        self.sel = Sel(cfg.name, self.res, clock, seed.sel_service)
        self.faults = Faults(self.sel)
        self.sessions = Sessions(self.res, clock, cfg.username, cfg.password.get_secret_value(),
                                 sim.timings.session_timeout)
        self.faults.on_change("session-expiry", self._expire_sessions)
        self.hardware = Hardware(self.res, self.faults)
        self.tasks = Tasks(cfg.name, self.res, clock, self.faults)
        self.updater = Updater(cfg.name, self.res, self.tasks, self.sel, self.faults, sim, self.reboot)
        self.bios = {s: Bios(cfg.name, self.res, self.sel, lay) for s, lay in seed.bios.items()}
        self.host = host
        self._cds: dict[str, str] | None = None
        self.power = {s: Power(cfg.name, s, self.res, clock, self.sel, sim.timings,
                               on_boot=lambda s=s: self._host_booted(s),  # type: ignore[misc]
                               on_power=lambda on, s=s: self._power_changed(s, on))  # type: ignore[misc]
                      for s in seed.systems}
        if host is not None:
            host.bind(self._from_host())
            if not host.starts_on:  # a VM with blank drives is off until the BMC powers it on
                for power in self.power.values():
                    power.start_off()
        self.bmc_reboot_s = sim.timings.bmc_reboot
        self.down_until = 0.0
        if not cfg.as_captured:
            self._personalise()

    def _personalise(self) -> None:
        """Each node of a filled lab gets its own serial number and UUID (the rest stays shared), as a fleet's
        servers have. Not as captured: that mode serves the capture's bytes, its SerialNumber and UUID too."""
        ident = str(uuid.uuid5(uuid.NAMESPACE_URL, f"provision-lab/{self.name}"))
        for system in self.seed.systems:
            sys_res = self.res.mutable(system)
            sys_res.update(UUID=ident, SerialNumber=f"LAB{self.cfg.index:05d}")
            sys_res.pop("@odata.etag", None)

    # --- hooks --------------------------------------------------------------------------
    def _expire_sessions(self, on: bool) -> None:
        if on:
            n = self.sessions.expire_all()
            events.record(self.name, "sessions.expired", count=n)

    def _host_booted(self, system: str) -> None:
        if system in self.bios:
            self.bios[system].apply_pending(stuck=self.faults.get("bios-stuck-pending") is not None)
        self.updater.apply_staged()
        self.power[system].consume_boot_once()

    def _power_changed(self, system: str, on: bool) -> None:
        if self.host is not None:
            boot = (self.res.get(system) or {}).get("Boot") or {}
            self.host.power(on, next_boot(boot))

    def _from_host(self) -> Callable[[HostEvent], None]:
        """What the host reports (from its own thread) is handled on the simulator's loop."""
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None

        def report(event: HostEvent) -> None:
            if loop is None:
                self._host_event(event)
            else:
                loop.call_soon_threadsafe(self._host_event, event)

        return report

    def _host_event(self, event: HostEvent) -> None:
        events.record(self.name, "host.event", kind=event.kind.value, detail=event.detail)
        if event.kind is HostEventKind.POWERED_OFF:
            for power in self.power.values():
                power.host_off(event.detail)
        elif event.kind is HostEventKind.MEDIA_FAILED:
            for uri in self._host_media():  # the drive whose image could not be fetched is ejected
                media = self.res.get(uri) or {}
                if media.get("Inserted") and media.get("Image") and event.detail.startswith(f"{media['Image']}:"):
                    vmedia.eject(self.name, self.res, self.sel, uri)
            self.sel.add(f"Virtual media image could not be fetched: {event.detail}", severity="Warning")

    def _host_media(self) -> dict[str, str]:
        """URI -> Id of the tree's virtual media the host has a drive for (CD/DVD, USB stick), found once."""
        if self._cds is None:
            found = ((uri, self.res.get(uri) or {}) for uri in self.seed.tree.uris())
            self._cds = {uri: str(res.get("Id") or uri.rsplit("/", 1)[-1]) for uri, res in found
                         if str(res.get("@odata.type", "")).startswith("#VirtualMedia.")
                         and any(t in ("CD", "DVD", "USBStick") for t in res.get("MediaTypes") or [])}
        return self._cds

    def _media_changed(self, uri: str) -> None:
        """Tell the host what one of its virtual media drives now holds (which drive: its Id)."""
        slot = self._host_media().get(uri)
        if self.host is None or slot is None:
            return
        media = self.res.get(uri) or {}
        if media.get("Inserted") and media.get("Image"):
            self.host.insert_media(str(media["Image"]), slot)
        else:
            self.host.eject_media(slot)

    def _media_refused(self, body: Json) -> Reply | None:
        image = body.get("Image")
        why = self.host.check_media(image) if self.host is not None and isinstance(image, str) and image else None
        if why is None:
            return None
        self.sel.add(f"Virtual media refused: {why}", severity="Warning")
        return error(400, "ActionParameterValueNotInList", str(image), "Image", "VirtualMedia.InsertMedia")

    def reboot(self, why: str) -> None:
        """The BMC itself restarts: unreachable for a while, every session gone."""
        self.down_until = self.clock.now() + self.bmc_reboot_s
        self.sessions.expire_all()
        self.sel.add(f"BMC reset: {why}", severity="Warning")

    def is_down(self) -> bool:
        return self.clock.now() < self.down_until

    # --- requests -----------------------------------------------------------------------
    def handle(self, req: Request) -> Reply:
        path = norm(req.path) or "/"
        if req.method in ("GET", "HEAD") and path in PUBLIC_GETS:
            return self._public(path)
        if req.method == "POST" and path == SESSIONS:
            return self._login(req.body)
        if not self.sessions.authorized(req.headers.get("X-Auth-Token"), req.headers.get("Authorization")):
            reply = error(401, "NoValidSession")
            reply.headers["WWW-Authenticate"] = 'Basic realm="provision-lab"'
            return reply
        method = {"GET": self._get, "HEAD": self._get, "PATCH": self._patch, "PUT": self._patch,
                  "POST": self._post, "DELETE": self._delete}.get(req.method)
        if method is None:
            return error(405, "OperationNotAllowed")
        if method != self._get and self._captured_raw(path) is not None:
            return error(405, "OperationNotAllowed")  # served as captured, byte for byte: read-only
        return method(path, req)

    def _public(self, path: str) -> Reply:
        if path == "/redfish":
            return Reply(200, {"v1": f"{ROOT}/"})
        captured = self.res.exists(path) or self._captured_raw(path) is not None
        if path == f"{ROOT}/$metadata" and not captured:
            return Reply(200, raw=metadata_xml(self.seed.tree), content_type="application/xml")
        if path == f"{ROOT}/odata" and not captured:
            return Reply(200, service_document(self.seed.tree))
        return self._get(path, None)

    def _captured_raw(self, path: str) -> Reply | None:
        """A captured answer that is no JSON resource (XML, malformed JSON, a captured error status)."""
        raw = self.seed.tree.raw.get(path)
        if raw is None or self.res.own(path):
            return None
        return Reply(raw.status, raw=raw.body, headers=dict(raw.headers), content_type=raw.content_type)

    def _login(self, raw: bytes) -> Reply:
        body = _json(raw)
        if body is None:
            return error(400, "MalformedJSON")
        made = self.sessions.create(body.get("UserName"), body.get("Password"))
        if made is None:
            events.record(self.name, "login.refused")
            return error(401, "NoValidSession")
        token, uri = made
        events.record(self.name, "login", session=uri.rsplit("/", 1)[1])
        return Reply(201, self.res.get(uri), {"X-Auth-Token": token, "Location": uri})

    def _get(self, path: str, req: Request | None) -> Reply:
        page = self._page(path, req.query) if req and req.query else None
        if page is not None:
            path, req = page, None
        reply = self._get_resource(path, req)
        captured = self.seed.tree.headers.get(path)
        if captured:
            reply.headers = {**captured, **reply.headers}
        return reply

    def _page(self, path: str, query: str) -> str | None:
        """A page the capture fetched with this query (a folder named `Entries?$skip=50`)."""
        for cand in (f"{path}?{query}", f"{path}?{unquote(query)}"):
            if self.res.exists(cand) or cand in self.seed.tree.raw:
                return cand
        return None

    def _get_resource(self, path: str, req: Request | None) -> Reply:
        hit = self.res.encoded(path)
        if hit is None:
            return self._captured_raw(path) or error(404, "ResourceMissingAtURI", path)
        raw, etag = hit
        wanted = expand.parse(req.query, self._max_expand()) if req and req.query else None
        if wanted is not None:
            return Reply(200, raw=expand.encoded(self.res, path, *wanted))
        return Reply(200, raw=raw, headers={"ETag": etag})

    def _max_expand(self) -> int:
        root = self.res.get(ROOT) or {}
        eq = (root.get("ProtocolFeaturesSupported") or {}).get("ExpandQuery") or {}
        return int(eq.get("MaxLevels") or 1) if eq else 0

    def _patch(self, path: str, req: Request) -> Reply:
        if not self.res.exists(path):
            return error(404, "ResourceMissingAtURI", path)
        match = req.headers.get("If-Match")
        if match and match != "*" and not etags_match(match, self.res.etag(path)):
            return error(412, "PreconditionFailed")
        body = _json(req.body)
        if body is None:
            return error(400, "MalformedJSON")
        errors = self._patch_errors(path, body)
        if errors is None:
            return error(405, "OperationNotAllowed")
        if errors:
            return Reply(400, {"error": {"code": errors[0]["MessageId"], "message": errors[0]["Message"],
                                         "@Message.ExtendedInfo": errors}})
        return self._get(path, None)

    def _patch_errors(self, path: str, body: Json) -> list[Json] | None:
        if path in self.power:
            return self.power[path].patch(body)
        for bios in self.bios.values():
            if path == (bios.layout.settings or bios.layout.bios):
                return bios.patch_settings(body)
        kind = str((self.res.get(path) or {}).get("@odata.type", ""))
        if kind.startswith("#VirtualMedia."):
            refused = self._media_refused(body)
            reply = refused or vmedia.patch(self.name, self.res, self.sel, path, body)
            if reply.status < 300:
                self._media_changed(path)
            return [] if reply.status < 300 else (reply.body or {}).get("error", {}).get("@Message.ExtendedInfo")
        return None

    def _delete(self, path: str, _req: Request) -> Reply:
        if path.startswith(SESSIONS + "/") and self.sessions.delete(path):
            events.record(self.name, "logout", session=path.rsplit("/", 1)[1])
            return no_content()
        if not self.res.exists(path):
            return error(404, "ResourceMissingAtURI", path)
        return error(405, "OperationNotAllowed")

    def _post(self, path: str, req: Request) -> Reply:
        target = self.seed.tree.action_targets.get(path)
        if target is not None:
            body = _json(req.body or b"{}")
            if body is None:
                return error(400, "MalformedJSON")
            return self._action(target[0], target[1], body)
        ctype = req.headers.get("Content-Type", "")
        if path == self.seed.multipart_uri and ctype.startswith("multipart/"):
            return self._multipart(ctype, req.body)
        if path == self.seed.push_uri:
            return self.updater.push(req.body, {}, method="http_push", uri=path)
        if not self.res.exists(path):
            return error(404, "ResourceMissingAtURI", path)
        return error(405, "OperationNotAllowed")

    def _action(self, owner: str, name: str, body: Json) -> Reply:
        action = _find_action(self.res.get(owner) or {}, name)
        if name == "ComputerSystem.Reset" and owner in self.power:
            return self.power[owner].reset(body, action)
        if name == "UpdateService.SimpleUpdate":
            return self.updater.simple_update(body)
        if name == "VirtualMedia.InsertMedia":
            reply = self._media_refused(body) or vmedia.insert_action(self.name, self.res, self.sel, owner, body)
            if reply.status < 300:
                self._media_changed(owner)
            return reply
        if name == "VirtualMedia.EjectMedia":
            reply = vmedia.eject(self.name, self.res, self.sel, owner)
            self._media_changed(owner)
            return reply
        if name == "Manager.Reset":
            asyncio.get_running_loop().call_soon(self.reboot, f"Manager.Reset {body.get('ResetType', '')}")
            return no_content()
        if name == "LogService.ClearLog":
            return self._clear_log(owner)
        if name == "Bios.ResetBios" and (bios := self._bios_at(owner)) is not None:
            bios.reset_to_defaults()
            return success()
        if name in ("Bios.ResetBios", "SmcUpdateService.Install", "DellUpdateService.Install"):
            self.sel.add(f"Action {name} accepted (no effect in the lab)")
            return success()
        return error(400, "ActionNotSupported", name)

    def _bios_at(self, uri: str) -> Bios | None:
        return next((b for b in self.bios.values() if b.layout.bios == uri.rstrip("/")), None)

    def _clear_log(self, service: str) -> Reply:
        entries = str((self.res.get(service) or {}).get("Entries", {}).get("@odata.id", "")).rstrip("/")
        if entries and self.res.exists(entries):
            coll = self.res.mutable(entries)
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
                params = _json(part.payload) or {}
            elif part.name == "UpdateFile" or part.filename:
                image = part.payload
        if image is None:
            return error(400, "ActionParameterMissing", "MultipartHttpPushUri", "UpdateFile")
        return self.updater.push(image, params, uri=self.seed.multipart_uri or "")

    def sel_messages(self) -> list[str]:
        """Messages of the SEL entries this BMC added (for tests and `lab status`)."""
        coll = self.res.get(self.sel.entries) or {}
        uris = [str(m.get("@odata.id", "")) for m in coll.get("Members", [])]
        return [str(e.get("Message", "")) for u in uris if (e := self.res.get(u)) and e.get("MessageId") ==
                "Provision.Lab"]

    def status(self) -> Json:
        states = [p.state for p in self.power.values()]
        return {"name": self.name, "power": states[0] if len(states) == 1 else states,
                "faults": self.faults.active(), "down": self.is_down(), "sessions": len(self.sessions),
                "pending_bios": {s: sorted(b.pending()) for s, b in self.bios.items()}}


def _json(raw: bytes) -> Json | None:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _find_action(res: Json, name: str) -> Json:
    acts = res.get("Actions") or {}
    for key, val in [*acts.items(), *(acts.get("Oem") or {}).items()]:
        if key.split("#")[-1] == name and isinstance(val, dict):
            return val
    return {}
