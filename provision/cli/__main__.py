"""`python -m provision.cli ...` is the `provision` command."""

from provision.cli import run

run()
