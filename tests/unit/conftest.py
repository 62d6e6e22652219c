"""The fast tier never reads or writes the operator's own journal: each test gets an empty state directory
(a test that wants another sets PROVISION_STATE_DIR itself)."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.fakeclock import FakeClock


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("PROVISION_STATE_DIR", str(state))
    for name in ("PROVISION_JOURNAL_URL", "PROVISION_JOURNAL_PASSWORD", "PROVISION_JOURNAL_PASSWORD_FILE"):
        monkeypatch.delenv(name, raising=False)  # nor a PostgreSQL journal named in the environment
    return state


@pytest.fixture(scope="session")
def lab_ca(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The lab's CA and a server certificate it signed for 127.0.0.1: (ca.pem, server cert, server key)."""
    from provision.lab.ca import make_ca_and_server

    return make_ca_and_server(tmp_path_factory.mktemp("labca"))


@pytest.fixture
def tls_bmc(lab_ca: tuple[Path, Path, Path]) -> Iterator[Any]:
    """The loopback HTTPS BMC of tests/unit/tls_bmc.py (a Served), stopped after the test."""
    from tests.unit.tls_bmc import serve

    with serve(lab_ca) as srv:
        yield srv


@pytest.fixture
def clock() -> FakeClock:
    """A clock that moves only when the test moves it (tests/unit/fakeclock.py), for lease TTLs and fencing."""
    return FakeClock()
