"""The fast tier never reads or writes the operator's own journal: each test gets an empty state directory
(a test that wants another sets PROVISION_STATE_DIR itself)."""

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("PROVISION_STATE_DIR", str(state))
    for name in ("PROVISION_JOURNAL_URL", "PROVISION_JOURNAL_PASSWORD", "PROVISION_JOURNAL_PASSWORD_FILE"):
        monkeypatch.delenv(name, raising=False)  # nor a PostgreSQL journal named in the environment
    return state
