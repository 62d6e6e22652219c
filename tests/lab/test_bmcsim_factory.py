"""A lab BMC in factory state over a real TLS socket: its self-signed certificate, PasswordChangeRequired until
the password is changed, then CSR -> signed by a test CA -> ReplaceCertificate -> new connections verify
against that CA (a connection opened before keeps working)."""

from __future__ import annotations

import base64
import datetime as dt
import http.client
import json
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from provision.lab import manager

pytestmark = pytest.mark.lab

ACCOUNT = "/redfish/v1/AccountService/Accounts/1"


@pytest.fixture(scope="module")
def factory_lab(lab_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with lab_factory(tmp_path_factory.mktemp("factorylab"), nodes=1, factory=True) as lab:
        yield lab


class Conn:
    """One HTTPS connection (kept alive) to a lab BMC, with basic auth."""

    def __init__(self, port: int, ctx: ssl.SSLContext, user: str, password: str) -> None:
        self.http = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
        self.auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
        raw = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": self.auth, "Content-Type": "application/json"}
        self.http.request(method, path, body=raw, headers=headers)
        reply = self.http.getresponse()
        data = reply.read()
        return reply.status, json.loads(data) if data else {}


def _ca() -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lab test site CA")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


def _sign(csr_pem: str, ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate) -> str:
    csr = x509.load_pem_x509_csr(csr_pem.encode())
    now = dt.datetime.now(dt.UTC)
    builder = (x509.CertificateBuilder().subject_name(csr.subject).issuer_name(ca.subject)
               .public_key(csr.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=1))
               .add_extension(csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value, False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False))
    return builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM).decode()


def test_factory_bmc_taken_over(factory_lab: Any, tmp_path: Path) -> None:
    hv = factory_lab.host_vars("node01")
    port = int(hv["provision_bmc_address"].rsplit(":", 1)[1])
    factory_pem = Path(hv["provision_lab_bmc_factory_cert_file"]).read_text()

    # the factory certificate: self-signed, the BMC's own, not the lab CA's
    status = manager.status(factory_lab.state.lab_dir)
    assert status["factory"] is True
    assert (status["nodes"][0]["certificate"], status["nodes"][0]["password_change_required"]) == ("factory", True)
    served = ssl.get_server_certificate(("127.0.0.1", port))
    cert = x509.load_pem_x509_certificate(served.encode())
    assert cert.issuer == cert.subject
    assert served.strip() == factory_pem.strip()
    with pytest.raises(ssl.SSLCertVerificationError):
        Conn(port, ssl.create_default_context(cafile=str(factory_lab.ca)), "admin", "x").call("GET", "/redfish/v1")

    # PasswordChangeRequired until the factory password is changed; then the old one is refused
    pinned = ssl.create_default_context(cafile=hv["provision_lab_bmc_factory_cert_file"])
    old = Conn(port, pinned, hv["provision_bmc_username"], hv["provision_bmc_password"])
    status, body = old.call("GET", "/redfish/v1/Systems")
    assert status == 403
    assert body["error"]["@Message.ExtendedInfo"][0]["MessageId"].endswith(".PasswordChangeRequired")
    assert old.call("PATCH", ACCOUNT, {"Password": "site-password-1"})[0] == 200
    assert old.call("GET", "/redfish/v1/Systems")[0] == 401
    site = Conn(port, pinned, hv["provision_bmc_username"], "site-password-1")
    assert site.call("GET", "/redfish/v1/Systems")[0] == 200

    # CSR -> signed by the site CA -> ReplaceCertificate -> new connections get the new certificate
    status, csr = site.call("POST", "/redfish/v1/CertificateService/Actions/CertificateService.GenerateCSR", {
        "CertificateCollection": {"@odata.id": "/redfish/v1/Managers/1/NetworkProtocol/HTTPS/Certificates"},
        "CommonName": "node01.lab.example", "AlternativeNames": ["127.0.0.1", "localhost"],
        "KeyPairAlgorithm": "TPM_ALG_ECDSA", "KeyCurveId": "TPM_ECC_NIST_P256"})
    assert status == 200
    ca_key, ca = _ca()
    signed = _sign(csr["CSRString"], ca_key, ca)
    status, _ = site.call("POST", "/redfish/v1/CertificateService/Actions/CertificateService.ReplaceCertificate", {
        "CertificateString": signed, "CertificateType": "PEM",
        "CertificateUri": {"@odata.id": "/redfish/v1/Managers/1/NetworkProtocol/HTTPS/Certificates/1"}})
    assert status == 200
    assert site.call("GET", "/redfish/v1/Systems")[0] == 200  # the connection made before keeps working

    ca_file = tmp_path / "site-ca.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    fresh = Conn(port, ssl.create_default_context(cafile=str(ca_file)), "admin", "site-password-1")
    status, entry = fresh.call("GET", "/redfish/v1/Managers/1/NetworkProtocol/HTTPS/Certificates/1")
    assert status == 200 and entry["Issuer"]["CommonName"] == "lab test site CA"
    assert ssl.get_server_certificate(("127.0.0.1", port)).strip() == signed.strip()
    with pytest.raises(ssl.SSLCertVerificationError):
        Conn(port, pinned, "admin", "site-password-1").call("GET", "/redfish/v1")
    node = manager.status(factory_lab.state.lab_dir)["nodes"][0]
    assert (node["certificate"], node["password_change_required"]) == ("replaced", False)
