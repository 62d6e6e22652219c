"""`provision spec show|validate`: the effective spec of nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from provision.cli.options import DEFAULT_INVENTORY, InventoryOpt, JsonOpt
from provision.cli.output import console, emit_json, err_console
from provision.spec import load_fleet
from provision.spec.loader import PROFILE_PREFIX, profile_file
from provision.spec.memory_population import Severity, check_profile
from provision.spec.model import Fleet, NodeSpec

app = typer.Typer(help="Show and validate node specs.", no_args_is_help=True)


@app.command("show")
def show(
    node: Annotated[str, typer.Argument(help="Inventory host name, e.g. node01")],
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    as_json: JsonOpt = False,
) -> None:
    """Print the effective spec of NODE."""
    host = load_fleet(inventory).select([node])[0]
    if as_json:
        emit_json({"host": host.name, "profile": host.profile, "spec": host.spec,
                   "comparisons": host.spec.effective_comparisons})
        return
    tree = _spec_tree(f"{host.name} ({host.profile})", host.spec)
    kinds = tree.add("[cyan]comparisons[/cyan] (how the BMC drift holds each figure against the spec)")
    for figure, kind in host.spec.effective_comparisons.items():
        kinds.add(f"[cyan]{figure}[/cyan]: {kind.value}")
    console.print(tree)


@app.command("validate")
def validate(inventory: InventoryOpt = DEFAULT_INVENTORY, as_json: JsonOpt = False) -> None:
    """Validate the spec of every host in the inventory (exit 2 on a problem).

    Past the schema: every profile's memory population against its CPU (provision/spec/memory_population.py);
    a spec that cannot be true is an error line, a CPU the table does not know a warning line."""
    fleet = load_fleet(inventory)
    rows = [{"host": h.name, "profile": h.profile, "spec": h.spec.profile} for h in fleet.hosts.values()]
    problems = _population_problems(inventory, fleet)
    errors = [p for p in problems if p["severity"] == Severity.ERROR]
    if as_json:
        emit_json({"inventory": str(inventory), "valid": not errors, "profiles": sorted(fleet.profiles),
                   "hosts": rows, "problems": problems})
        if errors:
            raise typer.Exit(2)
        return
    for p in problems:
        colour = "red" if p["severity"] == Severity.ERROR else "yellow"
        err_console.print(f"[{colour}]{p['severity']}:[/{colour}] {escape(p['line'])}", highlight=False,
                          soft_wrap=True)
    if errors:
        raise typer.Exit(2)
    console.print(f"profiles valid: {', '.join(sorted(fleet.profiles))}")
    table = Table("host", "profile", "class", title=f"{inventory}: {len(rows)} host(s) valid")
    for row in rows:
        table.add_row(row["host"], row["profile"], row["spec"])
    console.print(table)


def _population_problems(inventory: Path, fleet: Fleet) -> list[dict[str, str]]:
    """One entry per finding: the file, the profile variable and key, why, and the hosts it concerns."""
    out: list[dict[str, str]] = []
    for profile, spec in sorted(fleet.profiles.items()):
        hosts = sorted(h.name for h in fleet.hosts.values() if h.profile == profile)
        users = f"hosts {', '.join(hosts)}" if hosts else "no host uses it"
        where = profile_file(inventory, profile)
        for finding in check_profile(spec):
            key = f"{PROFILE_PREFIX}{profile}.{finding.key}"
            out.append({"severity": finding.severity, "file": where, "key": key, "message": finding.message,
                        "hosts": users, "line": f"{where}: {key}: {finding.message} ({users})"})
    return out


def _spec_tree(title: str, spec: NodeSpec) -> Tree:
    tree = Tree(f"[bold]{title}[/bold]")
    _add(tree, spec.model_dump(mode="json", exclude={"comparisons"}))  # shown below as the effective kinds
    return tree


def _add(node: Tree, value: object) -> None:
    if isinstance(value, dict):
        for key, sub in value.items():
            if isinstance(sub, dict | list) and sub:
                _add(node.add(f"[cyan]{key}[/cyan]"), sub)
            else:
                node.add(f"[cyan]{key}[/cyan]: {sub}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _add(node.add(f"[{i}]"), item)
