"""An update request sent without an answer: find the task it started instead of sending it again.

A SimpleUpdate or multipart push whose connection dropped after it was written may have been carried out;
sending it again could flash the component twice. The TaskService tells: a task that was not there before
the request (`before`, the task ids read just ahead of it) and whose Payload is this request (its TargetUri,
its ImageURI or Targets) or, where the BMC keeps no Payload, whose Messages name the image or the version,
is this update's task and is followed as if the BMC had answered. None within the timeout: a one-line
ProvisionError naming the BMC and the URI; nothing is sent again. `matches` is pure, tested as a table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from provision.redfish.connector import ROOT, Connector, Response
from provision.redfish.errors import RedfishError, RedfishNoAnswer, RedfishTimeout
from provision.redfish.ops.waiting import Clock, wait_for
from provision.redfish.resources import Task

TASKS = f"{ROOT}/TaskService/Tasks"
ADOPT_TIMEOUT_S = 60.0  # a BMC lists the task of a request it took at once; this leaves room for one in reset


@dataclass(frozen=True)
class Sent:
    """The update request that went unanswered."""

    uri: str
    image_uri: str | None  # SimpleUpdate's ImageURI; None for a push
    image_name: str
    version: str
    targets: tuple[str, ...] = ()


def task_ids(conn: Connector) -> frozenset[str]:
    """The ids of the tasks the BMC lists now (empty when it has no TaskService to read)."""
    try:
        coll = conn.get(TASKS)
    except RedfishError:
        return frozenset()
    return frozenset(_last(m.get("@odata.id")) for m in coll.get("Members") or [] if isinstance(m, dict))


def matches(task: Task, sent: Sent, before: Iterable[str]) -> bool:
    """Pure: `task` is the one `sent` started (see the module docstring)."""
    if {task.id, _last(task.uri)} & set(before):
        return False
    if task.payload is not None and task.payload.target_uri:
        if _path(task.payload.target_uri) != _path(sent.uri):
            return False
        body = task.payload.body()
        image = body.get("ImageURI")
        if sent.image_uri is not None and isinstance(image, str):
            return image == sent.image_uri or image_name(image) == sent.image_name
        targets = body.get("Targets")
        return not isinstance(targets, list) or {_path(str(t)) for t in targets} == {_path(t) for t in sent.targets}
    words = {str(a).lower() for m in task.messages for a in m.get("MessageArgs") or []}
    return bool(words & {sent.image_name.lower(), sent.version.lower()} - {""})


def adopt(conn: Connector, sent: Sent, before: frozenset[str], clock: Clock,
          timeout_s: float = ADOPT_TIMEOUT_S) -> Response:
    """The task `sent` started, as the answer the BMC did not give (202, Location: the task)."""

    def probe() -> Task | None:
        try:
            tasks = [Task.parse(t) for t in conn.members(TASKS)]
        except RedfishError:
            return None  # the BMC is briefly away (a reset): look again until the timeout
        return next((t for t in tasks if matches(t, sent, before)), None)

    try:
        with conn.waiting(timeout_s):
            task = wait_for(probe, timeout_s, "", clock)
    except RedfishTimeout:
        raise RedfishNoAnswer(
            f"{conn.opts.where}: POST {sent.uri}: sent, no answer, and no task for {sent.image_name} appeared in "
            f"{timeout_s:g} s; not sent again (read the BMC's TaskService before updating it again)",
            uri=sent.uri) from None
    return Response(status=202, headers={"location": task.uri}, body={})


def _path(uri: str) -> str:
    return (urlsplit(uri).path if "://" in uri else uri).rstrip("/")


def _last(uri: object) -> str:
    return str(uri).rstrip("/").rsplit("/", 1)[-1]


def image_name(uri: str) -> str:
    """The file name an image URI or path ends in (what a task's ImageURI and a baseline's image share)."""
    return PurePosixPath(urlsplit(uri).path if "://" in uri else uri).name
