"""The campaign's NodeUpdater and HealthGate over the project's Redfish layer.

observe(): the FirmwareInventory members matched by the catalog's per-vendor rules (only members
whose Id can match are fetched; the vendor plugin's patterns when the catalog has no rule), plus
the TaskService: a running task means "busy", a finished OnReset update awaiting activation means
"staged" (a resumed campaign then resets instead of flashing again). update(): one step per
component through provision.redfish.ops.firmware (push or SimpleUpdate, Task monitored, BMC
reset waited out), then the one host reset (provision.redfish.ops.power).

prepare(): the next wave's BMCs are logged in to, and their firmware observed, while the wave at work
waits (provision.campaign.ahead), so a wave's start burst is mostly its update requests. The gate of
a node reuses the observation its turn made just before (at most FRESH_S old).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from provision.campaign.ahead import Preparer
from provision.campaign.catalog import Component, Match, image_path
from provision.campaign.evidence import update_evidence
from provision.campaign.updater import FirmwareState, GateResult, Guard, Refused, Target, UpdateFailed, unguarded
from provision.errors import ProvisionError
from provision.redfish import allowable
from provision.redfish.connector import ROOT, Json, is_expanded
from provision.redfish.image_server import ImageServer
from provision.redfish.ops import firmware as fw
from provision.redfish.ops import identity as platform_identity
from provision.redfish.ops.power import host_reset
from provision.redfish.ops.session import Node, open_node, options_for
from provision.redfish.ops.waiting import Clock, Durations
from provision.redfish.resources import SoftwareInventory, Task, UpdateService
from provision.redfish.retry import RetryPolicy
from provision.redfish.vendors.versions import VersionsNotComparable, compare
from provision.spec.platforms import PlatformIdentity, glob_fits

TASKS = f"{ROOT}/TaskService/Tasks"
HOST_RESET = "host reset"  # a Durations kind beside the component names
BMC_BACK = "BMC back"  # a Durations kind per component: its update task's end to the BMC answering again
FLASH_RETRY = RetryPolicy(attempts=2, base_delay_s=0.2, max_delay_s=2.0)
TRANSITIONS = frozenset({"PoweringOn", "PoweringOff"})
FRESH_S = 5.0  # an observation this recent (same session) is reused by the node's gate


@dataclass(frozen=True)
class Seen:
    """One observation of a node: the state, the inventory entries per component, the System read."""

    state: FirmwareState
    found: dict[str, list[SoftwareInventory]]
    system: Json
    tasks: frozenset[str] = frozenset()
    """The ids of the tasks the BMC listed (an unanswered update's own task is one not among them)."""


@dataclass
class _Session:
    node: Node
    service: UpdateService | None = None
    seen: Seen | None = None
    seen_at: float = 0.0
    seen_ahead: bool = False  # `seen` was made ahead of the turn (provision.campaign.ahead), not yet used
    starting: bool = True  # opened, first update not sent yet
    resetting: bool = False  # waiting on the host's reset


Prepared = tuple[Node, UpdateService | None]


class RedfishUpdater:
    """Thread-safe. Calls inside `session(target)` share one connection to that BMC (a node's whole
    turn: observe, update, observe, gate); calls outside open their own.

    Polling learns (Durations): once a component's update task, the BMC's return after it, or the host
    reset has been seen to take T seconds, later ones are first polled at T (then every poll_s), which
    keeps the load on many BMCs low and sees each end sooner than a fixed poll interval would.
    """

    def __init__(self, campaign_file: Path, *, insecure: bool = False, images: ImageServer | None = None,
                 poll_s: float = 1.0, reset_timeout_s: float = 1800.0) -> None:
        self.campaign_file = campaign_file
        self.insecure = insecure
        self.images = images
        self.clock = Clock(poll_s=poll_s)
        self.reset_timeout_s = reset_timeout_s
        self.max_parallel = 1  # requests per BMC at once: the fleet is the parallelism (one connection each)
        self.took = Durations()  # learned: see the class docstring
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()
        self._components: list[Component] = []  # what prepare() observes
        self._ahead: Preparer[Prepared, Seen] = Preparer(
            self._connect_ahead, self._observe_ahead, lambda conn: conn[0].conn.close(),
            starting=self._any_starting, resetting=self._all_resetting)

    @contextmanager
    def session(self, target: Target, afresh: bool = False) -> Iterator[None]:
        ahead = self._ahead.take(target)
        node, service = ahead.conn if ahead else (self._open(target), None)
        seen = ahead.fresh() if ahead and not afresh else None  # a node taken over: observed again, now
        with self._lock:
            self._sessions[target.name] = _Session(node, service=service, seen=seen, seen_ahead=seen is not None,
                                                   seen_at=ahead.observed_at if ahead and seen else 0.0)
        try:
            yield
        finally:
            with self._lock:
                self._sessions.pop(target.name, None)
            node.conn.close()

    # -- work ahead of the turns (provision.campaign.ahead) ---------------------------------------
    def prepare(self, targets: Sequence[Target], components: Sequence[Component], after_turns: int | None = 0) -> None:
        """Log in to these BMCs once the turns now starting have sent their updates, and observe them
        once `after_turns` turns have begun and all wait on their hosts' reset (best effort, background)."""
        self._components = list(components)
        self._ahead.prepare(targets, after_turns)

    def release(self) -> None:
        """Stop preparing; log out of the connections prepared but not used."""
        self._ahead.release()

    def _connect_ahead(self, target: Target) -> Prepared:
        node = self._open(target)
        try:
            with node.conn.deadline():
                return node, UpdateService.parse(node.conn.get(f"{ROOT}/UpdateService"))
        except ProvisionError:
            node.conn.close()
            raise

    def _observe_ahead(self, conn: Prepared) -> Seen:
        with conn[0].conn.deadline():
            return _see(conn[0], self._components)

    def _any_starting(self) -> bool:
        with self._lock:
            return any(s.starting for s in self._sessions.values())

    def _all_resetting(self) -> bool:
        with self._lock:
            return bool(self._sessions) and all(s.resetting for s in self._sessions.values())

    def _open(self, target: Target, retry: RetryPolicy | None = None) -> Node:
        if target.bmc is None:
            raise UpdateFailed(f"{target.name}: no BMC endpoint in the inventory")
        return open_node(options_for(target.name, target.bmc, insecure=self.insecure, retry=retry,
                                     max_parallel=self.max_parallel))

    @contextmanager
    def node(self, target: Target, retry: RetryPolicy | None = None) -> Iterator[Node]:
        """The session's connection (with `retry` for the time being) or a new one. What is sent inside runs
        within the BMC's per-command deadline (provision_bmc_deadline_s), as every other BMC command's
        requests do; the waits inside (a firmware Task, the BMC's return, the host reset) have their own
        bounds and stand it still (Connector.waiting)."""
        with self._lock:
            sess = self._sessions.get(target.name)
        if sess is None:
            with self._connect(target, retry) as node, node.conn.deadline():
                yield node
            return
        saved = sess.node.conn.opts
        if retry is not None:
            sess.node.conn.opts = saved.model_copy(update={"retry": retry})
        try:
            with sess.node.conn.deadline():
                yield sess.node
        finally:
            sess.node.conn.opts = saved

    @contextmanager
    def _connect(self, target: Target, retry: RetryPolicy | None) -> Iterator[Node]:
        node = self._open(target, retry)
        try:
            yield node
        finally:
            node.conn.close()

    def observe(self, target: Target, components: Sequence[Component]) -> FirmwareState:
        """The turn's first observe takes the one made ahead, if fresh; every other one reads."""
        with self.node(target) as node:
            with self._lock:
                sess = self._sessions.get(target.name)
                ahead = sess.seen if sess and sess.seen_ahead else None
                if sess is not None:
                    sess.seen_ahead = False
            if ahead is not None:
                return ahead.state
            seen = _see(node, components, identity=self._identity(target))
            with self._lock:
                if sess is not None:
                    sess.seen, sess.seen_at = seen, time.monotonic()
            return seen.state

    def recent(self, target: Target) -> Seen | None:
        """The observation this node's session made in the last FRESH_S seconds."""
        with self._lock:
            sess = self._sessions.get(target.name)
            if sess is None or sess.seen is None or time.monotonic() - sess.seen_at > FRESH_S:
                return None
            return sess.seen

    def update(self, target: Target, flash: Sequence[Component], reset: bool, guard: Guard = unguarded) -> None:
        """Flash each component in order on one connection (short retries: while a BMC reboots into
        its new image, polls fail fast and are repeated), then the one host reset; `guard` right before
        each request that changes the node."""
        try:
            with self.node(target, FLASH_RETRY) as node:
                service = self._service(target) or UpdateService.parse(node.conn.get(f"{ROOT}/UpdateService"))
                _refuse_unfit(node, flash, node_identity(node, flash, self._identity(target)))
                found = self._found(target, node, flash)
                offered = allowable.action_values(node.conn, service.actions.get("#UpdateService.SimpleUpdate"),
                                                  "Targets")  # where the BMC offers Targets, each step names its
                steps = [self._step(node, service, c, found[c.component], offered) for c in flash]
                state = fw.FirmwareState(entries=[e for es in found.values() for e in es], service=service,
                                         tasks=self._tasks_seen(target))
                for step in steps:
                    guard(f"{step.component} {step.version} update")
                    state = self._flash(node, state, step, target)
                    self._learned(f"{step.component} {BMC_BACK}",
                                  lambda: fw.wait_bmc(node.conn, self.reset_timeout_s, self.clock))
                if reset:
                    guard("host reset")
                    self._host_reset(target, node)
        except (UpdateFailed, Refused):
            raise
        except ProvisionError as exc:
            raise UpdateFailed(str(exc)) from None

    def _identity(self, target: Target) -> PlatformIdentity | None:
        """The identity this node's session (this turn, this connection) has read, if any."""
        with self._lock:
            sess = self._sessions.get(target.name)
            return sess.seen.state.identity if sess and sess.seen else None

    def _service(self, target: Target) -> UpdateService | None:
        with self._lock:
            sess = self._sessions.get(target.name)
            return sess.service if sess else None

    def _started(self, target: Target) -> None:
        with self._lock:
            sess = self._sessions.get(target.name)
            if sess is not None:
                sess.starting = False

    def _tasks_seen(self, target: Target) -> frozenset[str] | None:
        """The task ids the session's last observe read (None: none made; fw.send then reads them)."""
        with self._lock:
            sess = self._sessions.get(target.name)
            return sess.seen.tasks if sess and sess.seen else None

    def _found(self, target: Target, node: Node, comps: Sequence[Component]) -> dict[str, list[SoftwareInventory]]:
        """Inventory entries per component: as the session's last observe matched them, else read now."""
        with self._lock:
            sess = self._sessions.get(target.name)
            cached = dict(sess.seen.found) if sess and sess.seen else {}
        if all(c.component in cached for c in comps):
            return cached
        return matched_entries(node, comps)

    def _step(self, node: Node, service: UpdateService, comp: Component,
              entries: list[SoftwareInventory], offered: tuple[str, ...] = ()) -> fw.FirmwareStep:
        if not entries:
            raise UpdateFailed(f"{node.conn.opts.name}: {comp.component}: no FirmwareInventory entry matches")
        push = None if comp.is_url else node.vendor.multipart_uri(service)  # a URL image: the BMC fetches it
        simple = service.simple_update_target or f"{ROOT}/UpdateService/Actions/UpdateService.SimpleUpdate"
        local = None if comp.is_url else image_path(self.campaign_file, comp).resolve()
        image = local or Path(Path(urlsplit(comp.image).path).name)
        method = "multipart" if push else "simple"
        offers = fw.FirmwareState(entries=[], service=service, where=node.conn.opts.where)
        return fw.FirmwareStep(
            component=comp.component, version=comp.version, image=image, image_url=comp.image if comp.is_url else None,
            sha256=comp.sha256, method=method, uri=push or simple,
            targets=fw.name_targets(node.vendor.update_targets(comp.component, entries), entries, offered),
            apply_time=fw.step_apply_time(offers, method, push or simple, comp.component, comp.apply_time),
            needs_host_reset=comp.needs_host_reset,
            timeout_s=fw.TASK_TIMEOUT_S.get(comp.component, fw.DEFAULT_TASK_TIMEOUT_S),
            entries=[e.id for e in entries],
        )

    def _flash(self, node: Node, state: fw.FirmwareState, step: fw.FirmwareStep,
               target: Target) -> fw.FirmwareState:
        """Send one step and follow its task; the state for the next step knows that task too."""
        resp = fw.send(node, step, state, self.images, self.clock)
        self._started(target)
        uri = fw.task_uri(resp)
        if uri:
            self._learned(step.component, lambda: fw.monitor(node, uri, step.timeout_s, self.clock))
            if state.tasks is not None:
                return state.model_copy(update={"tasks": state.tasks | {uri.rstrip("/").rsplit("/", 1)[-1]}})
        return state

    def _learned(self, kind: str, wait: Callable[[], object]) -> None:
        """`wait()`, first polling after the shortest time this kind of wait has taken (Durations)."""
        start = self.clock.now()
        self.clock.sleep(self.took.expected(kind))
        wait()
        self.took.seen(kind, self.clock.now() - start)

    def _host_reset(self, target: Target, node: Node) -> None:
        with self._lock:  # this turn now waits on its host: the next wave may be observed ahead meanwhile
            sess = self._sessions.get(target.name)
            if sess is not None:
                sess.resetting = True
        start = self.clock.now()  # as _learned, but the wait's first poll comes after the reset is sent
        host_reset(node, self.clock, self.reset_timeout_s, first_poll_at=start + self.took.expected(HOST_RESET))
        self.took.seen(HOST_RESET, self.clock.now() - start)


class RedfishHealth:
    """Redfish-side health (System, first Chassis, Manager Status) and the BMC-side conformance
    subset (host power On, no update task running, every catalog component at its version)."""

    def __init__(self, updater: RedfishUpdater) -> None:
        self.updater = updater
        self._chassis: dict[str, list[str]] = {}  # node -> its first Chassis (a static link, read once)
        self._lock = threading.Lock()

    def check(self, target: Target, components: Sequence[Component], *, redfish_health: bool,
              conformance: bool) -> GateResult:
        problems: list[str] = []
        with self.updater.node(target) as node:
            seen = self.updater.recent(target) or _see(node, components)
            state, system = seen.state, seen.system
            if redfish_health:
                problems += _health_problems(node, system, self._first_chassis(target, node))
            if conformance:
                if system.get("PowerState") != "On":
                    problems.append(f"host power is {system.get('PowerState')}, expected On")
                if state.busy:
                    problems.append("an update task is still running")
                problems += [f"{c.component} is {state.versions.get(c.component)}, expected {c.version}"
                             for c in components if c.target.fits(state.identity)  # what is for this node
                             and state.versions.get(c.component) != c.version]
        return GateResult(ok=not problems, problems=tuple(problems))

    def _first_chassis(self, target: Target, node: Node) -> list[str]:
        with self._lock:
            known = self._chassis.get(target.name)
        if known is None:
            chassis = node.conn.get_optional(f"{ROOT}/Chassis") or {}
            known = [str(m.get("@odata.id")) for m in (chassis.get("Members") or [])[:1] if isinstance(m, dict)]
            with self._lock:
                self._chassis[target.name] = known
        return known


def _refuse_unfit(node: Node, flash: Sequence[Component], identity: PlatformIdentity | None) -> None:
    """Right before anything is sent: every image must fit the board the BMC says it is, now."""
    unfit = [c for c in flash if not c.target.fits(identity)]
    if unfit:
        what = ", ".join(f"{c.component} {c.version} (for {c.target.describe()})" for c in unfit)
        board = identity.name if identity is not None else "a platform that could not be read"
        raise UpdateFailed(f"{node.conn.opts.name}: {what} does not fit the node, which is {board}: "
                           "refused, nothing sent")


def _health_problems(node: Node, system: Json, chassis: list[str]) -> list[str]:
    """System, Manager and first Chassis: Status.HealthRollup (else Health) must be OK; one that reports
    neither gives no evidence of health, and is a problem too (could not check is never a pass)."""
    bodies = {node.system.uri: system}
    uris = [node.system.uri] + ([node.manager_uri] if node.manager_uri else []) + chassis
    problems = []
    for uri in uris:
        status = (bodies.get(uri) or node.conn.get(uri)).get("Status") or {}
        health = status.get("HealthRollup") or status.get("Health")
        if health is None:
            problems.append(f"{uri} reports no Status.Health: health not checked")
        elif health != "OK":
            problems.append(f"{uri} Status.Health is {health}")
    return problems


def observe_node(node: Node, components: Sequence[Component],
                 found: dict[str, list[SoftwareInventory]] | None = None) -> FirmwareState:
    """Versions per component, update tasks running, OnReset images awaiting activation."""
    return _see(node, components, found).state


def node_identity(node: Node, components: Sequence[Component],
                  known: PlatformIdentity | None = None) -> PlatformIdentity | None:
    """The node's identity: `known` (read earlier on this turn's connection) or read now; not read (None) when
    every component is for `any` platform. Never kept across turns: the board behind an address can change."""
    if all(c.target.any_platform for c in components):
        return None
    return known or platform_identity.of_node(node)


def _see(node: Node, components: Sequence[Component], found: dict[str, list[SoftwareInventory]] | None = None,
         identity: PlatformIdentity | None = None) -> Seen:
    # the tasks first: an update that ends while the inventory is read then shows in the inventory (read after
    # it), where read the other way round it would show in neither (an old version, and a task already over)
    tasks = [Task.parse(t) for t in node.conn.members(TASKS)]
    identity = node_identity(node, components, identity)
    components = [c for c in components if c.target.fits(identity)]  # the others are never read nor sent
    found = found if found is not None else matched_entries(node, components)
    read = {c.component: _version(node, found[c.component], c) for c in components}
    versions = {c: v for c, (v, _) in read.items()}
    entries = {c: [e.uri for e in es] for c, es in found.items()}
    evidence = update_evidence(tasks, components, versions, entries)
    system = node.conn.get(node.system.uri)
    power = system.get("PowerState")
    state = FirmwareState(versions=versions, busy=evidence.busy or power in TRANSITIONS, staged=evidence.staged,
                          running=evidence.running, incomparable={c: why for c, (_, why) in read.items() if why},
                          identity=identity)
    return Seen(state, found, system, frozenset(t.id for t in tasks))


def matched_entries(node: Node, components: Sequence[Component]) -> dict[str, list[SoftwareInventory]]:
    """FirmwareInventory entries per component: one expanded read where the BMC offers $expand, else
    the collection and then only the members whose Id can match a rule."""
    link = (node.conn.root.get("UpdateService") or {}).get("@odata.id") or f"{ROOT}/UpdateService"
    coll = node.conn.get_expanded(f"{str(link).rstrip('/')}/FirmwareInventory", 1)
    members = [m for m in coll.get("Members", []) if isinstance(m, dict)]
    inline = {str(m.get("@odata.id")).rstrip("/"): m for m in members if is_expanded(m)}
    uris = [str(m.get("@odata.id")).rstrip("/") for m in members]
    rules: dict[str, Match | None] = {c.component: c.matcher(node.vendor.name) for c in components}

    def may_match(comp: Component, member_id: str) -> bool:
        if comp.target.entries:  # the image names its entries (applies_to.entries): by their Id
            return any(glob_fits(s.id, member_id) for s in comp.target.entries)
        rule = rules[comp.component]
        return rule is None or rule.id_may_match(member_id)

    wanted = [u for u in uris if any(may_match(c, u.rsplit("/", 1)[-1]) for c in components)]
    bodies: dict[str, Json | None] = {u: inline[u] for u in wanted if u in inline}
    bodies |= node.conn.get_many([u for u in wanted if u not in inline])
    entries = [SoftwareInventory.parse(bodies[u]) for u in wanted if bodies.get(u)]
    out: dict[str, list[SoftwareInventory]] = {}
    for comp in components:
        rule = rules[comp.component]
        if comp.target.entries:
            out[comp.component] = [e for e in entries if node.vendor.is_running(e) and any(
                s.matches(e.id, e.software_id, e.manufacturer, e.related) for s in comp.target.entries)]
        elif rule is None:
            out[comp.component] = node.vendor.match_firmware(comp.component, entries)
        else:
            out[comp.component] = [e for e in entries if rule.matches(e.id, e.name or "")]
    return out


def _version(node: Node, entries: list[SoftwareInventory], comp: Component) -> tuple[str | None, str]:
    """The catalog version when every entry runs it (vendor formats compared), else the first that differs; and
    the line naming both strings when that one cannot be ordered against the catalog's (else '')."""
    if not entries:
        return None, ""
    for entry in entries:
        parsed = node.vendor.parse_version(entry.version)
        if parsed is None:
            return entry.version or "unknown", ""
        try:
            if compare(parsed, comp.version, comp.version_scheme) != 0:
                return parsed, ""
        except VersionsNotComparable as exc:
            return parsed, f"{comp.component} ({entry.id}): {exc.against('catalog')}"
    return comp.version, ""
