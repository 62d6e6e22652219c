"""Firmware: observe FirmwareInventory; status and plan against the baseline (pure); apply by
multipart push where advertised, else SimpleUpdate from a short-lived image server; Task monitored;
BMC reset waited out; versions verified. Host-reset components are staged for one shared reset."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from provision.errors import InputError, NotApplicable
from provision.redfish import allowable
from provision.redfish.connector import ROOT, Connector, Response
from provision.redfish.errors import (
    RedfishBadRequest,
    RedfishError,
    RedfishNoAnswer,
    RedfishOperationFailed,
    RedfishTimeout,
)
from provision.redfish.image_server import ImageServer
from provision.redfish.ops import adopt
from provision.redfish.ops import identity as platform_identity
from provision.redfish.ops.session import Node
from provision.redfish.ops.waiting import Clock, wait_for
from provision.redfish.resources import SoftwareInventory, Task, UpdateService
from provision.redfish.vendors import VendorPlugin
from provision.redfish.vendors.versions import VersionsNotComparable, compare
from provision.spec.firmware import FirmwareComponent
from provision.spec.platforms import PlatformIdentity, a_platform

LOG = logging.getLogger("provision.redfish")
TASK_TIMEOUT_S = {"bmc": 1200.0, "bios": 1200.0, "gpu": 2400.0, "nvswitch": 2400.0}
DEFAULT_TASK_TIMEOUT_S = 1800.0
RANK = {"bmc": 0, "bios": 1}
Verdict = Literal["ok", "older", "newer", "unknown", "absent", "incomparable"]
# A component the baseline names but FirmwareInventory does not list (or lists without a readable
# version), or whose running version cannot be ordered against the baseline's (versions.compare: a build
# id, another scheme), could not be checked: never "at baseline", "newer" or "older".
UNCHECKED: frozenset[str] = frozenset({"absent", "unknown", "incomparable"})


class FirmwareState(BaseModel):
    model_config = ConfigDict(frozen=True)

    entries: list[SoftwareInventory]
    service: UpdateService
    where: str = "the BMC"
    """The node's BMC, for messages (ConnectorOptions.where)."""
    tasks: frozenset[str] | None = None
    """The ids of the tasks the BMC listed when observed (None: not read); see send()."""
    identity: PlatformIdentity | None = None
    """What the node is (identity.read); None: not read, and then only an image for `any` platform fits."""
    offered_targets: tuple[str, ...] = ()
    """SimpleUpdate's `Targets` AllowableValues, inline or in its ActionInfo (): the BMC does not say."""


class EntryStatus(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    uri: str
    raw_version: str | None
    version: str | None
    verdict: Verdict
    problem: str = ""
    """Why the version could not be ordered against the baseline (verdict incomparable), naming both."""
    state: str | None = None
    """The entry's Status.State; "Absent" for an entry shown only because nothing running matched."""


class ComponentStatus(BaseModel):
    model_config = ConfigDict(frozen=True)

    component: str
    target: str
    entries: list[EntryStatus]

    @property
    def verdict(self) -> Verdict:
        if not self.entries:
            return "absent"
        kinds = {e.verdict for e in self.entries}
        worst: list[Verdict] = ["incomparable", "older", "newer", "unknown", "absent"]
        return next((v for v in worst if v in kinds), "ok")


class FirmwareStep(BaseModel):
    """One update to send."""

    model_config = ConfigDict(frozen=True)

    component: str
    version: str
    image: Path
    sha256: str
    method: Literal["multipart", "simple"]
    uri: str
    targets: list[str]
    apply_time: str
    needs_host_reset: bool
    timeout_s: float
    downgrade: bool = False
    entries: list[str] = Field(default_factory=list)
    image_url: str | None = None  # an image the BMC fetches itself (SimpleUpdate); `image` is then only its name


class FirmwarePlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    steps: list[FirmwareStep] = Field(default_factory=list)
    refused: list[str] = Field(default_factory=list)
    absent: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    """Components the BMC lists but marks Updateable=false (to be updated in-band)."""
    listed_absent: dict[str, str] = Field(default_factory=dict)
    """Absent components whose entries the BMC lists with Status.State Absent: component -> "id version, ..."."""

    @property
    def host_reset(self) -> bool:
        return any(s.needs_host_reset for s in self.steps)

    incomparable: dict[str, str] = Field(default_factory=dict)
    """component -> the line naming its running version(s) and the baseline's, which cannot be ordered: it is not
    flashed (nothing says whether the image is older or newer), and the plan is not carried out."""

    def problems(self) -> list[str]:
        """One line per baseline component that could not be checked."""
        absent = [f"firmware {c}: listed Absent in FirmwareInventory ({self.listed_absent[c]}): could not check"
                  if c in self.listed_absent else f"firmware {c}: not in FirmwareInventory: could not check"
                  for c in self.absent]
        return absent + list(self.incomparable.values())


def observe(conn: Connector, known: PlatformIdentity | None = None) -> FirmwareState:
    """The FirmwareInventory, the UpdateService, the tasks and the node's identity (`known`, else read)."""
    link = (conn.root.get("UpdateService") or {}).get("@odata.id") or f"{ROOT}/UpdateService"
    service = UpdateService.parse(conn.get(str(link)))
    inv = f"{str(link).rstrip('/')}/FirmwareInventory"
    offered = allowable.action_values(conn, service.actions.get("#UpdateService.SimpleUpdate"), "Targets")
    return FirmwareState(entries=[SoftwareInventory.parse(e) for e in conn.members(inv)], service=service,
                         where=conn.opts.where, tasks=adopt.task_ids(conn),
                         identity=known or platform_identity.read(conn), offered_targets=offered)


def name_targets(planned: list[str], matched: list[SoftwareInventory], offered: tuple[str, ...]) -> list[str]:
    """Pure: where the BMC offers `Targets`, the update names the matched entries it offers (their URIs; an
    offered value may be a pattern, as Supermicro's `CPLD_Backplane_(\\d+)`); else the plugin's targets."""
    if not offered:
        return planned
    named = [e.uri for e in matched if any(_offers(value, e.uri) for value in offered)]
    return named or planned


def _offers(value: str, uri: str) -> bool:
    if value.rstrip("/").lower() == uri.rstrip("/").lower():
        return True
    if not any(c in value for c in "()\\[]"):
        return False
    try:
        return re.fullmatch(value.rstrip("/"), uri.rstrip("/")) is not None
    except re.error:
        return False


def select_entries(comp: FirmwareComponent, entries: list[SoftwareInventory],
                   vendor: VendorPlugin) -> list[SoftwareInventory]:
    """The running FirmwareInventory entries an image updates: those its `applies_to.entries` select (by Id,
    and SoftwareId, Manufacturer and RelatedItem where the BMC gives them); for an image that says
    `applies_to: any` and names none, the vendor plugin's rules (and the spec's `match`)."""
    selectors = comp.target.entries
    if not selectors:
        return vendor.match_firmware(comp.component, entries, comp.match)
    return [e for e in entries if vendor.is_running(e)
            and any(s.matches(e.id, e.software_id, e.manufacturer, e.related) for s in selectors)]


def refuse_unfit(baseline: tuple[FirmwareComponent, ...], state: FirmwareState) -> None:
    """Pure: NotApplicable, one line naming the node, its platform and the images, when any image of the
    baseline is not for this node's platform (or the platform could not be read): nothing is planned."""
    unfit = [c for c in baseline if not c.target.fits(state.identity)]
    if not unfit:
        return
    what = a_platform(state.identity.name) if state.identity is not None else "a platform that could not be read"
    images = ", ".join(f"{c.component} ({Path(c.image).name}, for {c.target.describe()})" for c in unfit)
    raise NotApplicable(f"{state.where} is {what}: firmware {images} does not fit it: refused, nothing sent")


def status(
    baseline: tuple[FirmwareComponent, ...], state: FirmwareState, vendor: VendorPlugin
) -> list[ComponentStatus]:
    """Pure: each out-of-band baseline component against the inventory entries that are its running firmware.

    Components the spec marks `updated_by: os` are flashed in-band and checked on the node, not here.
    """
    out = []
    for comp in (c for c in baseline if c.updated_by == "bmc"):
        entries = select_entries(comp, state.entries, vendor)
        rows = [_entry_status(e, vendor.parse_version(e.version), comp) for e in entries]
        rows = rows or _absent_rows(comp, state.entries, vendor)
        out.append(ComponentStatus(component=comp.component, target=comp.version, entries=rows))
    return out


def _entry_status(entry: SoftwareInventory, version: str | None, comp: FirmwareComponent) -> EntryStatus:
    """One entry's verdict; a version that cannot be ordered against the baseline's is `incomparable`, with
    the one line naming both strings (never older, newer or ok)."""
    row = EntryStatus(id=entry.id, uri=entry.uri, raw_version=entry.version, version=version, verdict="unknown",
                      state=entry.status.state if entry.status else None)
    if version is None:
        return row
    try:
        order = compare(version, comp.version, comp.version_scheme)
    except VersionsNotComparable as exc:
        return row.model_copy(update={"verdict": "incomparable",
                                      "problem": f"firmware {comp.component} ({entry.id}): {exc.against('baseline')}"})
    verdict: Verdict = "ok" if order == 0 else ("older" if order < 0 else "newer")
    return row.model_copy(update={"verdict": verdict})


def _absent_rows(comp: FirmwareComponent, entries: list[SoftwareInventory], vendor: VendorPlugin) -> list[EntryStatus]:
    """The component's entries the BMC lists with Status.State Absent (and a version): shown with that version and
    state, verdict absent (nothing running to check), never "not in FirmwareInventory"."""
    absent = [e for e in entries if e.status and e.status.state == "Absent" and e.version]
    as_listed = {e.uri: e for e in absent}
    found = select_entries(comp, [e.model_copy(update={"status": None}) for e in absent], vendor)
    return [EntryStatus(id=e.id, uri=e.uri, raw_version=as_listed[e.uri].version, version=None, verdict="absent",
                        state="Absent") for e in found]


def plan(baseline: tuple[FirmwareComponent, ...], state: FirmwareState, vendor: VendorPlugin,
         inventory_dir: Path | None = None, allow_downgrade: bool = False) -> FirmwarePlan:
    """Pure: the updates needed, BMC first, then BIOS, then the rest (unless `order` says otherwise).

    A spec from load_fleet has absolute image paths; `inventory_dir` is only for a baseline built by hand."""
    baseline = tuple(c for c in baseline if c.updated_by == "bmc")
    refuse_unfit(baseline, state)
    by_name = {c.component: c for c in baseline}
    ordered = sorted(baseline, key=lambda c: (c.order, RANK.get(c.component, 9), c.component))
    statuses = {s.component: s for s in status(baseline, state, vendor)}
    entries = {e.uri: e for e in state.entries}
    steps, refused, absent, skipped = [], [], [], []
    incomparable: dict[str, str] = {}
    listed_absent: dict[str, str] = {}
    for comp in ordered:
        st = statuses[comp.component]
        verdict = st.verdict
        if verdict == "ok":
            continue
        if verdict == "absent":
            absent.append(comp.component)
            if st.entries:
                listed_absent[comp.component] = ", ".join(f"{e.id} {e.raw_version}" for e in st.entries)
            continue
        if verdict == "incomparable":  # never flashed: nothing says whether the image is older or newer
            incomparable[comp.component] = "; ".join(e.problem for e in st.entries if e.verdict == "incomparable")
            continue
        if verdict == "newer" and not allow_downgrade:
            refused.append(f"{comp.component}: running {_versions(st)} is newer than baseline {comp.version} "
                           "(downgrade refused; --allow-downgrade to force)")
            continue
        matched = [entries[e.uri] for e in st.entries if e.verdict != "ok"]
        if all(e.updateable is False for e in matched):
            skipped.append(f"{comp.component}: the BMC marks {', '.join(e.id for e in matched)} not updateable")
            continue
        matched = [e for e in matched if e.updateable is not False]
        steps.append(_step(by_name[comp.component], matched, state, vendor, inventory_dir,
                           downgrade=verdict == "newer"))
    return FirmwarePlan(steps=steps, refused=refused, absent=absent, skipped=skipped, incomparable=incomparable,
                        listed_absent=listed_absent)


def _versions(st: ComponentStatus) -> str:
    return ", ".join(sorted({e.version or "?" for e in st.entries}))


def _step(comp: FirmwareComponent, matched: list[SoftwareInventory], state: FirmwareState,
          vendor: VendorPlugin, inventory_dir: Path | None, downgrade: bool) -> FirmwareStep:
    image = Path(comp.image)
    if not image.is_absolute():
        if inventory_dir is None:
            raise InputError(f"firmware image for {comp.component}: {comp.image} is relative and no directory to "
                             "take it from (load the spec with load_fleet)")
        image = inventory_dir / image
    service = state.service
    push = vendor.multipart_uri(service)
    method: Literal["multipart", "simple"] = "multipart" if push else "simple"
    uri = push or service.simple_update_target or f"{ROOT}/UpdateService/Actions/UpdateService.SimpleUpdate"
    return FirmwareStep(
        component=comp.component, version=comp.version, image=image.resolve(), sha256=comp.sha256,
        method=method, uri=uri,
        targets=name_targets(vendor.update_targets(comp.component, matched), matched, state.offered_targets),
        apply_time=step_apply_time(state, method, uri, comp.component, comp.apply_time),
        needs_host_reset=comp.needs_host_reset,
        timeout_s=TASK_TIMEOUT_S.get(comp.component, DEFAULT_TASK_TIMEOUT_S), downgrade=downgrade,
        entries=[e.id for e in matched],
    )


def step_apply_time(state: FirmwareState, method: str, uri: str, component: str, wanted: str | None) -> str:
    """The baseline's apply time in the BMC's spelling, when the BMC offers it for this update method
    (allowable.update_apply_times); else a one-line InputError naming the node, the URI and what it
    offers, before anything is sent (OnReset and Immediate differ in when the host sees the firmware, so
    an asked-for value is never changed behind the operator's back). A baseline without apply_time
    (None) takes the BMC's choice among what it offers, OnReset first (allowable.apply_time)."""
    try:
        return allowable.update_apply_time(state.service, method, wanted, f"{state.where}: {uri}")
    except RedfishBadRequest as exc:
        fix = "set apply_time in the baseline to one it offers, or leave it unset for the BMC's choice" \
            if wanted is not None else "its update cannot be planned"
        raise InputError(f"{exc} for firmware {component} ({method} update); {fix}") from None


# ---- apply ---------------------------------------------------------------------------------------
def check_image(step: FirmwareStep) -> bytes:
    """The image bytes, after checking they exist and match the baseline's sha256."""
    if not step.image.is_file():
        raise InputError(f"firmware image for {step.component} not found: {step.image}")
    try:
        data = step.image.read_bytes()
    except OSError as exc:
        raise InputError(f"firmware image for {step.component}: cannot read {step.image}: {exc.strerror}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != step.sha256:
        raise InputError(f"firmware image {step.image} sha256 {digest} does not match the baseline {step.sha256}")
    return data


def send(node: Node, step: FirmwareStep, state: FirmwareState, images: ImageServer | None,
         clock: Clock | None = None) -> Response:
    """Start one update; returns the BMC's answer (normally 202 with a Task). The step's apply time is
    checked against what the BMC offers first (a step built elsewhere, e.g. by a campaign, too).

    An update request sent without an answer is never sent again: its task is found instead (adopt.py),
    among those not in `state.tasks` (the BMC's task ids before the request; read now when not known)."""
    conn = node.conn
    apply_time = step_apply_time(state, step.method, step.uri, step.component, step.apply_time)
    params = {"Targets": step.targets, "@Redfish.OperationApplyTime": apply_time}
    known = adopt.task_ids(conn) if state.tasks is None else state.tasks
    if step.image_url is not None:  # the BMC downloads it; its integrity is the image's own signature
        scheme = urlsplit(step.image_url).scheme.upper()
        body = {"ImageURI": step.image_url, "TransferProtocol": scheme, **params}
        return _post_once(conn, step, body, known, clock)
    data = check_image(step)
    if step.method == "multipart":
        parts = {"UpdateParameters": (None, json.dumps(params), "application/json"),
                 "UpdateFile": (step.image.name, data, "application/octet-stream")}
        upload_s = max(120.0, conn.opts.retry.timeout_s)
        with conn.waiting(upload_s):  # an image upload is bounded by its own timeout, not the reads' deadline
            resp = _post_once(conn, step, parts, known, clock, upload_s)
        matched = [e for e in state.entries if e.id in step.entries]
        extra = node.vendor.after_push(state.service, step.component, matched, node.system.uri, node.manager_uri)
        if extra is not None:  # e.g. Supermicro: the upload only stores the image; Install flashes it
            follow = conn.post(extra[0], extra[1])  # unanswered: raised (RedfishNoAnswer), never sent again
            if task_uri(follow):
                return follow
        return resp
    if images is None:
        raise RedfishError(f"{conn.opts.where}: SimpleUpdate needs the image server")
    body = {"ImageURI": images.url_for(step.image), "TransferProtocol": "HTTP", **params}
    return _post_once(conn, step, body, known, clock)


def _post_once(conn: Connector, step: FirmwareStep, body: dict[str, Any], before: frozenset[str],
               clock: Clock | None, upload_s: float | None = None) -> Response:
    """The update request, sent once: unanswered, its task is adopted (or a ProvisionError raised)."""
    image_uri = body.get("ImageURI")
    sent = adopt.Sent(uri=step.uri, image_uri=image_uri if isinstance(image_uri, str) else None,
                      image_name=step.image.name, version=step.version, targets=tuple(step.targets))
    try:
        if upload_s is not None:
            return conn.post_multipart(step.uri, body, timeout=upload_s)
        return conn.post(step.uri, body)
    except RedfishNoAnswer as exc:
        LOG.warning("%s; looking for its task", exc)
        return adopt.adopt(conn, sent, before, clock or Clock())


def task_uri(resp: Response) -> str | None:
    loc = resp.header("location")
    body = resp.json
    if body.get("@odata.type", "").startswith("#Task.") and body.get("@odata.id"):
        return str(body["@odata.id"])
    return urlsplit(loc).path if loc else None


def monitor(node: Node, uri: str, timeout_s: float, clock: Clock) -> Task:
    """Poll a Task until it ends; a BMC that drops out (reset) is waited out, not treated as failure."""
    conn = node.conn

    def probe() -> Task | None:
        try:
            task = Task.parse(conn.get(uri))
        except RedfishError:
            return None  # the BMC is restarting or briefly unreachable: keep polling until the deadline
        return task if task.done else None

    with conn.waiting(timeout_s):
        task = wait_for(probe, timeout_s, f"{conn.opts.where}: firmware task {uri}", clock)
    if not task.ok:
        raise RedfishOperationFailed(
            f"{conn.opts.where}: firmware task {uri} ended {task.task_state}/{task.task_status}: {task.message_text}")
    return task


def wait_bmc(conn: Connector, timeout_s: float, clock: Clock) -> None:
    """Wait for the BMC to answer again after a reset (a re-login happens on the first 401)."""

    def probe() -> bool | None:
        try:
            conn.get(f"{ROOT}/")
            return True
        except RedfishError:
            return None

    with conn.waiting(timeout_s):
        wait_for(probe, timeout_s, f"{conn.opts.where}: BMC back after reset", clock)


def verify(node: Node, steps: list[FirmwareStep], baseline: tuple[FirmwareComponent, ...], clock: Clock,
           timeout_s: float = 300) -> None:
    """Every stepped component must now run its baseline version (polled briefly; BMCs lag)."""
    wanted = {s.component for s in steps}
    comps = tuple(c for c in baseline if c.component in wanted)

    def probe() -> list[ComponentStatus] | None:
        try:
            rows = status(comps, observe(node.conn), node.vendor)
        except RedfishError:
            return None
        return rows if all(r.verdict == "ok" for r in rows) else None

    try:
        with node.conn.waiting(timeout_s):
            wait_for(probe, timeout_s, "firmware versions", clock)
    except RedfishTimeout:
        rows = status(comps, observe(node.conn), node.vendor)
        bad = [f"{r.component} runs {_versions(r)}, wants {r.target}" for r in rows if r.verdict != "ok"]
        raise RedfishOperationFailed(
            f"{node.conn.opts.where}: firmware not at baseline after update: " + "; ".join(bad)) from None
