"""The command line imports only the subcommand it runs (every one for the root's help and completion)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from provision.cli import SUBCOMMANDS, _named_command
from tests.conftest import EXAMPLE_INVENTORY


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["spec", "validate", "x.yml"], {"spec"}),
        (["-v", "bringup", "node01"], {"bringup"}),
        (["--log-file", "spec", "verify", "node01"], {"verify"}),  # "spec" is --log-file's value here
        (["--log-file=/tmp/l", "-q", "power", "node01"], {"power"}),
        (["--help"], None),
        ([], None),
        (["nosuch", "x"], None),  # the usage error lists every command
        (["-q"], None),
    ],
)
def test_the_named_subcommand_is_the_first_word_that_is_no_option(argv: list[str], named: set[str] | None) -> None:
    assert _named_command(argv) == named


def test_a_completion_request_registers_every_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_PROVISION_COMPLETE", "complete_bash")
    assert _named_command(["spec"]) is None


def _fresh_python(code: str) -> str:
    """What `code` prints in a new interpreter (its stderr after, for the assertion's message)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    return out.stdout + out.stderr


def test_spec_validate_imports_neither_bringup_nor_the_lab_and_still_validates() -> None:
    code = (
        "import sys\n"
        "from provision.cli import main\n"
        f"rc = main(['spec', 'validate', '-i', {str(EXAMPLE_INVENTORY / 'hosts.yml')!r}])\n"
        "loaded = [m for m in ('provision.bringup.stages', 'provision.lab.manager', 'provision.campaign.engine')"
        " if m in sys.modules]\n"
        "print('RC', rc, 'LOADED', loaded)\n"
    )
    assert "RC 0 LOADED []" in _fresh_python(code)


def test_every_subcommand_is_listed_once() -> None:
    names = [name for name, _ in SUBCOMMANDS]
    assert len(names) == len(set(names))


def test_verify_starts_without_the_redfish_stack_or_ansible_models() -> None:
    code = (
        "import sys\n"
        "import provision.cli.verify\n"
        "print('LOADED', [m for m in ('provision.redfish.connector', 'provision.redfish.ops.session',"
        " 'provision.ansible.models') if m in sys.modules])\n"
    )
    assert "LOADED []" in _fresh_python(code)


def test_a_read_without_bmc_credentials_is_incomplete_and_other_inventory_errors_pass_through() -> None:
    from provision.cli.options import reading
    from provision.errors import ChecksIncomplete, InventoryError, RedfishError
    from provision.redfish.ops.session import CredentialsMissing

    for raised in (CredentialsMissing("node01: no BMC credentials"), RedfishError("node01: 401 at /redfish/v1")):
        with pytest.raises(ChecksIncomplete, match="node01"), reading():
            raise raised
    with pytest.raises(InventoryError, match="ansible_host") as caught, reading():
        raise InventoryError("node01: no ansible_host")
    assert not isinstance(caught.value, ChecksIncomplete)
