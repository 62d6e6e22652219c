"""<lab>/twins/state.json: what `up` created, read back by down/status/power (from any process)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from provision.errors import LabError
from provision.lab.twins.models import TwinRecord, TwinsState


def twins_dir(lab_dir: Path) -> Path:
    return lab_dir / "twins"


def _file(lab_dir: Path) -> Path:
    return twins_dir(lab_dir) / "state.json"


@contextmanager
def locked(lab_dir: Path, create: bool = False) -> Iterator[None]:
    """Serialise changes to one lab's twins (up, down, power may come from different processes)."""
    if create:
        twins_dir(lab_dir).mkdir(parents=True, exist_ok=True)
    elif not twins_dir(lab_dir).is_dir():
        raise LabError(f"{lab_dir}: no twins are up")
    with open(twins_dir(lab_dir) / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def load(lab_dir: Path) -> TwinsState | None:
    path = _file(lab_dir)
    if not path.exists():
        return None
    try:
        return TwinsState.model_validate_json(path.read_text())
    except (ValidationError, ValueError) as exc:
        raise LabError(f"{path}: unreadable twins state ({exc.__class__.__name__}); remove the lab dir") from exc


def save(lab_dir: Path, state: TwinsState) -> None:
    path = _file(lab_dir)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(state.model_dump_json(indent=2))
    os.replace(tmp, path)


def find(state: TwinsState | None, lab_dir: Path, node: str) -> TwinRecord:
    for twin in state.twins if state else []:
        if twin.name == node:
            return twin
    raise LabError(f"{lab_dir}: no twin named {node!r}")
