"""`provision lab fault`: a twin fault that takes a part out of the server is shown by its BMC too."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from provision.lab import manager


@pytest.mark.parametrize(("kind", "bmc_posts"), [
    ("dimm_missing", [{"node": "node01", "kind": "dimm-missing", "clear": False, "value": None}]),
    ("nvme_worn", []),  # a fault inside the OS only: the BMC is not told
])
def test_twin_fault_routing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, kind: str,
                            bmc_posts: list[dict[str, Any]]) -> None:
    posted: list[dict[str, Any]] = []
    twin_calls: list[tuple[str, str, bool]] = []
    state = SimpleNamespace(pid=1, nodes=[SimpleNamespace(name="node01")], twins=True)
    monkeypatch.setattr(manager, "read_state", lambda _lab: state)
    monkeypatch.setattr(manager, "alive", lambda _pid: True)
    monkeypatch.setattr(manager, "control", lambda _s, _m, _p, body=None: posted.append(body or {}) or {})
    twins = SimpleNamespace(FAULT_KINDS=frozenset({"dimm_missing", "nvme_worn"}),
                            fault=lambda _lab, node, k, clear: twin_calls.append((node, k, clear)))
    monkeypatch.setattr(manager, "_twins_module", lambda: twins)
    manager.fault(tmp_path, "node01", kind, False, None)
    assert twin_calls == [("node01", kind, False)] and posted == bmc_posts
