"""`provision completion bash|zsh|fish`: the shell completion script, from Typer/Click's own mechanism.

`eval "$(provision completion bash)"` in ~/.bashrc (or `provision --install-completion`, which writes it to the
current shell's startup file). The script calls `provision` back with `_PROVISION_COMPLETE=complete_<shell>`;
Click answers with the commands, options and choices at that point of the command line.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from typer._completion_shared import get_completion_script  # Typer's own scripts (no public name for them)

PROG = "provision"
COMPLETE_VAR = "_PROVISION_COMPLETE"


class Shell(StrEnum):
    BASH = "bash"
    ZSH = "zsh"
    FISH = "fish"


def script(shell: Shell) -> str:
    return get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell.value)


def completion_command(shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish")]) -> None:
    """Print the completion script for SHELL: `eval "$(provision completion bash)"` in ~/.bashrc."""
    typer.echo(script(shell))
