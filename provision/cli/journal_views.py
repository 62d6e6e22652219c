"""`provision status` and `provision history`: where every node stands, from the journal."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel

from provision.clean import records
from provision.cli.options import DEFAULT_INVENTORY, InventoryOpt, LimitOpt, journal_at, one_host, select_names
from provision.cli.output import Format, OutputOpt, add_row, choose, emit_json, new_table, show
from provision.journal import Journal, StageRecord
from provision.journal.locks import Lease, NodeLocks

JournalOpt = Annotated[
    Path | None,
    typer.Option("--journal", help="Journal database (default $PROVISION_STATE_DIR/provision.db)"),
]


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def status_command(
    nodes: Annotated[list[str] | None, typer.Argument(
        help="Host patterns over the inventory's hosts and the journal's nodes (default: every node in the journal)",
        metavar="[PATTERN]...")] = None,
    journal: JournalOpt = None,
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    limit: LimitOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON (--output json).")] = False,
    output: OutputOpt = None,
) -> None:
    """Where every node stands: its last stage, outcome and time, and who holds its lock now (read-only)."""
    fmt = choose(output, as_json)
    with Journal(journal_at(journal, inventory), read_only=True) as jr:
        leases = {lease.node: lease for lease in NodeLocks(jr).held()}
        known = sorted(set(jr.nodes()) | set(leases))
        names = select_names(inventory, nodes or known or ["all"], known, limit) if nodes or limit else known
        last = {n: jr.last_stage(n) for n in names}
        cleaned, retired = records.cleaned(jr, names), records.retired(jr)
    rows = [_status_row(n, rec, leases.get(n)).model_copy(update={
        "cleaned": cleaned[n].describe() if n in cleaned else None,
        "retired": f"retired at {records.describe_time(retired[n].at)} by {retired[n].by}" if n in retired else None})
        for n, rec in last.items()]
    if fmt is Format.JSON:
        emit_json(rows)
        return
    table = new_table("node", "stage", "outcome", "ended", "done", "locked by", "cleaned", "detail",
                      title="bring-up status")
    for r in rows:
        add_row(table, r.node, r.stage or "-", r.outcome or "never run", _when(r.ended_at), "yes" if r.done else "no",
                r.locked_by or "-", " ".join(filter(None, (r.retired, r.cleaned))) or "-", r.detail)
    show(table, fmt)


class NodeStatus(BaseModel):
    node: str
    stage: str | None = None
    outcome: str | None = None
    ended_at: float | None = None
    detail: str = ""
    done: bool = False
    locked_by: str | None = None
    """The holder of the node's lease (owner, pid, host, since), when one holds it now."""
    lock: Lease | None = None
    cleaned: str | None = None
    """"cleaned at ... by ... (level)": the node's last complete `provision clean`."""
    retired: str | None = None
    """"retired at ... by ...": the journal marks it retired (`provision retire`; `unretire` lifts it)."""


def _status_row(node: str, rec: StageRecord | None, lease: Lease | None = None) -> NodeStatus:
    held = {"locked_by": lease.describe(), "lock": lease} if lease is not None else {}
    if rec is None:
        return NodeStatus(node=node, **held)
    done = rec.stage == "verify" and rec.outcome in ("applied", "converged")
    return NodeStatus(node=node, stage=rec.stage, outcome=rec.outcome, ended_at=rec.ended_at, detail=rec.detail,
                      done=done, **held)


def history_command(
    node: Annotated[str, typer.Argument(help="A host pattern that selects one node (inventory or journal)",
                                        metavar="NODE")],
    journal: JournalOpt = None,
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    as_json: Annotated[bool, typer.Option("--json", help="Print machine-readable JSON (--output json).")] = False,
    output: OutputOpt = None,
) -> None:
    """Every stage and side effect recorded for NODE, oldest first (read-only)."""
    fmt = choose(output, as_json)
    with Journal(journal_at(journal, inventory), read_only=True) as jr:
        node = one_host(str(inventory), node, select_names(inventory, [node], sorted(jr.nodes())))
        stages, actions = jr.stages(node), jr.actions(node)
    if fmt is Format.JSON:
        emit_json({"node": node, "stages": stages, "actions": actions})
        return
    table = new_table("run", "stage", "started", "s", "outcome", "detail", title=f"{node}: stages")
    for s in stages:
        add_row(table, s.run_id, s.stage, _when(s.started_at), s.duration_s or "-", s.outcome or "open", s.detail)
    show(table, fmt)
    if fmt is Format.PLAIN:
        print()  # one blank line between the two tables
    acts = new_table("run", "stage", "action", "target", "outcome", title=f"{node}: side effects")
    for a in actions:
        add_row(acts, a.run_id, a.stage, a.action, a.target, a.outcome or "open (interrupted)")
    show(acts, fmt)
