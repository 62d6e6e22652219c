"""An update POST is never sent twice: the connector resends a POST only when the connection itself failed,
and an update sent without an answer is followed through the task it started (provision.redfish.ops.adopt).

The connector runs for real on a fake pool (its transport's urllib3 pool replaced): a fake BMC that carries out an
update and then drops the connection, as a BMC whose answer is lost does. The bug these catch is a double
flash; they count the POSTs the BMC received and the tasks it started."""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from http.client import RemoteDisconnected
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import urllib3

from provision.errors import ProvisionError
from provision.redfish.connector import Connector, ConnectorOptions
from provision.redfish.errors import RedfishNoAnswer
from provision.redfish.ops import adopt
from provision.redfish.ops import firmware as fw
from provision.redfish.ops.waiting import Clock
from provision.redfish.resources import Task, UpdateService
from provision.redfish.retry import RetryPolicy
from provision.redfish.transport import SendFailed, Transport
from provision.redfish.vendors import by_name

TASKS = "/redfish/v1/TaskService/Tasks"
SIMPLE = "/redfish/v1/UpdateService/Actions/UpdateService.SimpleUpdate"
PUSH = "/redfish/v1/UpdateService/upload"
IMAGE_URL = "https://images.example/fw/bios_3.0.bin"


@dataclass
class FakeBmc:
    """A pool's urlopen: GETs of the TaskService, update POSTs that start a task. `faults`: what happens to
    each POST in turn: "lost" (carried out, the connection then dropped), "unsent" (dropped before the BMC
    read it: no task), "refused" (no connection at all), "ok"."""

    faults: list[str] = field(default_factory=list)
    posts: int = 0
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)

    def urlopen(self, method: str, path: str, body: bytes | None = None, **_: Any) -> Any:
        if method == "GET":
            return self._get(path.split("?", 1)[0])
        fault = self.faults.pop(0) if self.faults else "ok"
        if fault == "refused":
            raise urllib3.exceptions.NewConnectionError(None, "Failed to establish a new connection: refused")  # type: ignore[arg-type]
        self.posts += 1
        if fault == "unsent":
            raise urllib3.exceptions.ProtocolError("Connection aborted.", RemoteDisconnected("closed"))
        uri = self._start(path, body or b"")
        if fault == "lost":
            raise urllib3.exceptions.ProtocolError("Connection aborted.", RemoteDisconnected("closed"))
        return _answer(202, {"@odata.id": uri}, {"Location": uri})

    def _start(self, path: str, body: bytes) -> str:
        ident = str(len(self.tasks) + 1)
        uri = f"{TASKS}/{ident}"
        payload = body.decode() if path == SIMPLE else json.dumps({"Targets": ["/redfish/v1/UpdateService/"
                                                                               "FirmwareInventory/BIOS"]})
        self.tasks[uri] = {"@odata.id": uri, "Id": ident, "TaskState": "Running",
                           "Payload": {"TargetUri": path, "HttpOperation": "POST", "JsonBody": payload}}
        return uri

    def _get(self, path: str) -> Any:
        if path == TASKS:
            return _answer(200, {"@odata.id": TASKS, "Members": [{"@odata.id": u} for u in self.tasks]})
        if path in self.tasks:
            return _answer(200, self.tasks[path])
        return _answer(404, {})


def _answer(status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    return SimpleNamespace(status=status, headers={"Content-Type": "application/json", **(headers or {})},
                           data=json.dumps(body).encode())


def _node(bmc: FakeBmc) -> Any:
    opts = ConnectorOptions(address="http://127.0.0.1:9", username="u", password="p", name="node07",
                            insecure_http=True, retry=RetryPolicy(attempts=3, base_delay_s=0, timeout_s=1))
    conn = Connector(opts, sleep=lambda s: None)
    conn._http._pool = bmc  # type: ignore[assignment]  # the fake pool
    return SimpleNamespace(conn=conn, vendor=by_name("generic"), system=SimpleNamespace(uri="/redfish/v1/Systems/1"),
                           manager_uri=None)


def _step(tmp_path: Path, method: str) -> fw.FirmwareStep:
    image = tmp_path / "bios_3.0.bin"
    image.write_bytes(b"bios image")
    import hashlib

    return fw.FirmwareStep(component="bios", version="3.0", image=image, sha256=hashlib.sha256(b"bios image").hexdigest(),
                           method=method, uri=PUSH if method == "multipart" else SIMPLE,  # type: ignore[arg-type]
                           targets=["/redfish/v1/UpdateService/FirmwareInventory/BIOS"], apply_time="OnReset",
                           needs_host_reset=True, timeout_s=60, image_url=None if method == "multipart" else IMAGE_URL)


STATE = fw.FirmwareState(entries=[], service=UpdateService.parse({
    "@odata.id": "/redfish/v1/UpdateService", "MultipartHttpPushUri": PUSH,
    "Actions": {"#UpdateService.SimpleUpdate": {"target": SIMPLE}}}))
FAST = Clock(poll_s=0.0)


@pytest.mark.parametrize("method", ["simple", "multipart"])
def test_an_update_whose_answer_is_lost_is_adopted_not_sent_again(tmp_path: Path, method: str) -> None:
    bmc = FakeBmc(faults=["lost"], tasks={f"{TASKS}/old": {"@odata.id": f"{TASKS}/old", "Id": "old",
                                                           "TaskState": "Completed"}})
    node = _node(bmc)
    resp = fw.send(node, _step(tmp_path, method), STATE, None, FAST)
    assert bmc.posts == 1 and len(bmc.tasks) == 2  # one flash
    assert fw.task_uri(resp) == f"{TASKS}/2"  # the task the lost request started, followed as its answer


def test_a_refused_connection_is_sent_again_nothing_having_reached_the_bmc(tmp_path: Path) -> None:
    bmc = FakeBmc(faults=["refused"])
    resp = fw.send(_node(bmc), _step(tmp_path, "simple"), STATE, None, FAST)
    assert bmc.posts == 1 and fw.task_uri(resp) == f"{TASKS}/1"


def test_no_task_after_an_unanswered_update_is_reported_not_resent(tmp_path: Path) -> None:
    bmc = FakeBmc(faults=["unsent"])
    clock = Clock(poll_s=1.0, sleep=lambda s: None, now=iter(range(1000)).__next__)  # type: ignore[arg-type]
    with pytest.raises(ProvisionError) as err:
        fw.send(_node(bmc), _step(tmp_path, "simple"), STATE, None, clock)
    assert bmc.posts == 1 and not bmc.tasks
    text = str(err.value)
    assert "node07 BMC (http://127.0.0.1:9)" in text and SIMPLE in text and "not sent again" in text


def test_any_other_post_without_an_answer_raises_after_one_send() -> None:
    bmc = FakeBmc(faults=["lost"])
    node = _node(bmc)
    with pytest.raises(RedfishNoAnswer, match=r"node07 .*POST /redfish/v1/Systems/1/Actions/ComputerSystem\.Reset"):
        node.conn.post("/redfish/v1/Systems/1/Actions/ComputerSystem.Reset", {"ResetType": "ForceRestart"})
    assert bmc.posts == 1


def _task(ident: str, target: str | None, body: dict[str, Any] | None = None, args: list[str] | None = None) -> Task:
    data: dict[str, Any] = {"@odata.id": f"{TASKS}/{ident}", "Id": ident, "TaskState": "Running"}
    if target is not None:
        data["Payload"] = {"TargetUri": target, "JsonBody": json.dumps(body or {})}
    if args is not None:
        data["Messages"] = [{"MessageId": "Update.1.0.UpdateInProgress", "MessageArgs": args}]
    return Task.parse(data)


SENT_SIMPLE = adopt.Sent(uri=SIMPLE, image_uri=IMAGE_URL, image_name="bios_3.0.bin", version="3.0")
SENT_PUSH = adopt.Sent(uri=PUSH, image_uri=None, image_name="bios_3.0.bin", version="3.0",
                       targets=("/redfish/v1/UpdateService/FirmwareInventory/BIOS",))


@pytest.mark.parametrize(("task", "sent", "before", "expected"), [
    (_task("5", SIMPLE, {"ImageURI": IMAGE_URL}), SENT_SIMPLE, set(), True),
    (_task("5", SIMPLE, {"ImageURI": IMAGE_URL}), SENT_SIMPLE, {"5"}, False),  # there before the request
    (_task("5", SIMPLE, {"ImageURI": "https://images.example/fw/bmc_1.bin"}), SENT_SIMPLE, set(), False),
    (_task("5", f"http://bmc{SIMPLE}", {"ImageURI": "http://10.0.0.1:8080/x/bios_3.0.bin"}), SENT_SIMPLE, set(), True),
    (_task("5", PUSH, {"Targets": ["/redfish/v1/UpdateService/FirmwareInventory/BIOS"]}), SENT_PUSH, set(), True),
    (_task("5", PUSH, {"Targets": ["/redfish/v1/UpdateService/FirmwareInventory/BMC"]}), SENT_PUSH, set(), False),
    (_task("5", "/redfish/v1/Systems/1/Actions/ComputerSystem.Reset"), SENT_PUSH, set(), False),
    (_task("5", None, args=["BIOS_3.0.BIN", "BIOS"]), SENT_PUSH, set(), True),  # no Payload: its messages
    (_task("5", None, args=["2.9"]), SENT_PUSH, set(), False),
    (_task("5", None), SENT_PUSH, set(), False),
])
def test_which_task_an_unanswered_update_started(task: Task, sent: adopt.Sent, before: set[str],
                                                  expected: bool) -> None:
    assert adopt.matches(task, sent, before) is expected


def test_only_a_failed_connection_counts_as_nothing_sent() -> None:
    """Real sockets: a refused port (nothing sent) against a server that reads the request, then closes, and
    one that takes the connection and never answers (a read timeout: the request was written)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]
    mute = socket.socket()
    mute.bind(("127.0.0.1", 0))
    mute.listen()  # never accepted: the kernel takes the request, nobody answers

    def read_then_close() -> None:
        peer, _ = srv.accept()
        peer.recv(65536)
        peer.close()

    threading.Thread(target=read_then_close, daemon=True).start()
    failures = []
    for address, timeout in ((f"http://127.0.0.1:{port}", 2.0), (f"http://127.0.0.1:{_free_port()}", 2.0),
                             (f"http://127.0.0.1:{mute.getsockname()[1]}", 0.05)):
        with pytest.raises(SendFailed) as err:
            Transport(address, None, 1).send("POST", "/x", body={}, timeout=timeout)
        failures.append(err.value)
    srv.close()
    mute.close()
    assert [f.nothing_sent for f in failures] == [False, True, False]
    assert failures[2].kind == "ReadTimeout"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

