"""The BMC's HTTPS certificate (CertificateService, DSP0266 "Certificate management"): read it, judge it against
the site CA, have the BMC make a key and CSR (GenerateCSR), sign it (the site's CA key, or the site's own
signing command), install it (ReplaceCertificate), and check the certificate served afterwards.

The judging and signing are pure (PEM in, verdict or PEM out); only observe, generate_csr, replace and served
talk to the BMC.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import socket
import ssl
import subprocess
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed448, ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID
from pydantic import BaseModel, ConfigDict

from provision.errors import CheckFailed, InputError
from provision.redfish.connector import ROOT, Connector, Json
from provision.redfish.errors import RedfishOperationFailed, RedfishTimeout
from provision.redfish.ops.waiting import Clock
from provision.redfish.resources import Task

CERTIFICATE_SERVICE = f"{ROOT}/CertificateService"
SIGN_TIMEOUT_S = 60.0
SCRUBBED_ENV = ("PROVISION_BMC_PASSWORD", "PROVISION_BMC_USERNAME", "ANSIBLE_VAULT_PASSWORD_FILE")


class CertObserved(BaseModel):
    """Where the BMC's HTTPS certificate lives and what it is; None where the BMC offers nothing."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    csr_target: str | None = None
    replace_target: str | None = None
    collection: str | None = None
    """The HTTPS certificates (ManagerNetworkProtocol HTTPS.Certificates)."""
    cert_uri: str | None = None
    pem: str | None = None


class CertVerdict(StrEnum):
    SITE = "issued by the site CA"
    NONE = "none read"
    OTHER_ISSUER = "not issued by the site CA"
    EXPIRING = "ends soon"
    NAMES = "names differ"


def _odata(obj: Any, *keys: str) -> str | None:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return str(obj["@odata.id"]) if isinstance(obj, dict) and obj.get("@odata.id") else None


def _target(service: Json, action: str) -> str | None:
    act = (service.get("Actions") or {}).get(f"#CertificateService.{action}")
    return str(act["target"]) if isinstance(act, dict) and act.get("target") else None


def observe(conn: Connector, manager_uri: str | None) -> CertObserved:
    """The CertificateService's actions and the manager's HTTPS certificate (its first)."""
    link = _odata(conn.root, "CertificateService") or CERTIFICATE_SERVICE
    service = conn.get_optional(link) or {}
    manager = conn.get_optional(manager_uri) if manager_uri else None
    proto_uri = _odata(manager, "NetworkProtocol")
    proto = conn.get_optional(proto_uri) if proto_uri else None
    collection = _odata(proto, "HTTPS", "Certificates")
    members = conn.members(collection) if collection else []
    first = members[0] if members else {}
    return CertObserved(csr_target=_target(service, "GenerateCSR"),
                        replace_target=_target(service, "ReplaceCertificate"),
                        collection=collection, cert_uri=str(first.get("@odata.id")) if first else None,
                        pem=str(first.get("CertificateString")) if first.get("CertificateString") else None)


def load_cert(pem: str | bytes, what: str) -> x509.Certificate:
    try:
        return x509.load_pem_x509_certificate(pem.encode() if isinstance(pem, str) else pem)
    except ValueError:
        raise CheckFailed(f"{what}: not a PEM certificate") from None


def issued_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    """Whether `ca` signed `cert` (issuer name and signature)."""
    if cert.issuer != ca.subject:
        return False
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def names_of(cert: x509.Certificate) -> set[str]:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return set()
    return {str(n) for n in san.get_values_for_type(x509.DNSName)} | \
        {str(n) for n in san.get_values_for_type(x509.IPAddress)}


def judge(pem: str | None, ca: x509.Certificate, names: set[str], renew_days: int,
          now: datetime.datetime) -> CertVerdict:
    """Pure: the BMC's certificate against the site CA, the names it must carry and how long it has left."""
    if not pem:
        return CertVerdict.NONE
    try:
        cert = x509.load_pem_x509_certificate(pem.encode())
    except ValueError:
        return CertVerdict.NONE
    if not issued_by(cert, ca):
        return CertVerdict.OTHER_ISSUER
    if cert.not_valid_after_utc - now < datetime.timedelta(days=renew_days):
        return CertVerdict.EXPIRING
    if not names <= names_of(cert):
        return CertVerdict.NAMES
    return CertVerdict.SITE


def load_key(path: Path) -> Any:
    try:
        return serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise InputError(f"{path}: not a readable unencrypted PEM private key ({type(exc).__name__})") from None


def check_ca(ca_cert: Path, ca_key: Path | None) -> x509.Certificate:
    """The site CA certificate; with a key file, refused (one line) when the key is not the certificate's."""
    try:
        ca = load_cert(ca_cert.read_bytes(), str(ca_cert))
    except OSError as exc:
        raise InputError(f"{ca_cert}: cannot read the CA certificate: {exc.strerror}") from None
    except CheckFailed as exc:
        raise InputError(str(exc)) from None
    if ca_key is not None:
        key = load_key(ca_key)
        pub = key.public_key().public_bytes(serialization.Encoding.DER,
                                            serialization.PublicFormat.SubjectPublicKeyInfo)
        want = ca.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        if pub != want:
            raise InputError(f"{ca_key}: this CA key does not match the CA certificate {ca_cert}; nothing sent")
    return ca


def _hash_for(key: Any) -> hashes.SHA256 | None:
    return None if isinstance(key, ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey) else hashes.SHA256()


def sign_with_key(csr_pem: str, ca: x509.Certificate, ca_key: Path, days: int, now: datetime.datetime,
                  names: list[str]) -> str:
    """A server certificate for the CSR's key and subject, signed by the CA key; SANs are the CSR's and `names`."""
    try:
        csr = x509.load_pem_x509_csr(csr_pem.encode())
    except ValueError:
        raise CheckFailed("the BMC's CSR is not a PEM certificate request") from None
    if not csr.is_signature_valid:
        raise CheckFailed("the BMC's CSR does not carry a valid signature")
    key = load_key(ca_key)
    try:
        asked = csr.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        sans = list(asked)
    except x509.ExtensionNotFound:
        sans = []
    sans += [n for n in (_general_name(v) for v in names) if n not in sans]
    builder = (x509.CertificateBuilder().subject_name(csr.subject).issuer_name(ca.subject)
               .public_key(csr.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(key, _hash_for(key))
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def _general_name(value: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(value))
    except ValueError:
        return x509.DNSName(value)


def sign_with_command(command: tuple[str, ...], csr_pem: str, secret_env: frozenset[str] = frozenset(),
                      timeout_s: float = SIGN_TIMEOUT_S) -> str:
    """The site's signing command: the CSR on its stdin, the certificate (PEM) on its stdout. Its argv is the
    spec's as given; its environment is ours without the BMC credentials and the variables in `secret_env`
    (the ones the spec reads passwords from)."""
    env = {k: v for k, v in os.environ.items() if k not in SCRUBBED_ENV and k not in secret_env}
    try:
        done = subprocess.run(list(command), input=csr_pem, capture_output=True, text=True, timeout=timeout_s,
                              env=env, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CheckFailed(f"sign_command {command[0]}: {type(exc).__name__}: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1][:200]
        raise CheckFailed(f"sign_command {command[0]} exited {done.returncode}" + (f": {last}" if last else ""))
    return done.stdout


def csr_body(collection: str, subject: dict[str, str], names: list[str]) -> Json:
    """The GenerateCSR request: the subject's fields as Redfish names them, SANs, the collection to use."""
    body: Json = {"CertificateCollection": {"@odata.id": collection}, **subject}
    if names:
        body["AlternativeNames"] = names
    return body


def generate_csr(conn: Connector, target: str, body: Json, timeout_s: float, clock: Clock) -> str:
    """POST GenerateCSR; the CSR from the answer, or from its task once that completes (RedfishTimeout when it
    does not within `timeout_s`, naming the task)."""
    resp = conn.post(target, body)
    if isinstance(resp.json.get("CSRString"), str):
        return str(resp.json["CSRString"])
    monitor = resp.header("location") or str(resp.json.get("@odata.id") or "")
    if resp.status != 202 or not monitor:
        raise CheckFailed(f"{conn.opts.where}: GenerateCSR answered HTTP {resp.status} without a CSR or a task")
    deadline = clock.now() + timeout_s
    with conn.waiting(timeout_s):
        while True:
            got = conn.request("GET", monitor, allow_status=(202,))
            if isinstance(got.json.get("CSRString"), str):
                return str(got.json["CSRString"])
            task = Task.parse(got.json)
            if task.task_state == "Completed":
                raise CheckFailed(f"{conn.opts.where}: the CSR task {monitor} completed without a CSR")
            if task.done:
                raise RedfishOperationFailed(f"{conn.opts.where}: the CSR task {monitor} ended {task.task_state}")
            if clock.now() >= deadline:
                raise RedfishTimeout(f"{conn.opts.where}: the CSR task {monitor} did not complete within "
                                     f"{timeout_s:g} s (bmc.certificate.csr_timeout_s)")
            clock.sleep(clock.poll_s)


def replace(conn: Connector, target: str, cert_uri: str, pem: str) -> None:
    conn.post(target, {"CertificateString": pem, "CertificateType": "PEM", "CertificateUri": {"@odata.id": cert_uri}})


def install(conn: Connector, collection: str, pem: str) -> None:
    """A BMC with no HTTPS certificate to replace: the new one POSTed to the collection."""
    conn.post(collection, {"CertificateString": pem, "CertificateType": "PEM"})


def served_verifies(address: str, ca_file: Path, timeout_s: float = 10.0) -> str | None:
    """None when the BMC's TLS handshake verifies against `ca_file` (chain and host name), else why not."""
    parts = urlsplit(address)
    host = parts.hostname or ""
    context = ssl.create_default_context(cafile=str(ca_file))
    try:
        with socket.create_connection((host, parts.port or 443), timeout=timeout_s) as raw, \
                context.wrap_socket(raw, server_hostname=host):
            return None
    except ssl.SSLCertVerificationError as exc:
        return exc.verify_message or str(exc)
    except (OSError, ssl.SSLError) as exc:
        return f"{type(exc).__name__}: {exc}"

