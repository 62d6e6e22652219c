"""Typed rows read back from the journal (timestamps are UTC epoch seconds)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @property
    def duration_s(self) -> float | None:
        started: float | None = getattr(self, "started_at", None)
        ended: float | None = getattr(self, "ended_at", None)
        if started is None or ended is None:
            return None
        return round(ended - started, 3)


class RunRecord(_Row):
    """One invocation of bring-up or a campaign."""

    id: int
    kind: str
    target: str
    args: dict[str, Any]
    pid: int | None
    started_at: float
    ended_at: float | None
    outcome: str | None


class StageRecord(_Row):
    """One stage of one node within a run (e.g. firmware, bios, configure)."""

    id: int
    run_id: int
    node: str
    stage: str
    started_at: float
    ended_at: float | None
    outcome: str | None
    detail: str


class ActionRecord(_Row):
    """One side effect (e.g. a firmware flash): recorded as started before it is attempted."""

    id: int
    run_id: int
    node: str
    stage: str
    action: str
    target: str
    started_at: float
    ended_at: float | None
    outcome: str | None
    detail: str

    @property
    def open(self) -> bool:
        """Started but never finished: the process died while it was under way."""
        return self.ended_at is None
