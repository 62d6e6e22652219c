"""Day zero, the BMC's own settings (the `bmc` stage, after preflight and before firmware): NTP, host name, DNS,
SSDP/IPMI as the `bmc:` section says, then the HTTPS certificate issued by the site's CA.

observe reads ManagerNetworkProtocol, the manager's EthernetInterface and its HTTPS certificate (judged against
the site CA: issuer and signature, the names it must carry, days left); plan is a pure function of that and
the spec; apply writes each setting and reads it back, and for the certificate: GenerateCSR (its task followed
to a deadline), signing (the CA key file, or the site's command), ReplaceCertificate, then a TLS handshake that
must verify against the site CA. A BMC that offers no GenerateCSR is said so in the plan's note and its
certificate left. Failpoints `replace-certificate:csr` and `:signed` sit between the steps (a kill there
leaves the old certificate; the next run plans the replacement again).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from provision.bringup import failpoint
from provision.bringup.model import Action, StagePlan
from provision.bringup.options import BringupOptions
from provision.bringup.stage import StageContext
from provision.bringup.stages.bmc_session import BmcStage, bmc
from provision.errors import CheckFailed
from provision.redfish.connector import Connector
from provision.redfish.ops import certificates as certs
from provision.redfish.ops import manager_settings as ms
from provision.redfish.ops.waiting import Clock
from provision.spec import HostEntry
from provision.spec.bmc_setup import BmcSetup, CertificateSpec, fill

CERT_KIND = "replace-certificate"
SERVED_WAIT_S = 60.0
"""How long the BMC's web server may take to serve the new certificate."""


class BmcObserved(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    settings: ms.ManagerSettings
    cert: certs.CertObserved | None = None
    verdict: certs.CertVerdict | None = None
    """The certificate against the site CA (None: the spec names no certificate)."""


class SettingAction(Action):
    setting: ms.Setting


class CertAction(Action):
    csr_target: str
    replace_target: str | None
    collection: str
    cert_uri: str | None


def bmc_host(host: HostEntry) -> str:
    return urlsplit(host.bmc.address).hostname or ""


def names(host: HostEntry, cert: CertificateSpec) -> list[str]:
    """The names the BMC's certificate must carry: the BMC address's host, then the spec's SANs."""
    out = [bmc_host(host)]
    out += [n for n in (fill(s, host.name, bmc_host(host)) for s in cert.sans) if n not in out]
    return out


def _setting(kind: str, uri: str | None, path: str, have: object, want: object, node: str,
             resource: str, slots: int = 0) -> list[SettingAction]:
    if have == want:
        return []
    if uri is None or have is None:
        raise CheckFailed(f"{node}: the BMC offers no {path} ({resource}): cannot set it to {want!r}")
    value = list(want) if isinstance(want, tuple) else want
    return [SettingAction(kind=kind, target=path, before=_shown(have), after=_shown(want),
                          setting=ms.Setting(uri=uri, path=path, value=value, slots=slots))]


def _shown(value: object) -> str:
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value) or "(none)"
    return str(value)


def plan_settings(host: HostEntry, setup: BmcSetup, got: ms.ManagerSettings) -> list[SettingAction]:
    """Pure: a write per property the spec names whose value differs."""
    n, proto, eth = host.name, "ManagerNetworkProtocol", "the manager's EthernetInterface"
    out: list[SettingAction] = []
    if setup.ntp:
        out += _setting("set-ntp", got.protocol_uri, "NTP.NTPServers", got.ntp_servers, setup.ntp, n, proto,
                        got.slots.get("NTP.NTPServers", 0))
        out += _setting("set-ntp", got.protocol_uri, "NTP.ProtocolEnabled", got.ntp_enabled, True, n, proto)
    if setup.hostname is not None:
        out += _setting("set-hostname", got.ethernet_uri, "HostName", got.hostname,
                        fill(setup.hostname, host.name, bmc_host(host)), n, eth)
    if setup.dns:
        out += _setting("set-dns", got.ethernet_uri, "StaticNameServers", got.dns, setup.dns, n, eth,
                        got.slots.get("StaticNameServers", 0))
    for name, want, have in (("SSDP", setup.protocols.ssdp, got.ssdp), ("IPMI", setup.protocols.ipmi, got.ipmi)):
        if want is not None:
            out += _setting("set-protocol", got.protocol_uri, f"{name}.ProtocolEnabled", have, want, n, proto)
    return out


def plan_certificate(observed: BmcObserved) -> tuple[list[CertAction], str]:
    """Pure: the replacement, unless the certificate is the site's (or the BMC cannot make a CSR: said)."""
    cert, verdict = observed.cert, observed.verdict
    if cert is None or verdict is None:
        return [], ""
    if verdict is certs.CertVerdict.SITE:
        return [], "certificate issued by the site CA"
    if cert.csr_target is None:
        return [], f"certificate {verdict.value}, left as it is: the BMC offers no GenerateCSR"
    if cert.collection is None or (cert.replace_target is None and cert.cert_uri is not None):
        return [], f"certificate {verdict.value}, left as it is: the BMC offers no ReplaceCertificate"
    return [CertAction(kind=CERT_KIND, target="HTTPS certificate", before=verdict.value, after="issued by the site CA",
                       csr_target=cert.csr_target, replace_target=cert.replace_target, collection=cert.collection,
                       cert_uri=cert.cert_uri)], ""


def plan_bmc(host: HostEntry, observed: BmcObserved | None) -> StagePlan:
    setup = host.spec.bmc
    if setup is None or observed is None:
        return StagePlan(stage="bmc", node=host.name, note="no bmc: section")
    settings = plan_settings(host, setup, observed.settings)
    cert_actions, note = plan_certificate(observed)
    return StagePlan(stage="bmc", node=host.name, actions=(*settings, *cert_actions),
                     note=note or ("settings as the spec says" if not settings else ""))


def secret_env(setup: BmcSetup | None) -> frozenset[str]:
    """The environment variables the spec reads passwords from (kept from the signing command)."""
    if setup is None:
        return frozenset()
    sources = [a.password for a in setup.accounts]
    sources += [setup.initial.password, setup.initial.rotate_to] if setup.initial else []
    return frozenset(s.env for s in sources if s.env is not None)


def subject_fields(host: HostEntry, cert: CertificateSpec) -> dict[str, str]:
    s = cert.subject
    fields = {"CommonName": fill(s.common_name, host.name, bmc_host(host)), "Organization": s.organization,
              "OrganizationalUnit": s.organizational_unit, "City": s.city, "State": s.state, "Country": s.country}
    return {k: v for k, v in fields.items() if v}


Session = Callable[[StageContext], AbstractContextManager[tuple[Connector, str | None]]]
"""The node's BMC session as (connector, manager URI) (tests pass a fake)."""
Served = Callable[[HostEntry, CertificateSpec], str | None]
"""None when the BMC's TLS verifies against the site CA, else why not (tests pass a fake)."""


@contextmanager
def _shared(ctx: StageContext, opts: BringupOptions) -> Iterator[tuple[Connector, str | None]]:
    with bmc(ctx, opts) as node:
        yield node.conn, node.manager_uri


def _served_tls(host: HostEntry, cert: CertificateSpec) -> str | None:
    return certs.served_verifies(host.bmc.address, cert.ca_cert)


class BmcSetupStage(BmcStage):
    """NTP, host name, DNS and protocols as the spec says; the HTTPS certificate issued by the site CA."""

    name = "bmc"

    def __init__(self, opts: BringupOptions, session: Session | None = None, served: Served | None = None,
                 clock: Clock | None = None) -> None:
        super().__init__(opts)
        self.session: Session = session or (lambda ctx: _shared(ctx, opts))
        self.served = served or _served_tls
        if clock is not None:
            self.clock = clock
    judges_changes = True  # in --plan, judged only when no account change comes before it (its login)

    def observe(self, ctx: StageContext) -> BmcObserved | None:
        setup = ctx.host.spec.bmc
        if setup is None:
            return None
        ca = certs.check_ca(setup.certificate.ca_cert, setup.certificate.ca_key) if setup.certificate else None
        with self.session(ctx) as (conn, manager_uri):
            settings = ms.observe(conn, manager_uri)
            cert = certs.observe(conn, manager_uri) if setup.certificate else None
        verdict = None
        if setup.certificate is not None and cert is not None and ca is not None:
            verdict = certs.judge(cert.pem, ca, set(names(ctx.host, setup.certificate)), setup.certificate.renew_days,
                                  datetime.datetime.now(datetime.UTC))
        return BmcObserved(settings=settings, cert=cert, verdict=verdict)

    def plan(self, host: HostEntry, observed: BmcObserved | None) -> StagePlan:
        return plan_bmc(host, observed)

    def apply(self, ctx: StageContext, plan: StagePlan) -> None:
        with self.session(ctx) as (conn, _):
            for action in plan.actions:
                ctx.say(self.name, action.describe())
                if isinstance(action, SettingAction):
                    ctx.side_effect(self.name, action, partial(ms.write, conn, action.setting))
                elif isinstance(action, CertAction):
                    ctx.side_effect(self.name, action, partial(self._certificate, ctx.host, conn, action))
                else:
                    raise TypeError(f"the bmc stage cannot apply {action.kind}")

    def _certificate(self, host: HostEntry, conn: Connector, action: CertAction) -> None:
        cert = host.spec.bmc.certificate if host.spec.bmc else None
        assert cert is not None
        ca = certs.check_ca(cert.ca_cert, cert.ca_key)
        wanted = names(host, cert)
        csr = certs.generate_csr(conn, action.csr_target, certs.csr_body(action.collection, subject_fields(host, cert),
                                                                         wanted), cert.csr_timeout_s, self.clock)
        failpoint.hit(CERT_KIND, "csr")
        now = datetime.datetime.now(datetime.UTC)
        pem = certs.sign_with_key(csr, ca, cert.ca_key, cert.days, now, wanted) if cert.ca_key is not None \
            else certs.sign_with_command(cert.sign_command or (), csr, secret_env(host.spec.bmc))
        if not certs.issued_by(certs.load_cert(pem, "the signed certificate"), ca):
            raise CheckFailed(f"{host.name}: the signed certificate is not issued by the site CA {cert.ca_cert}; "
                              "not installed")
        failpoint.hit(CERT_KIND, "signed")
        if action.replace_target is not None and action.cert_uri is not None:
            certs.replace(conn, action.replace_target, action.cert_uri, pem)
        else:
            certs.install(conn, action.collection, pem)
        self._check_served(host, cert, self.clock)

    def _check_served(self, host: HostEntry, cert: CertificateSpec, clock: Clock) -> None:
        """The BMC's TLS handshake verifies against the site CA (its web server may restart first)."""
        if not host.bmc.address.startswith("https://"):
            return
        deadline = clock.now() + SERVED_WAIT_S
        while True:
            why = self.served(host, cert)
            if why is None:
                return
            if clock.now() >= deadline:
                raise CheckFailed(f"{host.name}: the BMC's certificate was replaced, but its TLS does not verify "
                                  f"against the site CA {cert.ca_cert} after {SERVED_WAIT_S:g} s: {why}")
            clock.sleep(clock.poll_s)
