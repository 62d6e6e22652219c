"""Options shared by every command group."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from provision.errors import ChecksIncomplete, InputError, InventoryError, RedfishError
from provision.journal.location import Location, resolve
from provision.spec import HostEntry, load_fleet
from provision.spec.journal_url import journal_url
from provision.spec.patterns import HostPatterns
from provision.spec.platforms import PlatformIdentity

if TYPE_CHECKING:  # not imported at run time: `verify` needs neither Ansible's models nor the Redfish stack to start
    from provision.ansible.models import Strategy


@contextmanager
def reading() -> Iterator[None]:
    """A read-only plan's reads of a node's BMC: one that could not be made (no credentials given, no answer,
    credentials or TLS refused, an unreadable answer) is ChecksIncomplete (exit 3, as verify), never a plan."""
    try:
        yield
    except RedfishError as exc:
        raise ChecksIncomplete(str(exc)) from None  # the same one line (node, URI, why), exit 3
    except InventoryError as exc:
        from provision.redfish.ops.session import CredentialsMissing  # loaded already when it was raised

        if not isinstance(exc, CredentialsMissing):
            raise
        raise ChecksIncomplete(str(exc)) from None


DEFAULT_INVENTORY = Path(os.environ.get("PROVISION_INVENTORY", "inventory/hosts.yml"))

InventoryOpt = Annotated[
    Path,
    typer.Option(
        "--inventory",
        "-i",
        help="Ansible inventory (file, directory or plugin config). Env: PROVISION_INVENTORY.",
        envvar="PROVISION_INVENTORY",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON (same as --output json).")]
StrategyOpt = Annotated[str, typer.Option(
    "--strategy", help="Ansible's strategy: linear (Ansible's own) or mitogen (needs the fast extra; one Python per "
                       "host for the whole play, several times faster on a slow node).")]
PATTERN_HELP = ("Host pattern(s), Ansible's: names, groups, globs, ~regex, node0[1:4], gpu[0:3], '!node03', "
                "'&gpu', comma lists; Slurm ranges node[01-08] too")
NodesArg = Annotated[list[str], typer.Argument(help=PATTERN_HELP, metavar="PATTERN...")]
NodeArg = Annotated[str, typer.Argument(help="A host pattern that selects one node (e.g. its name)", metavar="NODE")]
LimitOpt = Annotated[str | None, typer.Option(
    "--limit", "-l", metavar="PATTERN",
    help="Only the hosts that also match this pattern (as ansible-playbook --limit; @FILE: names from FILE)")]
InsecureOpt = Annotated[
    bool, typer.Option("--insecure", help="Do NOT verify BMC TLS certificates (prints a warning).")
]


def journal_at(journal: Path | None, inventory: Path) -> Location:
    """The journal a command opens, the one place its order is applied: --journal (a SQLite file) >
    PROVISION_JOURNAL_URL > the inventory's `provision_journal_url` (group_vars/all) > the default SQLite file."""
    return resolve(journal, lambda: journal_url(inventory))


def load_hosts(inventory: Path, patterns: list[str] | None, limit: str | None = None) -> list[HostEntry]:
    """The inventory loaded once, here at the CLI, and the hosts the patterns (default: all) and --limit select."""
    return load_fleet(inventory).select(patterns or None, limit)


def load_host(inventory: Path, pattern: str) -> HostEntry:
    """The one host `pattern` selects (a pattern that selects several is refused: the command takes one)."""
    hosts = load_fleet(inventory).select([pattern])
    one_host(str(inventory), pattern, [h.name for h in hosts])
    return hosts[0]


def one_host(where: str, pattern: str, names: list[str]) -> str:
    """The single name selected; InputError naming the pattern and the hosts when it is not one."""
    if len(names) != 1:
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        raise InputError(f"{where}: host pattern {pattern!r} selects {len(names)} hosts ({shown}); "
                         "this command takes one node")
    return names[0]


def select_names(inventory: Path, patterns: list[str], known: list[str], limit: str | None = None) -> list[str]:
    """Names the patterns select among the inventory's hosts (when the inventory exists) and `known` ones
    (e.g. the journal's nodes, in no group): for commands that read the journal, not the inventory."""
    if inventory.exists():
        resolver = HostPatterns.from_inventory(inventory, extra=known)
    else:
        resolver = HostPatterns.from_groups({n: () for n in known}, f"the journal's nodes (no inventory {inventory})")
    return resolver.select(patterns, limit)


def strategy_of(value: str) -> Strategy:
    """--strategy's value as a Strategy; InputError naming it when it is neither."""
    if value == "linear":
        return "linear"
    if value == "mitogen":
        return "mitogen"
    raise InputError(f"--strategy: {value!r} is not one of linear, mitogen")


def keep_identity(where: Location, node: str, ident: PlatformIdentity | None, source: str) -> str:
    """Keep the reading in the journal where one exists (bring-up creates it); else say it was not kept."""
    from provision.journal.identities import record_identity
    from provision.journal.location import recorded
    from provision.journal.store import Journal

    if ident is None:
        return ""
    if not recorded(where):
        return f"identity not kept: no journal at {where.shown} (bring-up creates it)"
    with Journal(where) as journal:
        record_identity(journal, node, ident, source)
    return ""
