"""The simulator's CertificateService in process: the factory certificate, GenerateCSR, ReplaceCertificate, and
the TLS context each BMC's next connection gets (no sockets)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from pydantic import SecretStr

from provision.lab.bmcsim.bmc import Bmc
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.config import TREES_DIR, BmcConfig, SimConfig
from provision.lab.bmcsim.reply import Reply
from provision.lab.bmcsim.request import Request
from provision.lab.bmcsim.seed import get_seed
from provision.lab.bmcsim.server import tls_context
from provision.lab.ca import make_ca_and_server

PW = "pass-word-1"
AUTH = {"Authorization": "Basic " + base64.b64encode(f"admin:{PW}".encode()).decode()}
SERVICE = "/redfish/v1/CertificateService"
CSR = f"{SERVICE}/Actions/CertificateService.GenerateCSR"
REPLACE = f"{SERVICE}/Actions/CertificateService.ReplaceCertificate"
COLL = "/redfish/v1/Managers/1/NetworkProtocol/HTTPS/Certificates"
ENTRY = f"{COLL}/1"


def make_bmc(tmp: Path, factory: bool = False, lab_cert: bool = True) -> Bmc:
    cert = key = None
    if lab_cert:
        _ca, cert, key = make_ca_and_server(tmp)
    node = BmcConfig(name="node01", index=1, password=SecretStr(PW), tree=TREES_DIR / "supermicro", factory=factory)
    cfg = SimConfig(lab_dir=tmp, nodes=[node], control_token=SecretStr("t"), ready_file=tmp / "r.json",
                    log_file=tmp / "log", cert_file=cert, key_file=key)
    bmc = Bmc(node, cfg, get_seed(node.tree, False, cfg.parts), SimClock(cfg.speed))
    if factory:  # the factory password changed, as `bmc setup` does first
        assert call(bmc, "PATCH", "/redfish/v1/AccountService/Accounts/1", {"Password": "site-pass-1"}).status == 200
    return bmc


def call(bmc: Bmc, method: str, path: str, payload: Any = None, auth: dict[str, str] | None = None) -> Reply:
    if auth is None:
        pw = PW if bmc.accounts.check("admin", PW) else "site-pass-1"
        auth = {"Authorization": "Basic " + base64.b64encode(f"admin:{pw}".encode()).decode()}
    raw = json.dumps(payload).encode() if payload is not None else b""
    return bmc.handle(Request(method, path, auth, raw))


def body(reply: Reply) -> dict[str, Any]:
    return json.loads(reply.raw) if reply.raw is not None else dict(reply.body or {})


def first_id(reply: Reply) -> str:
    return str(body(reply)["error"]["@Message.ExtendedInfo"][0]["MessageId"].rsplit(".", 1)[1])


def csr_request(**extra: Any) -> dict[str, Any]:
    return {"CertificateCollection": {"@odata.id": COLL}, "CommonName": "node01.site.example",
            "KeyPairAlgorithm": "TPM_ALG_ECDSA", "KeyCurveId": "TPM_ECC_NIST_P256", **extra}


class SiteCa:
    """A site CA that signs CSRs, as an operator's would."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test site CA")])
        now = dt.datetime.now(dt.UTC)
        self.cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(self.key.public_key())
                     .serial_number(1).not_valid_before(now - dt.timedelta(hours=1))
                     .not_valid_after(now + dt.timedelta(days=2))
                     .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                     .sign(self.key, hashes.SHA256()))

    def sign(self, csr_pem: str, public_key: Any = None) -> str:
        csr = x509.load_pem_x509_csr(csr_pem.encode())
        now = dt.datetime.now(dt.UTC)
        builder = (x509.CertificateBuilder().subject_name(csr.subject).issuer_name(self.cert.subject)
                   .public_key(public_key or csr.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=1)))
        for ext in csr.extensions:
            builder = builder.add_extension(ext.value, ext.critical)
        return builder.sign(self.key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM).decode()


def replace_request(pem: str, **extra: Any) -> dict[str, Any]:
    return {"CertificateString": pem, "CertificateType": "PEM", "CertificateUri": {"@odata.id": ENTRY}, **extra}


# --- the resources -----------------------------------------------------------------------------
def test_service_locations_and_the_lab_certificate(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    svc = body(call(bmc, "GET", SERVICE))
    assert set(svc["Actions"]) == {"#CertificateService.GenerateCSR", "#CertificateService.ReplaceCertificate"}
    locations = body(call(bmc, "GET", svc["CertificateLocations"]["@odata.id"]))
    assert locations["Links"]["Certificates"] == [{"@odata.id": ENTRY}]
    proto = body(call(bmc, "GET", "/redfish/v1/Managers/1/NetworkProtocol"))
    assert proto["HTTPS"]["Certificates"] == {"@odata.id": COLL}
    cert = body(call(bmc, "GET", ENTRY))
    assert cert["CertificateString"] == (tmp_path / "server.pem").read_text()
    assert cert["Issuer"]["CommonName"] == "provision lab CA" and cert["Subject"]["CommonName"] == "provision lab BMC"
    assert "ServerAuthentication" in cert["KeyUsage"]
    shared = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    assert tls_context(bmc, shared, {}) is shared  # the lab's certificate: the shared context
    assert bmc.status()["certificate"] == "lab"


def test_factory_bmc_serves_a_self_signed_certificate_of_its_own(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path, factory=True)
    (tmp_path / "other").mkdir()
    other = make_bmc(tmp_path / "other", factory=True)
    cert = body(call(bmc, "GET", ENTRY))
    assert cert["Issuer"] == cert["Subject"] and cert["Subject"]["CommonName"] == "bmc-node01"
    assert cert["CertificateString"] != (tmp_path / "server.pem").read_text()
    assert body(call(other, "GET", ENTRY))["CertificateString"] != cert["CertificateString"]
    shared = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    own = tls_context(bmc, shared, {})
    assert own is not None and own is not shared
    assert bmc.certs is not None and bmc.certs.tls is not None
    assert bmc.certs.tls[0].decode() == cert["CertificateString"]


# --- GenerateCSR -------------------------------------------------------------------------------
def test_generate_csr_honours_the_subject_names_and_key(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    reply = call(bmc, "POST", CSR, csr_request(AlternativeNames=["node01.site.example", "10.1.2.3"],
                                               Organization="Site", Country="NL"))
    assert reply.status == 200
    answer = body(reply)
    assert answer["CertificateCollection"] == {"@odata.id": COLL}
    csr = x509.load_pem_x509_csr(answer["CSRString"].encode())
    assert csr.is_signature_valid
    assert csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "node01.site.example"
    assert csr.subject.get_attributes_for_oid(NameOID.COUNTRY_NAME)[0].value == "NL"
    san = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["node01.site.example"]
    assert [str(ip) for ip in san.get_values_for_type(x509.IPAddress)] == ["10.1.2.3"]
    key = csr.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey) and key.curve.name == "secp256r1"


def test_generate_csr_rsa(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    reply = call(bmc, "POST", CSR, csr_request(KeyPairAlgorithm="TPM_ALG_RSA", KeyBitLength=2048))
    key = x509.load_pem_x509_csr(body(reply)["CSRString"].encode()).public_key()
    assert isinstance(key, rsa.RSAPublicKey) and key.key_size == 2048


@pytest.mark.parametrize(("req", "want"), [
    ({"CertificateCollection": {"@odata.id": COLL}}, "ActionParameterMissing"),
    ({"CommonName": "x"}, "ActionParameterMissing"),
    (csr_request(CertificateCollection={"@odata.id": "/redfish/v1/Systems/1/Certificates"}),
     "ActionParameterValueNotInList"),
    (csr_request(KeyPairAlgorithm="TPM_ALG_DSA"), "ActionParameterValueNotInList"),
    (csr_request(KeyCurveId="TPM_ECC_BN_P256"), "ActionParameterValueNotInList"),
    (csr_request(KeyPairAlgorithm="TPM_ALG_RSA", KeyBitLength=1024), "ActionParameterValueNotInList"),
    (csr_request(AlternativeNames=["bad name"]), "ActionParameterValueFormatError"),
    (csr_request(Country="Netherlands"), "ActionParameterValueFormatError"),
    (csr_request(Colour="blue"), "ActionParameterNotSupported"),
])
def test_generate_csr_refusals(tmp_path: Path, req: dict[str, Any], want: str) -> None:
    reply = call(make_bmc(tmp_path, lab_cert=False), "POST", CSR, req)
    assert reply.status == 400 and first_id(reply) == want


# --- ReplaceCertificate ------------------------------------------------------------------------
def test_replace_with_the_signed_csr_changes_what_new_connections_get(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path, factory=True)
    shared = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    made: dict[int, ssl.SSLContext] = {}
    before = tls_context(bmc, shared, made)
    assert bmc.status()["certificate"] == "factory"
    ca = SiteCa()
    signed = ca.sign(body(call(bmc, "POST", CSR, csr_request()))["CSRString"])
    reply = call(bmc, "POST", REPLACE, replace_request(signed))
    assert reply.status == 200
    cert = body(call(bmc, "GET", ENTRY))
    assert cert["Issuer"] == {"CommonName": "test site CA"}
    assert cert["Subject"]["CommonName"] == "node01.site.example"
    after = tls_context(bmc, shared, made)
    assert after is not None and after is not before
    assert bmc.certs is not None and bmc.certs.tls is not None
    key = serialization.load_pem_private_key(bmc.certs.tls[1], None)
    served = x509.load_pem_x509_certificate(bmc.certs.tls[0])
    assert served.public_key() == key.public_key()  # the served certificate and key are a pair
    assert any("HTTPS certificate replaced" in m for m in bmc.sel_messages())
    assert bmc.status()["certificate"] == "replaced"


def test_replace_refuses_a_certificate_for_another_key(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path, factory=True)
    before = body(call(bmc, "GET", ENTRY))
    csr = body(call(bmc, "POST", CSR, csr_request()))["CSRString"]
    stranger = ec.generate_private_key(ec.SECP256R1()).public_key()
    reply = call(bmc, "POST", REPLACE, replace_request(SiteCa().sign(csr, public_key=stranger)))
    assert reply.status == 400 and first_id(reply) == "ActionParameterValueFormatError"
    assert "GenerateCSR" in body(reply)["error"]["@Message.ExtendedInfo"][0]["Resolution"]
    assert body(call(bmc, "GET", ENTRY)) == before
    assert bmc.certs is not None and bmc.certs.version == 1  # still the factory certificate


def test_replace_without_a_csr_is_refused_on_the_lab_certificate(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "x")])
    csr = x509.CertificateSigningRequestBuilder().subject_name(name).sign(key, hashes.SHA256())
    pem = SiteCa().sign(csr.public_bytes(serialization.Encoding.PEM).decode())
    assert call(bmc, "POST", REPLACE, replace_request(pem)).status == 400


@pytest.mark.parametrize(("req", "want"), [
    (replace_request("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"),
     "ActionParameterValueFormatError"),
    (replace_request("x", CertificateType="PKCS7"), "ActionParameterValueNotInList"),
    (replace_request("x", CertificateUri={"@odata.id": f"{COLL}/2"}), "ActionParameterValueNotInList"),
    ({"CertificateString": "x", "CertificateType": "PEM"}, "ActionParameterMissing"),
])
def test_replace_refusals(tmp_path: Path, req: dict[str, Any], want: str) -> None:
    reply = call(make_bmc(tmp_path, lab_cert=False), "POST", REPLACE, req)
    assert reply.status == 400 and first_id(reply) == want


# --- faults and privileges ---------------------------------------------------------------------
def test_csr_never_completes_fault(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    bmc.faults.set("csr-never-completes")
    reply = call(bmc, "POST", CSR, csr_request())
    assert reply.status == 202
    task = body(call(bmc, "GET", reply.headers["Location"]))
    assert task["TaskState"] == "Running" and "CSRString" not in json.dumps(task)
    bmc.faults.clear("csr-never-completes")
    assert body(call(bmc, "GET", reply.headers["Location"]))["TaskState"] == "Running"  # clearing ends nothing
    assert call(bmc, "POST", CSR, csr_request()).status == 200


def test_certificate_actions_need_configure_manager_and_a_changed_password(tmp_path: Path) -> None:
    bmc = make_bmc(tmp_path)
    made = call(bmc, "POST", "/redfish/v1/AccountService/Accounts",
                {"UserName": "op", "Password": "op-pass-12", "RoleId": "Operator"})
    assert made.status == 201
    op = {"Authorization": "Basic " + base64.b64encode(b"op:op-pass-12").decode()}
    denied = call(bmc, "POST", CSR, csr_request(), auth=op)
    assert denied.status == 403 and first_id(denied) == "InsufficientPrivilege"
    node = BmcConfig(name="node02", index=2, password=SecretStr(PW), tree=TREES_DIR / "supermicro", factory=True)
    cfg = SimConfig(lab_dir=tmp_path, nodes=[node], control_token=SecretStr("t"), ready_file=tmp_path / "r.json",
                    log_file=tmp_path / "log")
    fresh = Bmc(node, cfg, get_seed(node.tree, False, cfg.parts), SimClock(cfg.speed))
    first = fresh.handle(Request("POST", CSR, AUTH, json.dumps(csr_request()).encode()))
    assert first.status == 403 and first_id(first) == "PasswordChangeRequired"
