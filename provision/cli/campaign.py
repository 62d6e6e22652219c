"""`provision campaign plan|start|join|status|pause|resume|abort|report CAMPAIGN`.

CAMPAIGN is a campaign file (e.g. campaigns/ml_prod_v4_2026q4.yml) or the name of a campaign
already in the journal. Exit 0: done (or paused/nothing to do); 1: halted or a node failed; 2: bad input.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from provision.campaign import control
from provision.campaign.catalog import Catalog, load_catalog
from provision.campaign.engine import HALTED_BY_REQUEST, Engine, Outcome, SharedEngine, requested_outcome
from provision.campaign.gates import GateRunner
from provision.campaign.plan import CampaignPlan, Rest, build_plan, observe_all, plan_start
from provision.campaign.redfish_updater import RedfishHealth, RedfishUpdater
from provision.campaign.report import build_report, render_html
from provision.campaign.updater import Target
from provision.clean import records
from provision.cli import events
from provision.cli.firmware import AdvertiseOpt, BindOpt
from provision.cli.options import DEFAULT_INVENTORY, InventoryOpt, JsonOpt, LimitOpt, journal_at
from provision.cli.output import (
    Format,
    OutputOpt,
    add_row,
    cell,
    choose,
    console,
    emit_json,
    new_table,
    note,
    show,
)
from provision.errors import CheckFailed, ChecksIncomplete, InputError
from provision.journal import Journal
from provision.journal.campaigns import CampaignNode, CampaignState, CampaignStore, Request
from provision.journal.location import ENV_URL, Backend, Location, recorded
from provision.journal.locks import LEASE_TTL_S
from provision.private import write_private
from provision.redfish.image_server import ImageServer
from provision.spec import load_fleet

app = typer.Typer(help="Firmware rollout campaigns: waves, canaries, health gates, halt and resume.",
                  no_args_is_help=True)

CampaignArg = Annotated[str, typer.Argument(help="Campaign file, or the name of a campaign in the journal")]
JournalOpt = Annotated[
    Path | None, typer.Option("--journal", help="Journal database (default $PROVISION_STATE_DIR/provision.db)")
]
InsecureOpt = Annotated[bool, typer.Option("--insecure", help="Do NOT verify BMC TLS certificates.")]
PollOpt = Annotated[float, typer.Option("--poll-seconds", min=0.05, help="How often BMC tasks and power are polled")]


def _updater(source: Path, insecure: bool, poll_s: float = 1.0, images: ImageServer | None = None) -> RedfishUpdater:
    return RedfishUpdater(source, insecure=insecure, poll_s=poll_s, images=images)


@contextmanager
def _images(catalog: Catalog, bind: str, advertise: str | None) -> Iterator[ImageServer | None]:
    """While the campaign runs, the catalog's image files are offered to BMCs that only take SimpleUpdate
    (BMCs with a push URI get them uploaded instead and never touch this server)."""
    if all(c.is_url for c in catalog.components):
        yield None
        return
    with ImageServer(bind=bind, advertise=advertise) as server:
        yield server


@app.command("plan")
def plan(campaign: CampaignArg, inventory: InventoryOpt = DEFAULT_INVENTORY, limit: LimitOpt = None,
         journal: JournalOpt = None, insecure: InsecureOpt = False, as_json: JsonOpt = False,
         output: OutputOpt = None) -> None:
    """Read every target's firmware and show pending updates and the waves (changes nothing)."""
    fmt = choose(output, as_json)
    resolved = _resolve_read_only(campaign, journal_at(journal, inventory))
    catalog = resolved.catalog
    targets, retired = _without_retired(control.targets(load_fleet(inventory), catalog, limit),
                                        journal_at(journal, inventory))
    result = build_plan(catalog, observe_all(list(targets.values()), catalog, _updater(resolved.source, insecure)),
                        retired)
    if fmt is Format.JSON:
        emit_json(dict(result.model_dump(mode="json"), unread=[u.model_dump() for u in result.unread]))
    else:
        _print_plan(result, fmt)
    _raise_unlooked(result)


def _without_retired(targets: dict[str, Target], where: Location | Journal) -> tuple[dict[str, Target], list[str]]:
    """The targets the journal does not mark retired, and those it does (a journal not made yet marks none)."""
    if isinstance(where, Journal):
        marked = set(records.retired(where))
    elif recorded(where):
        with Journal(where, read_only=True) as jr:
            marked = set(records.retired(jr))
    else:
        marked = set()
    return {n: t for n, t in targets.items() if n not in marked}, sorted(n for n in targets if n in marked)


def _raise_unlooked(result: CampaignPlan) -> None:
    """ChecksIncomplete (exit 3, as verify) when a node could not be read, or runs a version that cannot be
    compared with the catalog's: a plan that could not look is not a plan."""
    unread = sum(len(u.nodes) for u in result.unread)
    unsure = result.with_problems
    if not unread and not unsure:
        return
    parts = [f"could not read {unread} of {len(result.nodes)} node(s)"] if unread else []
    parts += [f"versions not comparable with the catalog's on {len(unsure)} node(s)"] if unsure else []
    raise ChecksIncomplete(f"campaign {result.campaign}: " + "; ".join(parts) + ": no plan for them")


LeaseOpt = Annotated[float, typer.Option(
    "--lease-seconds", min=1.0,
    help="Node and leader leases of a shared (PostgreSQL) journal expire this long after a controller dies")]


def _engine(jr: Journal, catalog: Catalog, store: CampaignStore, targets: dict[str, Target],
            updater: RedfishUpdater, poll_s: float, lease_s: float) -> Engine:
    """The engine: on a SQLite journal its only controller; on a PostgreSQL one, a controller others can join."""
    gate = GateRunner(RedfishHealth(updater))
    if jr.dialect.row_claims:
        return SharedEngine(catalog, store, targets, updater, gate, poll_s=poll_s, on_node=_node_event,
                            lease_s=lease_s)
    return Engine(catalog, store, targets, updater, gate, poll_s=poll_s, on_node=_node_event)


@app.command("start")
def start(campaign: CampaignArg, inventory: InventoryOpt = DEFAULT_INVENTORY, limit: LimitOpt = None,
          journal: JournalOpt = None, insecure: InsecureOpt = False, poll_seconds: PollOpt = 1.0,
          image_bind: BindOpt = "127.0.0.1", image_advertise: AdvertiseOpt = None, as_json: JsonOpt = False,
          lease_seconds: LeaseOpt = LEASE_TTL_S) -> None:
    """Plan, record the waves in the journal, and run the campaign in the foreground (on a PostgreSQL journal,
    other controllers may `join` it)."""
    with Journal(journal_at(journal, inventory)) as jr:
        store = CampaignStore(jr)
        resolved = control.resolve(store, campaign)
        if resolved.record is not None:
            raise InputError(f"campaign {resolved.catalog.name} already exists in {jr.where}; use resume")
        catalog = resolved.catalog
        targets, retired = _without_retired(control.targets(load_fleet(inventory), catalog, limit), jr)
        with _images(catalog, image_bind, image_advertise) as images:
            updater = _updater(resolved.source, insecure, poll_seconds, images)
            started = plan_start(list(targets.values()), catalog, updater, retired)  # the canary's nodes first
            planned = started.plan
            for name in planned.retired:
                console.print(f"{name}: retired (never touched)", markup=False)
            _say_not_applicable(planned)
            if not planned.waves:
                console.print(f"campaign {catalog.name}: every target is at the baseline or not applicable; "
                              "nothing to do", markup=False)
                return
            engine = _engine(jr, catalog, store, targets, updater, poll_seconds, lease_seconds)
            rest = Rest(catalog, started.rest, updater, _say_not_applicable) if started.rest else None
            outcome = engine.start(resolved.source, planned.waves, rest)
    _finish(outcome, as_json)


@app.command("join")
def join(campaign: CampaignArg, inventory: InventoryOpt = DEFAULT_INVENTORY,
         shard: Annotated[str | None, typer.Option(
             "--shard", help="Take only these hosts (a group or host pattern: the BMCs this controller reaches)")]
         = None,
         insecure: InsecureOpt = False, poll_seconds: PollOpt = 1.0, image_bind: BindOpt = "127.0.0.1",
         image_advertise: AdvertiseOpt = None, as_json: JsonOpt = False, lease_seconds: LeaseOpt = LEASE_TTL_S) -> None:
    """Take part in a running campaign from another controller: claim nodes of its current wave that no other
    controller holds (a PostgreSQL journal: PROVISION_JOURNAL_URL)."""
    where = journal_at(None, inventory)
    if where.backend is Backend.SQLITE:  # refused before the file is opened (or created)
        raise InputError(f"journal {where.shown}: campaign join needs a journal shared by the controllers "
                         f"(PostgreSQL: set {ENV_URL}=postgresql://user@host/database or the inventory's "
                         "provision_journal_url); a SQLite journal has one "
                         "controller, the one that started the campaign")
    with Journal(where) as jr:
        store = CampaignStore(jr)
        resolved = control.resolve(store, campaign)
        if resolved.record is None:
            raise InputError(f"campaign {resolved.catalog.name} has not been started in {jr.where}; start it first")
        control.check_unchanged(resolved)
        fleet = load_fleet(inventory)
        targets = control.planned_targets(fleet, store, resolved.record.name)
        if shard is not None:
            wanted = {h.name for h in fleet.select(["all"], shard)}
            targets = {n: t for n, t in targets.items() if n in wanted}
            if not targets:
                raise InputError(f"--shard {shard}: no host of campaign {resolved.record.name} matches it")
        with _images(resolved.catalog, image_bind, image_advertise) as images:
            updater = _updater(resolved.source, insecure, poll_seconds, images)
            engine = SharedEngine(resolved.catalog, store, targets, updater, GateRunner(RedfishHealth(updater)),
                                  poll_s=poll_seconds, on_node=_node_event, lease_s=lease_seconds)
            outcome = engine.join()
    _finish(outcome, as_json)


@app.command("resume")
def resume(campaign: CampaignArg, inventory: InventoryOpt = DEFAULT_INVENTORY, journal: JournalOpt = None,
           retry_failed: Annotated[bool, typer.Option("--retry-failed", help="Try failed nodes again")] = False,
           insecure: InsecureOpt = False, poll_seconds: PollOpt = 1.0, image_bind: BindOpt = "127.0.0.1",
           image_advertise: AdvertiseOpt = None, as_json: JsonOpt = False,
           lease_seconds: LeaseOpt = LEASE_TTL_S) -> None:
    """Continue a paused, halted or interrupted campaign; every node is observed again first."""
    with Journal(journal_at(journal, inventory)) as jr:
        store = CampaignStore(jr)
        resolved = control.resolve(store, campaign)
        record = resolved.record
        if record is None:
            raise InputError(f"campaign {resolved.catalog.name} has not been started; use start")
        control.check_unchanged(resolved)
        if control.controller_alive(record):
            raise InputError(f"campaign {record.name} is running in process {record.pid}")
        targets = control.planned_targets(load_fleet(inventory), store, record.name)
        gone = [n for n in record.unplanned if n not in targets]
        if gone:  # never planned, never dropped: the operator puts them back or starts a new campaign
            raise InputError(f"campaign {record.name}: host(s) {', '.join(gone)} not in the inventory (not planned "
                             "yet: resume reads them)")
        with _images(resolved.catalog, image_bind, image_advertise) as images:
            updater = _updater(resolved.source, insecure, poll_seconds, images)
            engine = _engine(jr, resolved.catalog, store, targets, updater, poll_seconds, lease_seconds)
            rest = Rest(resolved.catalog, [targets[n] for n in record.unplanned], updater,
                        _say_not_applicable) if record.unplanned else None
            outcome = engine.resume(retry_failed=retry_failed, rest=rest)
    _finish(outcome, as_json)


@app.command("pause")
def pause(campaign: CampaignArg, journal: JournalOpt = None, inventory: InventoryOpt = DEFAULT_INVENTORY) -> None:
    """Stop taking nodes: in-flight nodes finish, the rest stay pending until resume."""
    _request(campaign, journal_at(journal, inventory), Request.PAUSE)


@app.command("abort")
def abort(campaign: CampaignArg, journal: JournalOpt = None, inventory: InventoryOpt = DEFAULT_INVENTORY) -> None:
    """Stop for good: in-flight nodes finish, no further node is taken, resume is refused."""
    _request(campaign, journal_at(journal, inventory), Request.ABORT)


@app.command("halt")
def halt(campaign: CampaignArg, journal: JournalOpt = None, inventory: InventoryOpt = DEFAULT_INVENTORY) -> None:
    """Stop now, as a failure past max_failures does: no node is taken any more, in-flight nodes finish; resume
    continues. On a shared (PostgreSQL) journal the campaign is halted at once for every controller."""
    where = journal_at(journal, inventory)
    if where.backend is Backend.SQLITE:  # one controller: it halts as it ends its nodes in flight
        _request(campaign, where, Request.HALT)
        return
    with Journal(where) as jr:
        store = CampaignStore(jr)
        record = store.get(_name(store, campaign))
        if not store.halt(record.name, HALTED_BY_REQUEST):
            raise InputError(f"campaign {record.name} is {store.get(record.name).state.value}, not running; "
                             "nothing to halt")
        console.print(f"campaign {record.name}: halted; every controller takes no node more, nodes in flight "
                      "finish", markup=False)


PromOpt = Annotated[Path | None, typer.Option(
    "--prom", help="Also write the state as Prometheus metrics here (node_exporter textfile format, atomic)")]


@app.command("status")
def status(campaign: CampaignArg, journal: JournalOpt = None, as_json: JsonOpt = False,
           output: OutputOpt = None, prom: PromOpt = None, inventory: InventoryOpt = DEFAULT_INVENTORY) -> None:
    """Where the campaign stands: state, waves, node counts (from the journal, read-only).

    With --prom, run it from a timer while the campaign runs: node_exporter's textfile collector then
    exports nodes per state, the current wave and whether it halted (docs/metrics.md).
    """
    fmt = choose(output, as_json)
    with Journal(journal_at(journal, inventory), read_only=True) as jr:
        store = CampaignStore(jr)
        name = _name(store, campaign)
        report = build_report(store, name)
        alive = control.controller_alive(store.get(name))
    if prom is not None:
        import time

        from provision.metrics import campaign as campaign_metrics
        from provision.metrics import write_textfile

        write_textfile(prom, campaign_metrics.families(report, alive, time.time()))
    if fmt is Format.JSON:
        emit_json({"campaign": name, "state": report.state, "reason": report.reason, "controller_running": alive,
                   "summary": report.summary, "waves": report.waves})
        return
    s = report.summary
    table = new_table("wave", "nodes", "state", "seconds", "gate")
    for w in report.waves:
        add_row(table, w.wave, w.nodes, w.state.value, _num(w.duration_s), w.gate)
    if fmt is Format.TABLE:
        console.print(Text.assemble(f"campaign {name}: ", (report.state.value, "bold"),
                                    f" ({report.reason})" if report.reason else "",
                                    " - controller running" if alive else ""), soft_wrap=True)
        console.print(f"nodes {s.nodes}: done {s.done} (updated {s.updated}), failed {s.failed}, pending {s.pending}")
    show(table, fmt)


@app.command("report")
def report(campaign: CampaignArg, journal: JournalOpt = None, as_json: JsonOpt = False,
           html: Annotated[Path | None, typer.Option("--html", help="Write an HTML report to this file")] = None,
           output: OutputOpt = None, inventory: InventoryOpt = DEFAULT_INVENTORY) -> None:
    """Per node versions before and after, durations, outcome; a fleet summary (JSON, HTML or a table)."""
    fmt = choose(output, as_json)
    with Journal(journal_at(journal, inventory), read_only=True) as jr:
        store = CampaignStore(jr)
        result = build_report(store, _name(store, campaign))
    if html is not None:
        try:
            write_private(html, render_html(result))  # node names, versions, errors: 0600 from the start
        except OSError as exc:
            raise InputError(f"{html}: cannot write the report: {exc.strerror}") from None
        note(f"wrote {html}")
    if fmt is Format.JSON:
        emit_json(result)
        return
    if html is None or output is not None:
        table = new_table("node", "wave", "outcome", "before -> after", "s", "error",
                          title=f"campaign {result.campaign}")
        for n in result.nodes:
            changes = ", ".join(f"{c} {n.before.get(c)} -> {n.after.get(c)}" for c in n.flashed) or "unchanged"
            add_row(table, n.node, n.wave, n.outcome.value, changes, _num(n.duration_s), n.error)
        show(table, fmt)


# -- helpers ---------------------------------------------------------------------------------------
def _resolve_read_only(campaign: str, journal: Location) -> control.Resolved:
    """CAMPAIGN for a command that only reads: the journal is opened read-only, and a campaign file needs none
    (planning before any campaign ran creates no journal)."""
    path = Path(campaign)
    if not recorded(journal) and (path.suffix in (".yml", ".yaml") or path.is_file()):
        return control.Resolved(load_catalog(path), path.resolve(), None)
    with Journal(journal, read_only=True) as jr:
        return control.resolve(CampaignStore(jr), campaign)


def _name(store: CampaignStore, campaign: str) -> str:
    path = Path(campaign)
    if path.suffix in (".yml", ".yaml") or path.is_file():
        return control.resolve(store, campaign).catalog.name
    return store.get(campaign).name


def _request(campaign: str, journal: Location, request: Request) -> None:
    with Journal(journal) as jr:
        store = CampaignStore(jr)
        record = store.get(_name(store, campaign))
        if record.state in (CampaignState.DONE, CampaignState.ABORTED):
            raise InputError(f"campaign {record.name} is already {record.state.value}")
        if control.controller_alive(record):
            store.request(record.name, request)
            console.print(f"campaign {record.name}: {request.value} requested of process {record.pid}; "
                          "nodes in flight finish first", markup=False)
            return
        state, reason = requested_outcome(request)
        store.set_state(record.name, state, reason)
        console.print(f"campaign {record.name}: {state.value}", markup=False)


def _say_not_applicable(plan: CampaignPlan) -> None:
    for p in plan.nodes:
        if p.not_applicable:
            console.print(f"{p.node}: {p.not_applicable} (never touched)", markup=False, soft_wrap=True)


def _node_event(node: CampaignNode, seconds: float) -> None:
    """`node03 campaign-wave1 done 41.2s: bmc 1.0 -> 1.1`, on stderr as each node's turn ends (a campaign has no
    live table, so on a terminal too; -q turns them off)."""
    changes = ", ".join(f"{c} {node.before.get(c)} -> {node.after.get(c)}" for c in node.flashed)
    events.emit(node.node, f"campaign-wave{node.wave}", node.state.value, seconds, node.error or changes)


def _finish(outcome: Outcome, as_json: bool) -> None:
    if as_json:
        emit_json(outcome)
    else:
        colour = "green" if outcome.ok else ("yellow" if outcome.state is CampaignState.PAUSED else "red")
        console.print(Text.assemble(f"campaign {outcome.campaign}: ", (outcome.state.value, colour),
                                    f" ({outcome.reason})" if outcome.reason else "",
                                    f" - done {outcome.done}, failed {outcome.failed}, pending {outcome.pending}"),
                      soft_wrap=True)
    if outcome.state is CampaignState.PAUSED and not outcome.failed:
        return
    if not outcome.ok:
        raise CheckFailed(f"campaign {outcome.campaign} {outcome.state.value}: {outcome.reason or 'node(s) failed'}")


def _print_plan(result: CampaignPlan, fmt: Format) -> None:
    """The nodes with work or a problem; a cause of unreadable nodes said once for all the nodes it holds back
    (their rows omitted); then the counts, "could not read N" among them."""
    table = new_table("node", "wave", "pending updates", "host reset", title=f"campaign {result.campaign}: plan")
    wave_of = {n: i for i, w in enumerate(result.waves) for n in w}
    shared = [u for u in result.unread if len(u.nodes) > 1]
    said = {n for u in shared for n in u.nodes}
    for p in result.nodes:
        if not p.needs_work or p.node in said:
            continue
        if p.error:
            what = cell(f"cannot read: {p.error}", "red")
        else:
            updates = [", ".join(f"{u.component} {u.current or '?'} -> {u.target}" + (" (staged)" if u.staged else "")
                                 for u in p.updates)] if p.updates else []
            what = cell("; ".join(updates + [f"not planned: {line}" for line in p.problems]),
                        "red" if p.problems else "")
        add_row(table, p.node, wave_of.get(p.node, "-"), what, "yes" if p.host_reset else "no")
    for p in result.nodes:
        if p.not_applicable:
            add_row(table, p.node, "-", cell(p.not_applicable, "yellow"), "no")
    for name in result.retired:
        add_row(table, name, "-", cell("retired (provision retire): never touched", "yellow"), "no")
    show(table, fmt)
    for u in shared:
        _say(fmt, f"error: could not read {len(u.nodes)} node(s) ({_names(u.nodes)}): {u.cause}")
    sizes = " + ".join(str(len(w)) for w in result.waves) or "none"
    unread = sum(len(u.nodes) for u in result.unread)
    counts = [f"waves: {sizes}"] + ([f"could not read: {unread}"] if unread else [])
    counts += [f"versions not comparable: {len(result.with_problems)}"] if result.with_problems else []
    counts += [f"already at baseline: {len(result.at_baseline)}"] if result.at_baseline or not counts[1:] else []
    summary = "; ".join(counts)
    if result.not_applicable:
        summary += f"; not applicable (never touched): {len(result.not_applicable)}"
    if result.retired:
        summary += f"; retired (never touched): {len(result.retired)}"
    _say(fmt, summary)


def _say(fmt: Format, line: str) -> None:
    if fmt is Format.PLAIN:
        note(line)  # stdout keeps to the rows
    else:
        console.print(line, markup=False, highlight=False, soft_wrap=True)


def _names(nodes: list[str], most: int = 5) -> str:
    """node01, node02, ... and 3 more: a fleet-wide cause names a few nodes, not a thousand."""
    shown = ", ".join(nodes[:most])
    return shown + (f" and {len(nodes) - most} more" if len(nodes) > most else "")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"
