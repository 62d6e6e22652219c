"""The `provision` command line: thin, maps errors to exit codes, renders results.

Exit codes: 0 ok; 1 a check failed or drift found (or an operation failed);
2 bad input or usage; 3 (verify) no check failed but some could not be made.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from provision.cli import logs
from provision.cli.output import err_console, flags_take_no_value, quiet
from provision.errors import InputError, ProvisionError
from provision.redfish import transport_warnings

try:  # typer carries its own copy of click (typer._click) since 0.2x; older ones use click itself
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover
    from click import exceptions as click_errors  # type: ignore[no-redef]

flags_take_no_value()
app = typer.Typer(
    name="provision",
    help="Take bare GPU servers to verified, production-ready nodes, and keep a fleet there.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,  # --install-completion / --show-completion (bash, zsh, fish); `completion SHELL` too
)

# Each entry: (name, "module[:attribute]"). The attribute (default `app`) is a Typer group
# registered under `name`, or a plain function registered as the top-level command `name`.
# Groups register here so that the root stays the only place that knows them all.
SUBCOMMANDS: list[tuple[str, str]] = [
    ("campaign", "provision.cli.campaign"),
    ("spec", "provision.cli.spec"),
    ("inventory", "provision.cli.inventory"),
    ("lab", "provision.cli.lab"),
    ("exec", "provision.cli.remote:exec_command"),
    ("collect", "provision.cli.remote:collect_command"),
    ("bringup", "provision.cli.bringup:bringup_command"),
    ("clean", "provision.cli.clean:clean_command"),
    ("retire", "provision.cli.clean:retire_command"),
    ("unretire", "provision.cli.clean:unretire_command"),
    ("status", "provision.cli.journal_views:status_command"),
    ("history", "provision.cli.journal_views:history_command"),
    ("verify", "provision.cli.verify:verify_command"),
    ("checkpoints", "provision.cli.checkpoints:checkpoints_command"),
    ("configure", "provision.cli.configure"),
    ("bmc", "provision.cli.bmc"),
    ("bios", "provision.cli.bios"),
    ("firmware", "provision.cli.firmware"),
    ("power", "provision.cli.power:power_command"),
    ("netboot", "provision.cli.netboot"),
    ("sel", "provision.cli.sel:sel_command"),
    ("discover", "provision.cli.discover:discover_command"),
    ("enroll", "provision.cli.discover:enroll_command"),
    ("completion", "provision.cli.completion:completion_command"),
]


_registered: set[str] = set()


def register(names: set[str] | None = None) -> typer.Typer:
    """Register the subcommands `names` (all when None) on `app` and return it. A command's module is imported
    only when it is registered, so `provision spec validate` does not import bring-up, campaigns and the lab."""
    import importlib

    for name, target in SUBCOMMANDS:
        if name in _registered or (names is not None and name not in names):
            continue
        module, _, attr = target.partition(":")
        obj = getattr(importlib.import_module(module), attr or "app")
        if isinstance(obj, typer.Typer):
            app.add_typer(obj, name=name)
        else:  # a plain function registered as a top-level command
            app.command(name=name)(obj)
        _registered.add(name)
    return app


def _named_command(argv: list[str]) -> set[str] | None:
    """The subcommand argv runs, as a set of one; None (every subcommand) for the root's help, a completion
    request or a word that names no subcommand (so the usage error lists them all)."""
    if any(key.endswith("_COMPLETE") and key.startswith("_PROVISION") for key in os.environ):
        return None
    words = iter(argv)
    for word in words:
        if word == "--log-file":
            next(words, None)
        elif not word.startswith("-"):
            return {word} if any(word == name for name, _ in SUBCOMMANDS) else None
    return None


def _version(value: bool) -> None:
    if value:
        from provision import __version__

        typer.echo(f"provision {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True,
                                         help="More on stderr: -v info, -vv debug (secrets scrubbed)")] = 0,
    quiet_: Annotated[bool, typer.Option("--quiet", "-q",
                                         help="Only results and errors: no progress events or warnings")] = False,
    log_file: Annotated[Path | None, typer.Option(
        "--log-file", envvar="PROVISION_LOG_FILE",
        help="Append a debug log to this file (created 0600, secrets scrubbed). Env: PROVISION_LOG_FILE.")] = None,
    _show_version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                                help="Print provision's version and exit")] = False,
) -> None:
    """Take bare GPU servers to verified, production-ready nodes, and keep a fleet there."""
    if quiet_ and verbose:
        raise InputError("-q and -v exclude each other")
    quiet.on = quiet_
    logs.configure(-1 if quiet_ else verbose, log_file)
    transport_warnings.reset()  # a transport warning is said once per BMC per command


def main(argv: list[str] | None = None) -> int:
    """Entry point: run the app, turn ProvisionError into one line and an exit code.

    A usage error (an unknown option, a value not among the choices) prints as one line naming the
    command and the option, exit 2; everything the library raises on purpose is a ProvisionError and
    prints as one red line too. Nothing has run when a usage error is reported.
    """
    register(_named_command(sys.argv[1:] if argv is None else argv))
    try:
        code = app(args=argv, standalone_mode=False, prog_name="provision")
    except click_errors.NoArgsIsHelpError as exc:  # typer's help renders itself (rich) as it is built
        if exc.format_message().strip():
            typer.echo(exc.format_message())
        return 2
    except click_errors.ClickException as exc:
        err_console.print(f"[red]error:[/red] {escape(_usage_line(exc))}", highlight=False, soft_wrap=True)
        return exc.exit_code
    except typer.Abort:
        err_console.print("[red]aborted[/red]")
        return 1
    except ProvisionError as exc:
        err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
        return exc.exit_code
    except KeyboardInterrupt:
        err_console.print("[red]interrupted[/red]")
        return 130
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except Exception as exc:  # a bug of ours: one line, the traceback only on request
        if os.environ.get("PROVISION_DEBUG"):
            raise
        err_console.print(
            f"[red]internal error:[/red] {escape(type(exc).__name__)}: {escape(str(exc))} "
            "(set PROVISION_DEBUG=1 for a traceback)",
            highlight=False,
            soft_wrap=True,
        )
        return 1
    return code if isinstance(code, int) else 0


def _usage_line(exc: click_errors.ClickException) -> str:
    """`provision bringup: invalid value for '--level': 'fulll' is not one of ... (see --help)`, one line."""
    text = " ".join(exc.format_message().replace("Value error, ", "").split())
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return text
    return f"{ctx.command_path}: {text} (see {ctx.command_path} --help)"


def run() -> None:
    sys.exit(main())
