"""Campaign policy models: waves, halting, health gate, maintenance window, hooks."""

from __future__ import annotations

import math
import re
from datetime import time as dtime
from typing import Annotated
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_COUNT_RE = re.compile(r"^([0-9]+(?:\.[0-9]+)?)%$")
DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)


def _count(value: object) -> int | str:
    """A node count: a non-negative integer or a percentage string such as '5%'."""
    if isinstance(value, bool):
        raise ValueError("expected a number of nodes or a percentage like '10%'")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("must not be negative")
        return value
    if isinstance(value, str):
        match = _COUNT_RE.match(value.strip())
        if match and 0 <= float(match.group(1)) <= 100:
            return value.strip()
        if value.strip().isdigit():
            return int(value.strip())
    raise ValueError(f"expected a number of nodes or a percentage like '10%' (got {value!r})")


class WavePolicy(_Frozen):
    """A canary wave, then batches of a fixed size or bounded by the nodes unavailable at once.

    `max_unavailable` is one budget (`budget`): the size of each later wave, and the most nodes a campaign has
    unavailable at once as nodes are claimed (in flight, or failed since the latest start/resume: a failed node
    may be left drained or half-flashed), whichever wave they are in."""

    canary: int | str = 1
    batch_size: int | None = Field(default=None, gt=0)
    max_unavailable: int | str | None = None

    @field_validator("canary", "max_unavailable", mode="before")
    @classmethod
    def _counts(cls, value: object) -> int | str | None:
        return None if value is None else _count(value)

    @model_validator(mode="after")
    def _one_batching(self) -> WavePolicy:
        if self.batch_size is not None and self.max_unavailable is not None:
            raise ValueError("give batch_size or max_unavailable, not both")
        if self.max_unavailable in (0, "0%"):
            raise ValueError("max_unavailable must allow at least one node")
        return self

    def budget(self, total: int) -> int | None:
        """Nodes of a campaign of `total` that may be unavailable at once: max_unavailable (a percentage rounds
        down, at least 1); None when it is not given (batch_size, or one wave, bounds the nodes in flight)."""
        if self.max_unavailable is None:
            return None
        if isinstance(self.max_unavailable, int):
            return max(1, self.max_unavailable)
        share = float(self.max_unavailable.rstrip("%")) * total / 100
        return max(1, math.floor(share + 1e-9))


class HaltPolicy(_Frozen):
    """When to stop taking new nodes. Counted over the nodes whose turn ended since the campaign's latest
    start/resume, by any controller (provision.journal.campaigns.CampaignStore.since_start); a `join` does
    not restart the count. The engine decides with the two methods below."""

    max_failures: Annotated[int, Field(ge=0)] = 0
    max_fail_percentage: Annotated[float, Field(ge=0, le=100)] | None = None

    def failures_reason(self, failed: int, last: str) -> str | None:
        """Why to halt at once (`failed` nodes failed since start/resume, the latest `last`), or None."""
        if failed > self.max_failures:
            return f"{failed} node(s) failed (max_failures {self.max_failures}); last: {last}"
        return None

    def share_reason(self, wave: int, failed: int, finished: int) -> str | None:
        """Why to halt after wave `wave` ended (its turns over, before its gate), or None."""
        limit = self.max_fail_percentage
        if limit is None or not finished or 100 * failed / finished <= limit:
            return None
        return f"wave {wave}: {failed} of {finished} node(s) failed ({100 * failed / finished:.1f}% > {limit:g}%)"


class GatePolicy(_Frozen):
    """The health gate run on every node of a wave before the next wave starts."""

    redfish_health: bool = True
    conformance: bool = True
    full_verify: str | None = Field(
        default=None, description="Command run per node, {node} substituted; non-zero exit fails the gate"
    )
    timeout_s: Annotated[float, Field(gt=0)] = 600


class Window(_Frozen):
    """Maintenance window: no new wave starts outside it (a wave in flight finishes)."""

    timezone: str = "UTC"
    days: tuple[str, ...] = DAYS
    start: dtime
    end: dtime

    @field_validator("timezone")
    @classmethod
    def _tz(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {value!r}") from None
        return value

    @field_validator("days", mode="before")
    @classmethod
    def _days(cls, value: object) -> tuple[str, ...]:
        if not isinstance(value, list | tuple) or not value:
            raise ValueError(f"expected a list of days out of {list(DAYS)}")
        days = tuple(str(d).strip().lower()[:3] for d in value)
        bad = [d for d in days if d not in DAYS]
        if bad:
            raise ValueError(f"unknown day(s) {bad}; use {list(DAYS)}")
        return days

    @model_validator(mode="after")
    def _not_empty(self) -> Window:
        if self.start == self.end:
            raise ValueError("start and end are equal: the window would be empty")
        return self


_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Variables a hook never gets, allow-listed or not: the BMC password and what unlocks the vault, plus any
# name that says it holds a secret.
_SECRET_ENV_RE = re.compile(r"(?i)(PASSWORD|PASSWD|SECRET|TOKEN|CREDENTIAL|PRIVATE_KEY|^PROVISION_BMC_|^ANSIBLE_VAULT)")


class Hooks(_Frozen):
    """Commands run before a node is taken (drain) and after it is back (undrain); {node} substituted.

    A hook runs with a minimal environment (provision.campaign.hooks.hook_env): PATH, LANG, HOME,
    PROVISION_NODE, PROVISION_CAMPAIGN and the variables named in `env_allow`, never a secret.
    """

    drain: str | None = None
    undrain: str | None = None
    timeout_s: Annotated[float, Field(gt=0)] = 300
    env_allow: tuple[str, ...] = ()

    @field_validator("env_allow")
    @classmethod
    def _env_allow(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not _ENV_NAME_RE.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
            if _SECRET_ENV_RE.search(name):
                raise ValueError(f"{name} looks like a secret; hooks never get secrets in their environment")
        return names


class Policy(_Frozen):
    """Everything that governs how a campaign proceeds."""

    waves: WavePolicy = WavePolicy()
    halt: HaltPolicy = HaltPolicy()
    gate: GatePolicy = GatePolicy()
    window: Window | None = None
    hooks: Hooks = Hooks()
    concurrency: Annotated[int, Field(gt=0, le=4096)] = 256
