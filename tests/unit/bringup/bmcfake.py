"""An in-process BMC for the day-zero stages: accounts (a factory account that must change its password),
ManagerNetworkProtocol and an EthernetInterface, a CertificateService (GenerateCSR, ReplaceCertificate) and the
HTTPS certificate it serves. The stages reach it through a fake connector with the Connector's public methods,
a login probe and an opener, so no socket is used and every test runs in milliseconds."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from pydantic import SecretStr

from provision.redfish.connector import Response
from provision.redfish.errors import RedfishNotFound, RedfishPasswordChangeRequired, RedfishUnavailable
from provision.redfish.ops.accounts import LoginResult, LoginVerdict

R = "/redfish/v1"
ACCOUNTS = f"{R}/AccountService/Accounts"
MANAGER = f"{R}/Managers/1"
PROTO = f"{MANAGER}/NetworkProtocol"
ETH = f"{MANAGER}/EthernetInterfaces/1"
CERTS = f"{PROTO}/HTTPS/Certificates"
CERT = f"{CERTS}/1"
CSR = f"{R}/CertificateService/Actions/CertificateService.GenerateCSR"
REPLACE = f"{R}/CertificateService/Actions/CertificateService.ReplaceCertificate"


def make_ca(name: str = "Site CA") -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@dataclass
class Account:
    user: str
    password: str
    role: str = "Administrator"
    enabled: bool = True
    change_required: bool = False


@dataclass
class FakeBmc:
    accounts: dict[str, Account] = field(default_factory=lambda: {
        f"{ACCOUNTS}/1": Account("ADMIN", "factory-pw", change_required=True)})
    proto: dict[str, Any] = field(default_factory=lambda: {
        "@odata.id": PROTO, "NTP": {"ProtocolEnabled": False, "NTPServers": ["", ""]},
        "SSDP": {"ProtocolEnabled": True}, "IPMI": {"ProtocolEnabled": True},
        "HTTPS": {"ProtocolEnabled": True, "Certificates": {"@odata.id": CERTS}}})
    eth: dict[str, Any] = field(default_factory=lambda: {
        "@odata.id": ETH, "HostName": "factory-bmc", "StaticNameServers": [],
        "IPv4Addresses": [{"Address": "127.0.0.1"}]})
    cert_pem: str = ""
    csr: str = "sync"  # sync | task | never | none (no GenerateCSR offered)
    ignore: set[str] = field(default_factory=set)  # property paths the BMC accepts and does not change
    password_500: bool = False  # a password change answered 500 after it took effect
    requests: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    _next: int = 2

    # ---- what a login sees ----
    def login(self, user: str, password: SecretStr) -> LoginResult:
        for uri, a in self.accounts.items():
            if a.user == user and a.password == password.get_secret_value() and a.enabled:
                if a.change_required:
                    return LoginResult(verdict=LoginVerdict.CHANGE_REQUIRED, account_uri=uri)
                return LoginResult(verdict=LoginVerdict.OK)
        return LoginResult(verdict=LoginVerdict.REFUSED)

    def opener(self, host: object, user: str, password: SecretStr) -> Any:
        @contextmanager
        def opened() -> Iterator[FakeConn]:
            if self.login(user, password).verdict is LoginVerdict.REFUSED:
                from provision.redfish.errors import RedfishAuthError
                raise RedfishAuthError(f"credentials for user {user!r} refused")
            yield FakeConn(self, user)
        return opened()

    def tree(self) -> dict[str, Any]:
        members = [{"@odata.id": u} for u in self.accounts]
        out: dict[str, Any] = {
            f"{R}/AccountService": {"Accounts": {"@odata.id": ACCOUNTS}},
            ACCOUNTS: {"Members": members},
            MANAGER: {"@odata.id": MANAGER, "NetworkProtocol": {"@odata.id": PROTO},
                      "EthernetInterfaces": {"@odata.id": f"{MANAGER}/EthernetInterfaces"}},
            f"{MANAGER}/EthernetInterfaces": {"Members": [{"@odata.id": ETH}]},
            PROTO: self.proto, ETH: self.eth,
            CERTS: {"Members": [{"@odata.id": CERT}] if self.cert_pem else []},
            CERT: {"@odata.id": CERT, "CertificateString": self.cert_pem},
            f"{R}/CertificateService": {"Actions": {} if self.csr == "none" else {
                "#CertificateService.GenerateCSR": {"target": CSR},
                "#CertificateService.ReplaceCertificate": {"target": REPLACE}}},
            f"{R}/TaskService/Tasks/9": {"TaskState": "Running"},
        }
        for uri, a in self.accounts.items():
            out[uri] = {"@odata.id": uri, "UserName": a.user, "RoleId": a.role, "Enabled": a.enabled}
        return out

    def make_csr(self, body: dict[str, Any]) -> str:
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, body["CommonName"])])
        sans = [x509.DNSName(n) for n in body.get("AlternativeNames", [])]
        builder = x509.CertificateSigningRequestBuilder().subject_name(name)
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return builder.sign(self.key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM).decode()


class _Opts:
    where = "node01 BMC (https://127.0.0.1:8443)"
    address = "https://127.0.0.1:8443"


class FakeConn:
    """The Connector's public methods, on a FakeBmc, as one logged-in user."""

    def __init__(self, bmc: FakeBmc, user: str) -> None:
        self.bmc, self.user, self.opts = bmc, user, _Opts()
        self.root: dict[str, Any] = {"CertificateService": {"@odata.id": f"{R}/CertificateService"}}

    @contextmanager
    def deadline(self, seconds: float | None = None) -> Iterator[None]:
        yield

    @contextmanager
    def waiting(self, seconds: float) -> Iterator[None]:
        yield

    def _me(self) -> Account:
        return next(a for a in self.bmc.accounts.values() if a.user == self.user)

    def get(self, uri: str) -> dict[str, Any]:
        if self._me().change_required:
            raise RedfishPasswordChangeRequired(f"GET {uri} -> HTTP 403", uri=uri, status=403)
        tree = self.bmc.tree()
        if uri not in tree:
            raise RedfishNotFound(f"GET {uri} -> HTTP 404", uri=uri, status=404)
        return copy.deepcopy(tree[uri])

    def get_optional(self, uri: str) -> dict[str, Any] | None:
        try:
            return self.get(uri)
        except RedfishNotFound:
            return None

    def members(self, uri: str) -> list[dict[str, Any]]:
        return [self.get(m["@odata.id"]) for m in self.get(uri).get("Members", [])]

    def request(self, method: str, uri: str, *, body: Any = None, allow_status: Any = (), **_: Any) -> Response:
        if method == "GET":
            if uri == f"{R}/TaskService/Tasks/9":
                return Response(202, {}, {"TaskState": "Running"})
            return Response(200, {}, self.get(uri))
        if method == "PATCH":
            return self.patch(uri, body)
        raise AssertionError(f"unexpected {method} {uri}")

    def patch(self, uri: str, body: dict[str, Any], etag: str | None = None) -> Response:
        self.bmc.requests.append(("PATCH", uri, body))
        if uri in self.bmc.accounts:
            a = self.bmc.accounts[uri]
            if self._me().change_required and (uri not in self.bmc.accounts or a.user != self.user
                                               or set(body) != {"Password"}):
                raise RedfishPasswordChangeRequired(f"PATCH {uri} -> HTTP 403", uri=uri, status=403)
            if "Password" in body:
                a.password, a.change_required = body["Password"], False
                if self.bmc.password_500:
                    raise RedfishUnavailable(f"PATCH {uri} -> HTTP 500", uri=uri, status=500, reason="HTTP 500")
            a.role = body.get("RoleId", a.role)
            a.enabled = body.get("Enabled", a.enabled)
            return Response(204, {})
        target = self.bmc.proto if uri == PROTO else self.bmc.eth if uri == ETH else None
        if target is None:
            raise RedfishNotFound(f"PATCH {uri} -> HTTP 404", uri=uri, status=404)
        _merge(target, body, self.bmc.ignore)
        return Response(204, {})

    def post(self, uri: str, body: dict[str, Any] | None = None, timeout: float | None = None) -> Response:
        body = body or {}
        self.bmc.requests.append(("POST", uri, {k: v for k, v in body.items() if k != "Password"}))
        if uri == ACCOUNTS:
            new = f"{ACCOUNTS}/{self.bmc._next}"
            self.bmc._next += 1
            self.bmc.accounts[new] = Account(body["UserName"], body["Password"], body["RoleId"], body["Enabled"])
            return Response(201, {"location": new}, {})
        if uri == CSR:
            if self.bmc.csr in ("task", "never"):
                return Response(202, {"location": f"{R}/TaskService/Tasks/9"}, {})
            return Response(200, {}, {"CSRString": self.bmc.make_csr(body)})
        if uri == REPLACE:
            assert body["CertificateUri"] == {"@odata.id": CERT}
            self.bmc.cert_pem = body["CertificateString"]
            return Response(200, {}, {})
        raise AssertionError(f"unexpected POST {uri}")

    def delete(self, uri: str) -> Response:
        self.bmc.requests.append(("DELETE", uri, {}))
        self.bmc.accounts.pop(uri)
        return Response(204, {})


def _merge(target: dict[str, Any], body: dict[str, Any], ignore: set[str], prefix: str = "") -> None:
    for k, v in body.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            _merge(target.setdefault(k, {}), v, ignore, path + ".")
        elif path in ignore:
            continue
        elif isinstance(v, list):  # DSP0266 array PATCH: an item replaces, null removes, items past it are kept
            current = list(target.get(k) or [])
            kept = [item for item in v if item is not None]
            target[k] = kept + current[len(v):]
        else:
            target[k] = v
