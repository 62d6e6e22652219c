"""A small real HTTP(S) Redfish server on loopback for connector tests: static JSON tree plus hooks."""

from __future__ import annotations

import base64
import datetime
import json
import ssl
import sys
import threading
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

ROOT = "/redfish/v1"


@dataclass
class Seen:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes


@dataclass
class FakeBmc:
    """Serves `tree` ({uri: json}); records requests; answers queued faults first."""

    tree: dict[str, Any]
    username: str = "admin"
    password: str = "s3cret-Pa55"
    sessions: bool = True
    password_change: bool = False  # logins succeed with Base.PasswordChangeRequired (a factory-default account)
    change_first: bool = False  # every request but the root and a login answers 403 PasswordChangeRequired
    session_401: bool = False  # session logins refused with 401 whatever the credentials; basic still works
    basic: bool = True  # False: HTTP basic refused (401) whatever the credentials: sessions only
    expand: bool = True
    refuse_expand: int | None = None  # answer every GET carrying `$expand` with this status (sushy-static: 404)
    faults: dict[str, deque[tuple[int, dict[str, str]]]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)
    tokens: set[str] = field(default_factory=set)
    drop: dict[str, int] = field(default_factory=dict)
    patches: list[tuple[str, Any]] = field(default_factory=list)
    redirects: dict[str, str] = field(default_factory=dict)  # path -> Location of a 307
    raw: dict[str, tuple[int, str, bytes]] = field(default_factory=dict)  # path -> (status, content type, body)
    delay: dict[str, float] = field(default_factory=dict)  # path -> seconds to stall before answering
    released: threading.Event = field(default_factory=threading.Event)  # set when served no more: stalls end

    def fail(self, path: str, status: int, times: int = 1, headers: dict[str, str] | None = None) -> None:
        q = self.faults.setdefault(path, deque())
        for _ in range(times):
            q.append((status, headers or {}))

    def authorised(self, headers: dict[str, str]) -> bool:
        tok = headers.get("x-auth-token")
        if tok and tok in self.tokens:
            return True
        auth = headers.get("authorization", "")
        if not self.basic:
            return False
        want = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        return auth == f"Basic {want}"


def _handler(bmc: FakeBmc) -> type[BaseHTTPRequestHandler]:
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:
            pass

        def _reply(self, status: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode() if body is not None else b""
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)

        def _handle(self, method: str) -> None:
            parts = urlsplit(self.path)
            path = unquote(parts.path).rstrip("/") or "/"
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            headers = {k.lower(): v for k, v in self.headers.items()}
            bmc.seen.append(Seen(method, path, unquote(parts.query), headers, body))
            if bmc.drop.get(path, 0) > 0:
                bmc.drop[path] -= 1
                self.connection.close()
                self.close_connection = True
                return
            if path in bmc.delay:
                bmc.released.wait(bmc.delay[path])
            if path in bmc.redirects:
                self._reply(307, {}, {"Location": bmc.redirects[path]})
                return
            if path in bmc.raw and bmc.authorised(headers):
                status, ctype, data = bmc.raw[path]
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            q = bmc.faults.get(path)
            if q:
                status, extra = q.popleft()
                self._reply(status, {"error": {"message": f"injected {status}"}}, extra)
                return
            if path == ROOT and method == "GET":
                self._reply(200, bmc.tree[ROOT])
                return
            if path == f"{ROOT}/SessionService/Sessions" and method == "POST":
                self._login(body)
                return
            if not bmc.authorised(headers):
                self._reply(401, {"error": {"message": "unauthorised"}})
                return
            if bmc.change_first and method == "PATCH" and path == f"{ROOT}/AccountService/Accounts/2":
                bmc.patches.append((path, json.loads(body or b"{}")))  # the one request such an account may make
                bmc.password, bmc.change_first = json.loads(body)["Password"], False
                bmc.password_change = False  # changed: later logins carry no PasswordChangeRequired
                self._reply(204)
                return
            if bmc.change_first:
                info = [{"MessageId": "Base.1.8.1.PasswordChangeRequired",
                         "Message": "The password provided for this account must be changed before access is "
                                    "granted.", "MessageArgs": [f"{ROOT}/AccountService/Accounts/2"]}]
                self._reply(403, {"error": {"code": "Base.1.8.1.PasswordChangeRequired",
                                            "message": "Password change required", "@Message.ExtendedInfo": info}})
                return
            if method == "GET":
                self._get(path, parts.query)
            elif method == "PATCH":
                bmc.patches.append((path, json.loads(body or b"{}")))
                self._reply(204)
            elif method == "DELETE":
                bmc.tokens.discard(headers.get("x-auth-token", ""))
                self._reply(204)
            else:
                self._reply(202, {}, {"Location": f"{ROOT}/TaskService/Tasks/1"})

        def _login(self, body: bytes) -> None:
            if not bmc.sessions:
                self._reply(405, {"error": {"message": "no sessions"}})
                return
            creds = json.loads(body or b"{}")
            if bmc.session_401 or creds.get("UserName") != bmc.username or creds.get("Password") != bmc.password:
                self._reply(401, {"error": {"message": "bad credentials"}})
                return
            tok = uuid.uuid4().hex
            bmc.tokens.add(tok)
            info = [{"MessageId": "Base.1.8.PasswordChangeRequired", "MessageArgs": [f"{ROOT}/AccountService/Accounts/2"]}]
            self._reply(201, {"Id": "1", **({"@Message.ExtendedInfo": info} if bmc.password_change else {})},
                        {"X-Auth-Token": tok,
                                           "Location": f"{ROOT}/SessionService/Sessions/1"})

        def _get(self, path: str, query: str) -> None:
            res = bmc.tree.get(path)
            if res is None:
                self._reply(404, {"error": {"message": "not found"}})
                return
            if bmc.refuse_expand is not None and "$expand" in unquote(query):
                self._reply(bmc.refuse_expand, {"error": {"message": f"$expand refused ({bmc.refuse_expand})"}})
                return
            if bmc.expand and "$expand" in unquote(query) and isinstance(res.get("Members"), list):
                res = dict(res)
                res["Members"] = [bmc.tree.get(m["@odata.id"].rstrip("/"), m) for m in res["Members"]]
            etag = res.get("@odata.etag") if isinstance(res, dict) else None
            self._reply(200, res, {"ETag": etag} if etag else None)

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_PATCH(self) -> None:
            self._handle("PATCH")

        def do_PUT(self) -> None:
            self._handle("PUT")

        def do_DELETE(self) -> None:
            self._handle("DELETE")

    return H


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return  # the client gave up on a stalled answer: what a stall test wants
        super().handle_error(request, client_address)


class Served:
    """Context manager: serve a FakeBmc on 127.0.0.1:0 (optionally TLS)."""

    def __init__(self, bmc: FakeBmc, tls: tuple[Path, Path] | None = None, host: str = "127.0.0.1",
                 port: int = 0) -> None:
        self.bmc = bmc
        self.host = host
        self.server = _Server((host, port), _handler(bmc))
        self.server.daemon_threads = True
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(str(tls[0]), str(tls[1]))
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.scheme = "https" if tls else "http"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def address(self) -> str:
        return f"{self.scheme}://{self.host}:{self.server.server_address[1]}"

    def __enter__(self) -> Served:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bmc.released.set()
        self.server.shutdown()
        self.server.server_close()


def make_cert(tmp: Path, ips: tuple[str, ...] = ("127.0.0.1",)) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server cert for `ips` (default 127.0.0.1) signed by it: (ca, cert, key)."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "provision test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = (tmp / "ca.pem", tmp / "cert.pem", tmp / "key.pem")
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


def load_tree(root_dir: Path) -> dict[str, Any]:
    """A captured tree (dir of .../index.json) as {uri: json}."""
    tree: dict[str, Any] = {}
    for f in root_dir.rglob("index.json"):
        rel = f.parent.relative_to(root_dir).as_posix()
        uri = "/" + rel if rel != "." else "/"
        tree[uri.rstrip("/") or "/"] = json.loads(f.read_text())
    return tree


def load_capture(root_dir: Path) -> tuple[dict[str, Any], dict[str, tuple[int, str, bytes]]]:
    """A captured tree as (tree, raw): files that are not JSON (the Lenovo capture has two malformed
    MetricReports) are served as captured, through FakeBmc.raw."""
    tree: dict[str, Any] = {}
    raw: dict[str, tuple[int, str, bytes]] = {}
    for f in root_dir.rglob("index.json"):
        rel = f.parent.relative_to(root_dir).as_posix()
        uri = ("/" + rel if rel != "." else "/").rstrip("/") or "/"
        data = f.read_bytes()
        try:
            tree[uri] = json.loads(data)
        except ValueError:
            raw[uri] = (200, "application/json", data)
    return tree, raw
