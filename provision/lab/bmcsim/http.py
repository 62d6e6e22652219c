"""The HTTP side: one aiohttp application for every BMC, dispatched by the port a request came in on."""

from __future__ import annotations

import asyncio
import hmac
import json

from aiohttp import web

from provision.lab.bmcsim import events
from provision.lab.bmcsim.bmc import Bmc
from provision.lab.bmcsim.faults import FAULTS
from provision.lab.bmcsim.reply import Reply, error
from provision.lab.bmcsim.request import Request

COMMON = {"OData-Version": "4.0", "Cache-Control": "no-cache"}


class Dispatcher:
    """Routes each request to its BMC (by local port) or to the control endpoint."""

    def __init__(self, control_token: str) -> None:
        self.by_port: dict[int, Bmc] = {}
        self.by_name: dict[str, Bmc] = {}
        self.control_port = -1
        self._token = control_token
        self.stop = asyncio.Event()

    def add(self, bmc: Bmc) -> None:
        self.by_name[bmc.name] = bmc

    async def __call__(self, request: web.Request) -> web.StreamResponse:
        sock = request.transport.get_extra_info("sockname") if request.transport else None
        port = sock[1] if sock else -1
        if port == self.control_port:
            return await self._control(request)
        bmc = self.by_port.get(port)
        if bmc is None:
            return web.Response(status=404)
        early = await _faults_before(bmc, request)
        if early is not None:
            return early
        body = await request.read()
        reply = bmc.handle(Request(request.method, request.path, request.headers, body, request.query_string))
        if request.method == "POST" and reply.status == 202 and bmc.faults.take("answer-lost"):
            events.record(bmc.name, "fault.answer_lost", path=request.path)  # carried out, never answered
            return _drop(request)
        return to_response(reply, head=request.method == "HEAD")

    # --- control endpoint (loopback, bearer token) -----------------------------------------
    async def _control(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        if not hmac.compare_digest(auth.encode(), f"Bearer {self._token}".encode()):
            return web.json_response({"error": "unauthorized"}, status=401)
        if request.method == "GET" and request.path == "/status":
            return web.json_response({"nodes": [b.status() for b in self.by_name.values()]})
        if request.method == "POST" and request.path == "/fault":
            return self._fault(await _body(request))
        if request.method == "POST" and request.path == "/shutdown":
            self.stop.set()
            return web.json_response({"stopping": True})
        return web.json_response({"error": "no such control call"}, status=404)

    def _fault(self, body: dict[str, object]) -> web.Response:
        bmc = self.by_name.get(str(body.get("node")))
        kind = str(body.get("kind"))
        if bmc is None:
            return web.json_response({"error": f"no node {body.get('node')!r}"}, status=400)
        if kind not in FAULTS:
            return web.json_response({"error": f"unknown fault {kind!r}"}, status=400)
        value = body.get("value")
        if body.get("clear"):
            bmc.faults.clear(kind)
        else:
            bmc.faults.set(kind, float(value) if isinstance(value, int | float) else None)
        return web.json_response({"node": bmc.name, "faults": bmc.faults.active()})


async def _body(request: web.Request) -> dict[str, object]:
    try:
        data = json.loads(await request.read() or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


async def _faults_before(bmc: Bmc, request: web.Request) -> web.StreamResponse | None:
    """Unreachable BMC, latency, dropped connections, 503: before the request is read."""
    if bmc.is_down():
        return _drop(request)
    latency = bmc.faults.get("latency")
    if latency is not None:
        await asyncio.sleep(latency / 1000)
    if bmc.faults.get("drop") is not None:
        events.record(bmc.name, "fault.drop", path=request.path)
        return _drop(request)
    retry = bmc.faults.get("unavailable")
    if retry is not None:
        events.record(bmc.name, "fault.503", path=request.path)
        reply = error(503, "ServiceTemporarilyUnavailable", int(retry))
        reply.headers["Retry-After"] = str(int(retry))
        return to_response(reply, head=False)
    return None


def _drop(request: web.Request) -> web.StreamResponse:
    if request.transport is not None:
        request.transport.abort()
    raise asyncio.CancelledError


def to_response(reply: Reply, head: bool) -> web.Response:
    headers = {**COMMON, **reply.headers}
    if reply.raw is not None:
        data = reply.raw
    elif reply.body is not None:
        data = json.dumps(reply.body).encode()  # compact: the C encoder, ~5x faster than indent=
    else:
        return web.Response(status=reply.status, headers=headers)
    headers["Content-Type"] = reply.content_type
    if head:
        headers["Content-Length"] = str(len(data))
        return web.Response(status=reply.status, headers=headers)
    return web.Response(status=reply.status, body=data, headers=headers)
