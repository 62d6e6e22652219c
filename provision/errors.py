"""The one exception tree of the project: every failure is a ProvisionError."""

from __future__ import annotations


class ProvisionError(Exception):
    """Root of every error the toolkit raises on purpose."""

    exit_code = 1


class InputError(ProvisionError):
    """Bad input from the operator: inventory, spec, catalog, arguments (exit 2)."""

    exit_code = 2


class SpecError(InputError):
    """A node spec or inventory that does not validate."""


class NotApplicable(InputError):
    """A profile or a firmware image refused on a node whose platform it does not describe (exit 2)."""


class InventoryError(InputError):
    """An inventory that cannot be read or names hosts wrongly."""


class CheckFailed(ProvisionError):
    """A conformance check failed or drift was found (exit 1)."""


class ChecksIncomplete(ProvisionError):
    """No check failed but some could not be made: unreachable, auth, TLS, unreadable, tool missing (exit 3)."""

    exit_code = 3


class ParseError(ProvisionError):
    """A tool's output could not be parsed; names the tool."""

    def __init__(self, tool: str, reason: str) -> None:
        super().__init__(f"cannot parse {tool} output: {reason}")
        self.tool = tool
        self.reason = reason


class LabError(ProvisionError):
    """The built-in lab could not be started, queried or stopped."""


class RedfishError(ProvisionError):
    """A BMC answered wrongly, not at all, or refused an operation."""


class AnsibleRunError(ProvisionError):
    """An Ansible run failed."""


class UnsafePathError(InputError):
    """A private directory or file that another user owns or can write (refused, never used)."""
