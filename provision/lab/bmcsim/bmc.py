"""One simulated BMC: routes a request to the piece that owns it and answers a Reply."""

from __future__ import annotations

import uuid
from functools import cache
from pathlib import Path
from urllib.parse import unquote

from provision.lab.bmcsim import events, expand
from provision.lab.bmcsim.accounts import ACCOUNT_SERVICE, Account, Accounts, Privilege
from provision.lab.bmcsim.actions import Actions
from provision.lab.bmcsim.auth import Sessions
from provision.lab.bmcsim.bios import Bios
from provision.lab.bmcsim.certs import Certificates, self_signed
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.config import BmcConfig, SimConfig
from provision.lab.bmcsim.faults import Faults
from provision.lab.bmcsim.hardware import Hardware
from provision.lab.bmcsim.host import HostBackend
from provision.lab.bmcsim.host_link import HostLink
from provision.lab.bmcsim.messages import message
from provision.lab.bmcsim.metadata import metadata_xml, service_document
from provision.lab.bmcsim.patches import Patches
from provision.lab.bmcsim.power import Power
from provision.lab.bmcsim.reply import Reply, error, no_content
from provision.lab.bmcsim.request import Request, json_body
from provision.lab.bmcsim.seed import Seed
from provision.lab.bmcsim.sel import Sel
from provision.lab.bmcsim.synth import SESSIONS
from provision.lab.bmcsim.tasks import Tasks
from provision.lab.bmcsim.tree import ROOT, Json, Resources, etags_match, norm
from provision.lab.bmcsim.update import Updater

PUBLIC_GETS = {"/redfish", ROOT, f"{ROOT}/$metadata", f"{ROOT}/odata"}


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
        self.accounts = Accounts(cfg.name, self.res, cfg.username, cfg.password.get_secret_value(), cfg.factory,
                                 seed.accounts, seed.accounts_own)
        self.sessions = Sessions(self.res, clock, self.accounts, sim.timings.session_timeout)
        self.certs = self._certificates(sim)
        self.faults.on_change("session-expiry", self._expire_sessions)
        self.hardware = Hardware(self.res, self.faults)
        self.tasks = Tasks(cfg.name, self.res, clock, self.faults)
        self.updater = Updater(cfg.name, self.res, self.tasks, self.sel, self.faults, sim, self.reboot)
        self.bios = {s: Bios(cfg.name, self.res, self.sel, lay) for s, lay in seed.bios.items()}
        self.host = host
        self.link = HostLink(cfg.name, self.res, self.sel, seed.tree, host, self._host_off)
        self.power = {s: Power(cfg.name, s, self.res, clock, self.sel, sim.timings,
                               on_boot=lambda s=s: self._host_booted(s),  # type: ignore[misc]
                               on_power=lambda on, s=s: self.link.power_changed(s, on))  # type: ignore[misc]
                      for s in seed.systems}
        if host is not None:
            host.bind(self.link.listener())
            if not host.starts_on:  # a VM with blank drives is off until the BMC powers it on
                for power in self.power.values():
                    power.start_off()
        self.bmc_reboot_s = sim.timings.bmc_reboot
        self.down_until = 0.0
        self.actions = Actions(self)
        self.patches = Patches(self)
        if not cfg.as_captured:
            self._personalise()

    def _certificates(self, sim: SimConfig) -> Certificates | None:
        """The manager's HTTPS certificate: from the factory, a self-signed one of its own; else the lab's (served
        by the shared TLS context until a replace)."""
        if self.seed.https_certs is None:
            return None
        if self.cfg.factory:
            cert, key = self_signed(f"bmc-{self.name}")
            return Certificates(self.name, self.res, self.sel, self.seed.https_certs, cert, key)
        # as captured, a captured Certificate resource stays as captured until a replace
        lab_cert = _read(sim.cert_file) if sim.cert_file is not None and not self.cfg.as_captured else None
        return Certificates(self.name, self.res, self.sel, self.seed.https_certs, lab_cert)

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

    def _host_off(self, detail: str) -> None:
        for power in self.power.values():
            power.host_off(detail)

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
        who = self.sessions.who(req.headers.get("X-Auth-Token"), req.headers.get("Authorization"))
        if who is None:
            reply = error(401, "NoValidSession")
            reply.headers["WWW-Authenticate"] = 'Basic realm="provision-lab"'
            return reply
        refused = self._refused(who[0], who[1], req.method, path, req.body)
        if refused is not None:
            return refused
        method = {"GET": self._get, "HEAD": self._get, "PATCH": self._patch, "PUT": self._patch,
                  "POST": self.actions.post, "DELETE": self._delete}.get(req.method)
        if method is None:
            return error(405, "OperationNotAllowed")
        if method != self._get and self._captured_raw(path) is not None:
            return error(405, "OperationNotAllowed")  # served as captured, byte for byte: read-only
        return method(path, req)

    def _refused(self, acct: Account, session: str | None, method: str, path: str, raw: bytes) -> Reply | None:
        """403 when the account may not do this: PasswordChangeRequired until its password is changed (DSP0266),
        else InsufficientPrivilege when its role lacks the privilege the operation needs."""
        own = path == acct.uri
        if method in ("GET", "HEAD"):
            need = Privilege.LOGIN
        elif method == "DELETE" and path.startswith(SESSIONS + "/"):
            need = Privilege.LOGIN if path == session else Privilege.CONFIGURE_MANAGER
        elif own and method in ("PATCH", "PUT") and _keys(raw) <= {"Password"}:
            need = Privilege.CONFIGURE_SELF
        elif path == ACCOUNT_SERVICE or path.startswith(ACCOUNT_SERVICE + "/") or self.accounts.owns(path):
            need = Privilege.CONFIGURE_USERS
        elif path.startswith(f"{ROOT}/CertificateService") or any(
                path == m or path.startswith(m + "/") for m in self.seed.managers):
            need = Privilege.CONFIGURE_MANAGER
        else:
            need = Privilege.CONFIGURE_COMPONENTS
        if acct.change_required and not ((own and need in (Privilege.LOGIN, Privilege.CONFIGURE_SELF))
                                         or (session is not None and path == session)):
            events.record(self.name, "auth.password_change_required", method=method, path=path)
            return error(403, "PasswordChangeRequired", acct.uri)
        if not acct.can(need):
            events.record(self.name, "auth.forbidden", method=method, path=path, privilege=need.value)
            return error(403, "InsufficientPrivilege")
        return None

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
        body = json_body(raw)
        if body is None:
            return error(400, "MalformedJSON")
        made = self.sessions.create(body.get("UserName"), body.get("Password"))
        if made is None:
            events.record(self.name, "login.refused")
            return error(401, "NoValidSession")
        token, uri, acct = made
        events.record(self.name, "login", session=uri.rsplit("/", 1)[1])
        body = dict(self.res.get(uri) or {})
        if acct.change_required:  # DSP0266: the session is made, and says what must happen first
            body["@Message.ExtendedInfo"] = [message("PasswordChangeRequired", acct.uri)]
        return Reply(201, body, {"X-Auth-Token": token, "Location": uri})

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
        body = json_body(req.body)
        if body is None:
            return error(400, "MalformedJSON")
        errors = self.patches.errors(path, body)
        if errors is None:
            return error(405, "OperationNotAllowed")
        if errors:
            return Reply(400, {"error": {"code": errors[0]["MessageId"], "message": errors[0]["Message"],
                                         "@Message.ExtendedInfo": errors}})
        if "Password" in body and self.accounts.at(path) and self.faults.take("password-change-500-after-effect"):
            events.record(self.name, "fault.password_500", path=path)  # the new password is in effect
            return error(500, "InternalError")
        return self._get(path, None)

    def _delete(self, path: str, _req: Request) -> Reply:
        if path.startswith(SESSIONS + "/") and self.sessions.delete(path):
            events.record(self.name, "logout", session=path.rsplit("/", 1)[1])
            return no_content()
        acct = self.accounts.at(path)
        if acct is not None:
            return self.accounts.delete(acct)
        if (task := self.updater.delete_task(path)) is not None:
            return task
        if not self.res.exists(path):
            return error(404, "ResourceMissingAtURI", path)
        return error(405, "OperationNotAllowed")

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
                "pending_bios": {s: sorted(b.pending()) for s, b in self.bios.items()},
                "password_change_required": self.accounts.change_required(), "certificate": self._cert_state()}

    def _cert_state(self) -> str | None:
        """What HTTPS serves: the lab's certificate, the factory's own, or one installed by ReplaceCertificate."""
        if self.certs is None:
            return None
        if self.certs.tls is None:
            return "lab"
        return "factory" if self.cfg.factory and self.certs.version == 1 else "replaced"


@cache
def _read(path: Path) -> bytes:
    """A file every BMC of the process reads the same (the lab's server certificate): read once."""
    return path.read_bytes()


def _keys(raw: bytes) -> set[str]:
    """The properties a request body sets (annotations aside); none for a body that is no JSON object."""
    body = json_body(raw) or {}
    return {k for k in body if not k.startswith("@")}
