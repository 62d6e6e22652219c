"""CertificateService for the manager's HTTPS certificate: GenerateCSR, ReplaceCertificate, the Certificate.

The BMC keeps the private key of its last GenerateCSR; ReplaceCertificate installs a certificate whose public
key is that key's (or the key already in use), and refuses any other (400). `tls` is what the HTTPS listener
serves: None for the lab's shared certificate, else (certificate chain PEM, key PEM) of this BMC alone; the
listener (server.py) picks it up for each new TLS connection.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import re

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from provision.lab.bmcsim import events
from provision.lab.bmcsim.reply import Reply, error, success
from provision.lab.bmcsim.sel import Sel
from provision.lab.bmcsim.tree import ROOT, Json, Resources, norm

CERT_SERVICE = f"{ROOT}/CertificateService"
LOCATIONS = f"{CERT_SERVICE}/CertificateLocations"
GENERATE_CSR = "CertificateService.GenerateCSR"
REPLACE = "CertificateService.ReplaceCertificate"
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey
CURVES: dict[str, ec.EllipticCurve] = {"TPM_ECC_NIST_P256": ec.SECP256R1(), "TPM_ECC_NIST_P384": ec.SECP384R1(),
                                       "TPM_ECC_NIST_P521": ec.SECP521R1()}
RSA_BITS = (2048, 3072, 4096)
DEFAULT_CURVE = "TPM_ECC_NIST_P384"
CSR_PARAMS = {"CertificateCollection", "CommonName", "AlternativeNames", "KeyPairAlgorithm", "KeyBitLength",
              "KeyCurveId", "Organization", "OrganizationalUnit", "City", "State", "Country", "Email", "KeyUsage"}
_SUBJECT = (("Country", NameOID.COUNTRY_NAME), ("State", NameOID.STATE_OR_PROVINCE_NAME),
            ("City", NameOID.LOCALITY_NAME), ("Organization", NameOID.ORGANIZATION_NAME),
            ("OrganizationalUnit", NameOID.ORGANIZATIONAL_UNIT_NAME), ("CommonName", NameOID.COMMON_NAME),
            ("Email", NameOID.EMAIL_ADDRESS))
_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DNS = re.compile(rf"^(\*\.)?({_LABEL}\.)*{_LABEL}$")


def service_resources(collection: str) -> dict[str, Json]:
    """CertificateService, CertificateLocations and the HTTPS certificate collection with its one entry (a
    placeholder every BMC overwrites with its own certificate at start)."""
    entry = f"{collection}/1"
    return {
        CERT_SERVICE: {
            "@odata.id": CERT_SERVICE, "@odata.type": "#CertificateService.v1_0_4.CertificateService",
            "Id": "CertificateService", "Name": "Certificate Service",
            "Actions": {f"#{GENERATE_CSR}": {"target": f"{CERT_SERVICE}/Actions/{GENERATE_CSR}"},
                        f"#{REPLACE}": {"target": f"{CERT_SERVICE}/Actions/{REPLACE}",
                                        "CertificateType@Redfish.AllowableValues": ["PEM"]}},
            "CertificateLocations": {"@odata.id": LOCATIONS},
        },
        LOCATIONS: {"@odata.id": LOCATIONS, "@odata.type": "#CertificateLocations.v1_0_2.CertificateLocations",
                    "Id": "CertificateLocations", "Name": "Certificate Locations",
                    "Links": {"Certificates": [{"@odata.id": entry}], "Certificates@odata.count": 1}},
        collection: {"@odata.id": collection, "@odata.type": "#CertificateCollection.CertificateCollection",
                     "Name": "HTTPS Certificates", "Members": [{"@odata.id": entry}], "Members@odata.count": 1},
        entry: {"@odata.id": entry, "@odata.type": "#Certificate.v1_2_4.Certificate", "Id": "1",
                "Name": "HTTPS Certificate", "CertificateType": "PEM"},
    }


def self_signed(common_name: str, days: int = 3650) -> tuple[bytes, bytes]:
    """A factory certificate: self-signed, its own key (EC P-256), for 127.0.0.1/localhost. Returns (cert, key)
    PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "provision lab factory"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    san = x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
        .add_extension(san, critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=False,
                                     content_commitment=False, key_encipherment=False, data_encipherment=False,
                                     key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM), _key_pem(key)


def _key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _spki(key: object) -> bytes:
    return key.public_bytes(serialization.Encoding.DER,  # type: ignore[attr-defined]
                            serialization.PublicFormat.SubjectPublicKeyInfo)


class Certificates:
    """One BMC's HTTPS certificate and the key of its last CSR."""

    def __init__(self, node: str, res: Resources, sel: Sel, collection: str, cert_pem: bytes | None,
                 key_pem: bytes | None = None) -> None:
        self._node = node
        self._res = res
        self._sel = sel
        self.collection = collection
        self.entry = f"{collection}/1"
        self._pending: PrivateKey | None = None
        self._key: PrivateKey | None = None
        self.tls: tuple[bytes, bytes] | None = None
        self.version = 0  # bumped on every change of `tls`
        if key_pem is not None and cert_pem is not None:
            self._install(cert_pem, serialization.load_pem_private_key(key_pem, None))  # type: ignore[arg-type]
        elif cert_pem is not None:
            self._render(cert_pem)

    # --- actions -----------------------------------------------------------------------------
    def generate_csr(self, body: Json) -> Reply:
        unknown = sorted(k for k in body if k not in CSR_PARAMS and not k.startswith("@"))
        if unknown:
            return error(400, "ActionParameterNotSupported", unknown[0], GENERATE_CSR)
        for key in ("CertificateCollection", "CommonName"):
            if key not in body:
                return error(400, "ActionParameterMissing", GENERATE_CSR, key)
        target = body["CertificateCollection"]
        uri = norm(str(target.get("@odata.id", ""))) if isinstance(target, dict) else ""
        if uri != self.collection:
            return error(400, "ActionParameterValueNotInList", uri or str(target), "CertificateCollection",
                         GENERATE_CSR)
        refused = self._check_subject(body)
        if refused is not None:
            return refused
        made = self._new_key(body)
        if isinstance(made, Reply):
            return made
        names = [x509.NameAttribute(oid, str(body[k])) for k, oid in _SUBJECT if body.get(k)]
        builder = x509.CertificateSigningRequestBuilder().subject_name(x509.Name(names))
        alt = [_general_name(n) for n in body.get("AlternativeNames") or []]
        if alt:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
        csr = builder.sign(made, hashes.SHA256())
        self._pending = made
        events.record(self._node, "cert.csr", common_name=str(body["CommonName"]), alt=len(alt))
        return Reply(200, {"CSRString": csr.public_bytes(serialization.Encoding.PEM).decode(),
                           "CertificateCollection": {"@odata.id": self.collection}})

    def replace(self, body: Json) -> Reply:
        for param in ("CertificateString", "CertificateType", "CertificateUri"):
            if param not in body:
                return error(400, "ActionParameterMissing", REPLACE, param)
        if body["CertificateType"] != "PEM":
            return error(400, "ActionParameterValueNotInList", str(body["CertificateType"]), "CertificateType",
                         REPLACE)
        target = body["CertificateUri"]
        uri = norm(str(target.get("@odata.id", ""))) if isinstance(target, dict) else ""
        if uri != self.entry:
            return error(400, "ActionParameterValueNotInList", uri or str(target), "CertificateUri", REPLACE)
        text = body["CertificateString"]
        try:
            chain = x509.load_pem_x509_certificates(text.encode()) if isinstance(text, str) else []
        except ValueError:
            chain = []
        if not chain:
            return error(400, "ActionParameterValueFormatError", "(not a PEM certificate)", "CertificateString",
                         REPLACE)
        leaf = _spki(chain[0].public_key())
        key = next((k for k in (self._pending, self._key) if k is not None and _spki(k.public_key()) == leaf), None)
        if key is None:
            events.record(self._node, "cert.refused", reason="key mismatch")
            reply = error(400, "ActionParameterValueFormatError", chain[0].subject.rfc4514_string(),
                          "CertificateString", REPLACE)
            info = (reply.body or {})["error"]["@Message.ExtendedInfo"][0]
            info["Resolution"] = ("The certificate's public key is not the key of this manager's last GenerateCSR "
                                  "(nor the key in use): sign the CSR this manager generated.")
            return reply
        pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
        self._install(pem, key)
        if key is self._pending:
            self._pending = None
        self._sel.add(f"HTTPS certificate replaced: {chain[0].subject.rfc4514_string()}")
        events.record(self._node, "cert.replaced", subject=chain[0].subject.rfc4514_string())
        return success()

    # --- state -------------------------------------------------------------------------------
    def _install(self, pem: bytes, key: PrivateKey) -> None:
        self._key = key
        self.tls = (pem, _key_pem(key))
        self.version += 1
        self._render(pem)

    def _render(self, pem: bytes) -> None:
        cert = x509.load_pem_x509_certificates(pem)[0]
        body: Json = {
            "@odata.id": self.entry, "@odata.type": "#Certificate.v1_2_4.Certificate", "Id": "1",
            "Name": "HTTPS Certificate", "CertificateString": pem.decode(), "CertificateType": "PEM",
            "Issuer": _identifier(cert.issuer), "Subject": _identifier(cert.subject),
            "ValidNotBefore": cert.not_valid_before_utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "ValidNotAfter": cert.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "KeyUsage": _key_usage(cert),
        }
        self._res.put(self.entry, body)

    def _check_subject(self, body: Json) -> Reply | None:
        for key, _oid in _SUBJECT:
            if key in body and (not isinstance(body[key], str) or not body[key]):
                return error(400, "ActionParameterValueFormatError", str(body[key]), key, GENERATE_CSR)
        country = body.get("Country")
        if isinstance(country, str) and len(country) != 2:
            return error(400, "ActionParameterValueFormatError", country, "Country", GENERATE_CSR)
        alt = body.get("AlternativeNames")
        if alt is not None and (not isinstance(alt, list) or not all(isinstance(n, str) and _valid_name(n)
                                                                       for n in alt)):
            return error(400, "ActionParameterValueFormatError", str(alt), "AlternativeNames", GENERATE_CSR)
        return None

    def _new_key(self, body: Json) -> PrivateKey | Reply:
        algo = body.get("KeyPairAlgorithm", "TPM_ALG_ECDSA")
        if algo == "TPM_ALG_RSA":
            bits = body.get("KeyBitLength", 2048)
            if bits not in RSA_BITS:
                return error(400, "ActionParameterValueNotInList", str(bits), "KeyBitLength", GENERATE_CSR)
            return rsa.generate_private_key(65537, int(bits))
        if algo in ("TPM_ALG_ECDSA", "TPM_ALG_ECC"):
            curve = body.get("KeyCurveId", DEFAULT_CURVE)
            if curve not in CURVES:
                return error(400, "ActionParameterValueNotInList", str(curve), "KeyCurveId", GENERATE_CSR)
            return ec.generate_private_key(CURVES[curve])
        return error(400, "ActionParameterValueNotInList", str(algo), "KeyPairAlgorithm", GENERATE_CSR)


def _valid_name(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return len(name) <= 253 and bool(_DNS.match(name))


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _identifier(name: x509.Name) -> Json:
    out: Json = {}
    for key, oid in _SUBJECT:
        if key == "Email":
            continue
        attrs = name.get_attributes_for_oid(oid)
        if attrs:
            out[key] = str(attrs[0].value)
    return out


def _key_usage(cert: x509.Certificate) -> list[str]:
    out: list[str] = []
    try:
        ku = cert.extensions.get_extension_for_class(x509.KeyUsage).value
        if ku.digital_signature:
            out.append("DigitalSignature")
        if ku.key_encipherment:
            out.append("KeyEncipherment")
        if ku.key_cert_sign:
            out.append("KeyCertSign")
    except x509.ExtensionNotFound:
        pass
    try:
        eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        if ExtendedKeyUsageOID.SERVER_AUTH in eku:
            out.append("ServerAuthentication")
        if ExtendedKeyUsageOID.CLIENT_AUTH in eku:
            out.append("ClientAuthentication")
    except x509.ExtensionNotFound:
        pass
    return out

