"""`provision spec show|validate`: the effective spec of nodes."""

from __future__ import annotations

import typer
from rich.table import Table
from rich.tree import Tree

from provision.cli.options import DEFAULT_INVENTORY, InventoryOpt, JsonOpt, NodeArg, load_host
from provision.cli.output import console, emit_json
from provision.spec import load_fleet
from provision.spec.model import NodeSpec

app = typer.Typer(help="Show and validate node specs.", no_args_is_help=True)


@app.command("show")
def show(
    node: NodeArg,
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    as_json: JsonOpt = False,
) -> None:
    """Print the effective spec of NODE."""
    host = load_host(inventory, node)
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
    """Validate the spec of every host in the inventory (exit 2 on the first problem)."""
    fleet = load_fleet(inventory)
    rows = [{"host": h.name, "profile": h.profile, "spec": h.spec.profile} for h in fleet.hosts.values()]
    if as_json:
        emit_json({"inventory": str(inventory), "valid": True, "profiles": sorted(fleet.profiles), "hosts": rows})
        return
    console.print(f"profiles valid: {', '.join(sorted(fleet.profiles))}")
    table = Table("host", "profile", "class", title=f"{inventory}: {len(rows)} host(s) valid")
    for row in rows:
        table.add_row(row["host"], row["profile"], row["spec"])
    console.print(table)


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
