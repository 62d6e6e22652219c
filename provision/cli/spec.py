"""`provision spec show|validate`: the effective spec of nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.text import Text
from rich.tree import Tree

from provision.cli.options import DEFAULT_INVENTORY, InventoryOpt, JsonOpt, NodeArg, load_host
from provision.cli.output import Format, OutputOpt, add_row, choose, emit_json, err_console, new_table, print_wide, show
from provision.spec import load_fleet
from provision.spec.ansible_inventory import PROFILE_PREFIX, profile_file
from provision.spec.findings import Finding, Severity
from provision.spec.fleet import Fleet
from provision.spec.memory_population import check_profile
from provision.spec.model import NodeSpec
from provision.spec.parts import part_findings
from provision.spec.power_budget import budget_findings, check_power

app = typer.Typer(help="Show and validate node specs.", no_args_is_help=True)


@app.command("show")
def show_spec(
    node: NodeArg,
    inventory: InventoryOpt = DEFAULT_INVENTORY,
    as_json: JsonOpt = False,
    output: OutputOpt = None,
) -> None:
    """Print the effective spec of NODE (a tree; `key.path<TAB>value` lines when piped or with -o plain)."""
    fmt = choose(output, as_json)
    host = load_host(inventory, node)
    comparisons = {figure: kind.value for figure, kind in host.spec.effective_comparisons.items()}
    if fmt is Format.JSON:
        emit_json({"host": host.name, "profile": host.profile, "spec": host.spec,
                   "comparisons": host.spec.effective_comparisons})
        return
    data = host.spec.model_dump(mode="json", exclude={"comparisons"})  # shown below as the effective kinds
    if fmt is Format.PLAIN:
        lines = [f"{path}\t{_scalar(value)}" for path, value in _flatten(data)]
        lines += [f"comparisons.{figure}\t{kind}" for figure, kind in comparisons.items()]
        typer.echo("\n".join(lines))
        return
    tree = Tree(Text(f"{host.name} ({host.profile})", style="bold"))
    _add(tree, data)
    kinds = tree.add(Text.assemble(("comparisons", "cyan"), " (how the BMC drift holds each figure against the spec)"))
    for figure, kind in comparisons.items():
        kinds.add(_pair(figure, kind))
    print_wide(tree)


@app.command("export")
def export(
    node: NodeArg,
    inventory: InventoryOpt = DEFAULT_INVENTORY,
) -> None:
    """Print NODE's spec file (JSON, no credentials) for `provision verify --local --spec-file` on the node."""
    from provision.scheduler.specfile import NodeSpecFile

    host = load_host(inventory, node)
    print(NodeSpecFile.of(host).to_json(), end="")


StrictOpt = Annotated[bool, typer.Option("--strict", help="Exit 1 when there are findings (figures that differ "
                                          "from the parts table, a power budget that does not hold)")]
_COLOURS = {Severity.ERROR: "red", Severity.FINDING: "magenta", Severity.WARNING: "yellow"}


@app.command("validate")
def validate(inventory: InventoryOpt = DEFAULT_INVENTORY, as_json: JsonOpt = False, output: OutputOpt = None,
             strict: StrictOpt = False) -> None:
    """Validate the spec of every host and profile in the inventory (exit 2 on an error; with --strict, 1 on a
    finding).

    Past the schema: every profile's memory population against its CPU (provision/spec/memory_population.py);
    a spec that cannot be true is an error line, a CPU the table does not know a warning line. Every profile's
    CPU and GPU figures against the parts table (provision/spec/parts.yml) and its power budget (the GPUs' power
    limits + the CPUs' TDP + power.platform_allowance_w) against its peak draw, its PSUs under their redundancy and
    its cooling limit (provision/spec/power_budget.py): each a finding line naming the profile's figure, the
    part's and the source; findings do not fail validation unless --strict. Each rack of provision_racks against
    its nodes' summed peak_draw_w (provision/spec/racks.py): over budget is an error."""
    fmt = choose(output, as_json)
    fleet = load_fleet(inventory)
    rows = [{"host": h.name, "profile": h.profile, "spec": h.spec.profile} for h in fleet.hosts.values()]
    problems = _population_problems(inventory, fleet) + _rack_problems(inventory, fleet)
    errors = [p for p in problems if p["severity"] == Severity.ERROR]
    findings = [p for p in problems if p["severity"] == Severity.FINDING]
    code = 2 if errors else 1 if strict and findings else 0
    if fmt is Format.JSON:
        emit_json({"inventory": str(inventory), "valid": not errors, "profiles": sorted(fleet.profiles),
                   "classes": {name: spec.profile for name, spec in sorted(fleet.profiles.items())},
                   "hosts": rows, "problems": problems})
        if code:
            raise typer.Exit(code)
        return
    for p in problems:
        colour = _COLOURS[Severity(p["severity"])]
        err_console.print(f"[{colour}]{p['severity']}:[/{colour}] {escape(p['line'])}", highlight=False,
                          soft_wrap=True)
    if errors:
        raise typer.Exit(2)
    table = new_table("host", "profile", "class", title=f"{inventory}: {len(rows)} host(s) valid")
    for row in rows:
        add_row(table, row["host"], row["profile"], row["spec"])
    summary = (f"{len(fleet.profiles)} profiles valid ({len(findings)} finding(s)): "
               f"{', '.join(f'{name} ({spec.profile})' for name, spec in sorted(fleet.profiles.items()))}")
    if fmt is Format.TABLE:
        print_wide(Text(summary))
    else:  # plain: stdout stays the host table alone
        err_console.print(escape(summary), highlight=False, soft_wrap=True)
    show(table, fmt)
    if code:
        raise typer.Exit(code)


def errors_of(inventory: Path, fleet: Fleet) -> list[str]:
    """The error lines `spec validate` would print for this loaded fleet (warnings left out)."""
    problems = _population_problems(inventory, fleet) + _rack_problems(inventory, fleet)
    return [p["line"] for p in problems if p["severity"] == Severity.ERROR]


def _scalar(value: object) -> str:
    """A leaf as it is written in YAML: null, true/false, numbers and strings as they are, {} and []."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return "{}" if isinstance(value, dict) else "[]"
    return str(value)


def _pair(key: str, value: object) -> Text:
    return Text.assemble((key, "cyan"), ": ", _scalar(value))


def _is_leaf_list(value: object) -> bool:
    return isinstance(value, list) and all(not isinstance(v, dict | list) for v in value)


def _population_problems(inventory: Path, fleet: Fleet) -> list[dict[str, str]]:
    """One entry per finding: the file, the profile variable and key, why, and the hosts it concerns."""
    out: list[dict[str, str]] = []
    for profile, spec in sorted(fleet.profiles.items()):
        hosts = sorted(h.name for h in fleet.hosts.values() if h.profile == profile)
        users = f"hosts {', '.join(hosts)}" if hosts else "no host uses it"
        where = profile_file(inventory, profile)
        unused = [Finding(Severity.WARNING, pin, "pinned, but the profile has no hardware that uses it (not installed)")
                  for pin in spec.unused_pins()]
        for finding in _profile_findings(spec) + unused:
            key = f"{PROFILE_PREFIX}{profile}.{finding.key}"
            out.append({"severity": finding.severity, "file": where, "key": key, "message": finding.message,
                        "hosts": users, "line": f"{where}: {key}: {finding.message} ({users})"})
    return out



def _profile_findings(spec: NodeSpec) -> list[Finding]:
    """Memory population, PSUs, the parts table and the power budget; a part the tables do not know is warned of
    once per key."""
    found: list[Finding] = []
    for finding in check_profile(spec) + check_power(spec) + part_findings(spec) + budget_findings(spec):
        if finding.severity is Severity.WARNING and any(f.severity is Severity.WARNING and f.key == finding.key
                                                         for f in found):
            continue
        found.append(finding)
    return found


def _rack_problems(inventory: Path, fleet: Fleet) -> list[dict[str, str]]:
    """One error per rack whose nodes' peak draw, summed, is above its power budget."""
    from provision.spec.ansible_inventory import var_file
    from provision.spec.host_settings import RACKS_VAR
    from provision.spec.racks import rack_loads

    out: list[dict[str, str]] = []
    for load in (r for r in rack_loads(fleet) if r.over):
        where, key = var_file(inventory, RACKS_VAR), f"{RACKS_VAR}.{load.rack}.power_budget_w"
        message = (f"rack {load.rack}: {len(load.hosts)} node(s) peak at {load.peak_w} W together, over its budget "
                   f"of {load.budget_w} W")
        users = f"hosts {', '.join(load.hosts)}"
        out.append({"severity": Severity.ERROR, "file": where, "key": key, "message": message, "hosts": users,
                    "line": f"{where}: {key}: {message} ({users})"})
    return out


def _add(node: Tree, value: object) -> None:
    """Dicts as branches; a list of scalars on one line (`isa_flags: avx512f, amx_tile`); a list of mappings
    as one branch per item, named by its `name`/`component`/`id` when it has one."""
    if isinstance(value, dict):
        for key, sub in value.items():
            if _is_leaf_list(sub) and sub:
                node.add(Text.assemble((key, "cyan"), ": ", ", ".join(_scalar(v) for v in sub)))
            elif isinstance(sub, dict | list) and sub:
                _add(node.add(Text(key, style="cyan")), sub)
            else:
                node.add(_pair(key, sub))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, dict | list) and item:
                _add(node.add(Text(_item_label(i, item))), item)
            else:
                node.add(Text(f"[{i}] {_scalar(item)}"))


def _item_label(index: int, item: object) -> str:
    if isinstance(item, dict):
        for key in ("name", "component", "id"):
            if isinstance(item.get(key), str):
                return f"[{index}] {item[key]}"
    return f"[{index}]"


def _flatten(value: object, prefix: str = "") -> list[tuple[str, object]]:
    """(dotted.path, leaf) pairs; list items as path[i]."""
    if isinstance(value, dict) and value:
        return [pair for key, sub in value.items() for pair in _flatten(sub, f"{prefix}.{key}" if prefix else key)]
    if isinstance(value, list) and value:
        return [pair for i, sub in enumerate(value) for pair in _flatten(sub, f"{prefix}[{i}]")]
    return [(prefix, value)]
