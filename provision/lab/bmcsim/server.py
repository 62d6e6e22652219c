"""The simulator process: build every BMC, listen, write the ready file, serve until told to stop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import signal
import socket
import ssl
import sys
import tempfile
from pathlib import Path

from aiohttp import web

from provision.lab.bmcsim import events, vmnics
from provision.lab.bmcsim.bmc import Bmc
from provision.lab.bmcsim.clock import SimClock
from provision.lab.bmcsim.config import BmcConfig, NodePorts, Ready, SimConfig, factory_cert_file
from provision.lab.bmcsim.host import HostBackend, TwinHost
from provision.lab.bmcsim.http import Dispatcher
from provision.lab.bmcsim.seed import get_seed
from provision.lab.bmcsim.vmhost import VmHost

MAX_BODY = 512 * 1024 * 1024


def _listen() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(max(soft, need), hard)
    if want > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


def _ssl(cfg: SimConfig) -> ssl.SSLContext | None:
    if cfg.cert_file is None or cfg.key_file is None:
        return None
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    return ctx


def host_backend(cfg: SimConfig, node: BmcConfig) -> HostBackend | None:
    """The node's host: its qemu VM when it has one, else its twin when the lab has twins, else none."""
    if node.vm is not None:
        return VmHost(node.name, node.vm, cfg.allow_image_hosts)
    if cfg.twins:
        return TwinHost(node.name, cfg.lab_dir)
    return None


def build_bmcs(cfg: SimConfig, clock: SimClock) -> list[Bmc]:
    bmcs = [Bmc(n, cfg, get_seed(n.tree, n.as_captured, cfg.parts), clock, host_backend(cfg, n)) for n in cfg.nodes]
    for bmc, node in zip(bmcs, cfg.nodes, strict=True):
        if node.vm is not None and node.vm.provisioning is not None:  # the VM's own NICs, its provisioning MAC
            vmnics.present(bmc.res, list(bmc.seed.systems), node.vm)
    for seed in {id(b.seed): b.seed for b in bmcs}.values():
        for line in seed.warnings:  # once per tree, at start: what is served as captured and why
            events.record("-", "capture.warning", tree=seed.tree.name, detail=line)
            print(f"warning: {line}", file=sys.stderr, flush=True)
    return bmcs


async def serve(cfg: SimConfig) -> None:
    events.to_file(str(cfg.log_file))
    _raise_fd_limit(4 * len(cfg.nodes) + 256)
    clock = SimClock(cfg.speed)
    dispatcher = Dispatcher(cfg.control_token.get_secret_value())
    app = web.Application(client_max_size=MAX_BODY)
    app.router.add_route("*", "/{tail:.*}", dispatcher)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    ctx = _ssl(cfg)
    ports = []
    bmcs = build_bmcs(cfg, clock)
    for bmc in bmcs:
        dispatcher.add(bmc)
        _write_factory_cert(cfg.lab_dir, bmc)
        own = bmc.certs is not None and bmc.certs.tls is not None
        https = await _site(runner, dispatcher, bmc, listener(bmc, ctx)) if bmc.cfg.https and (ctx or own) else None
        http = await _site(runner, dispatcher, bmc, None) if bmc.cfg.http else None
        ports.append(NodePorts(name=bmc.name, https_port=https, http_port=http))
    control = _listen()
    dispatcher.control_port = control.getsockname()[1]
    await web.SockSite(runner, control).start()
    _write_ready(cfg.ready_file, Ready(pid=os.getpid(), control_port=dispatcher.control_port, nodes=ports))
    events.record("-", "started", nodes=len(ports), speed=cfg.speed)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, dispatcher.stop.set)
    await dispatcher.stop.wait()
    events.record("-", "stopping")
    await runner.cleanup()
    for bmc in bmcs:  # a VM host is stopped with the simulator: nothing is left running
        if bmc.host is not None:
            await loop.run_in_executor(None, bmc.host.close)
    with contextlib.suppress(FileNotFoundError):
        cfg.ready_file.unlink()


def listener(bmc: Bmc, shared: ssl.SSLContext | None) -> ssl.SSLContext:
    """One BMC's HTTPS listener context. It holds no certificate: OpenSSL calls its SNI callback on every
    ClientHello (with or without a server name), which hands the connection the BMC's current context -- the
    lab's shared one, or the BMC's own (factory or replaced). A replaced certificate is served to every new
    connection; connections already open keep the certificate they were made with until they close."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    made: dict[int, ssl.SSLContext] = {}

    def pick(conn: ssl.SSLObject | ssl.SSLSocket, _name: str | None, _ctx: ssl.SSLContext) -> None:
        current = tls_context(bmc, shared, made)
        if current is not None:
            conn.context = current

    ctx.sni_callback = pick
    return ctx


def tls_context(bmc: Bmc, shared: ssl.SSLContext | None, made: dict[int, ssl.SSLContext]) -> ssl.SSLContext | None:
    """The context this BMC's next TLS connection gets; the BMC's own is built once per certificate version."""
    if bmc.certs is None or bmc.certs.tls is None:
        return shared
    version = bmc.certs.version
    if version not in made:
        made.clear()
        made[version] = _own_context(*bmc.certs.tls)
    return made[version]


def _own_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    with tempfile.TemporaryDirectory(prefix="bmcsim-tls-") as tmp:  # 0700; gone once loaded
        cert, key = Path(tmp) / "cert.pem", Path(tmp) / "key.pem"
        cert.write_bytes(cert_pem)
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key_pem)
        ctx.load_cert_chain(cert, key)
    return ctx


def _write_factory_cert(lab_dir: Path, bmc: Bmc) -> None:
    """A factory BMC's self-signed certificate, public, where `lab up` and tests find it."""
    if not bmc.cfg.factory or bmc.certs is None or bmc.certs.tls is None:
        return
    path = factory_cert_file(lab_dir, bmc.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bmc.certs.tls[0])


async def _site(runner: web.AppRunner, dispatcher: Dispatcher, bmc: Bmc, ctx: ssl.SSLContext | None) -> int:
    sock = _listen()
    port = int(sock.getsockname()[1])
    dispatcher.by_port[port] = bmc
    await web.SockSite(runner, sock, ssl_context=ctx).start()
    return port


def _write_ready(path: Path, ready: Ready) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(ready.model_dump_json(indent=1))
    tmp.replace(path)
