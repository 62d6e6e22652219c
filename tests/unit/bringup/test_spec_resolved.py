"""The spec is resolved once: the loader makes every firmware image absolute against the inventory's
directory, with one rule for `-i inventory/` and `-i inventory/hosts.yml`; nothing below reloads it."""

from __future__ import annotations

import os
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import pytest

from provision.redfish.connector import ConnectorOptions
from provision.redfish.ops import session
from provision.spec import load_fleet


def _images(inventory: Path) -> dict[str, dict[str, str]]:
    fleet = load_fleet(inventory)
    return {name: {c.component: c.image for c in host.spec.firmware} for name, host in fleet.hosts.items()}


def test_a_file_and_its_directory_give_the_same_absolute_images(inventory_copy: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(inventory_copy.parent.parent)  # relative -i, as an operator types it
    by_file, by_dir = _images(Path("inventory/hosts.yml")), _images(Path("inventory"))
    assert by_file == by_dir and by_file
    for images in by_file.values():
        for image in images.values():
            if "://" in image:
                continue
            assert os.path.isabs(image) and Path(image).is_file(), image
            assert Path(image).is_relative_to(inventory_copy.parent.parent.resolve())


def test_images_stay_right_when_the_working_directory_changes(inventory_copy: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(inventory_copy.parent.parent)
    images = _images(Path("inventory"))
    monkeypatch.chdir(tmp_path.parent)
    assert all(Path(i).is_file() for per in images.values() for i in per.values() if "://" not in i)


def test_open_node_takes_the_loaded_host_and_never_loads_the_fleet(monkeypatch: pytest.MonkeyPatch,
                                                                  inventory_copy: Path) -> None:
    monkeypatch.setenv("PROVISION_BMC_USERNAME", "admin")
    monkeypatch.setenv("PROVISION_BMC_PASSWORD", "s3cret-Pa55")
    host = load_fleet(inventory_copy).select(["node01"])[0]
    loads: list[object] = []
    monkeypatch.setattr("provision.spec.loader.load_fleet", lambda *a: loads.append(a))
    monkeypatch.setattr("provision.spec.load_fleet", lambda *a: loads.append(a))

    seen: list[str] = []
    monkeypatch.setattr(session, "Connector", lambda opts: _Conn(seen, opts))
    monkeypatch.setattr(session, "node_facts", lambda conn: session.Node(conn, *[None] * 4))  # type: ignore[arg-type]
    with session.open_node(session.options_for(host.name, host.bmc), whole_command=True) as facts:
        assert isinstance(facts.conn, _Conn)
    assert seen == ["node01"] and loads == []


class _Conn:
    """A connector that logs in to nothing (open_node opens, bounds and closes it)."""

    def __init__(self, seen: list[str], opts: ConnectorOptions) -> None:
        seen.append(opts.name)

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def deadline(self) -> AbstractContextManager[object]:
        return nullcontext()

    def hold_deadline(self) -> None:
        pass
