"""The storage section of the spec: boot drives, ZFS scratch with its schedules, JBODs and NVMe health."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, field_validator, model_validator

from provision.spec.frozen import Frozen, NonNegativeInt, PositiveFloat, PositiveInt

if TYPE_CHECKING:
    from provision.spec.model import NodeSpec

class BootRaid(Frozen):
    level: Literal["raid1"]
    device: str = Field(pattern=r"^/dev/md[0-9a-z_]+$")
    mountpoint: str = Field(pattern=r"^/")


class BootStorage(Frozen):
    """The OS drive pair."""

    count: PositiveInt
    size_tb: PositiveFloat
    interface: Literal["nvme", "sata", "sas"]
    form: str
    raid: BootRaid | None = None
    """Absent: the boot drive(s) carry no md array (a catalogue server installed on one of its drives)."""

    @model_validator(mode="after")
    def _raid1_needs_two(self) -> BootStorage:
        if self.raid is not None and self.raid.level == "raid1" and self.count != 2:
            raise ValueError(f"raid1 boot needs exactly 2 drives, count is {self.count}")
        return self


_CAL_WORD = r"[0-9*][0-9*,./~]*"
_CAL_DOW = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)(?:(?:,|\.\.)(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun))*"
_ON_CALENDAR_RE = re.compile(
    rf"^(?:{_CAL_DOW}\s+)?(?:{_CAL_WORD}-{_CAL_WORD}-{_CAL_WORD}\s+)?{_CAL_WORD}:{_CAL_WORD}(?::{_CAL_WORD})?$"
)
# systemd.time(7) shorthands and the longest gap between two of their runs (days).
CALENDAR_SHORTHANDS: dict[str, float] = {
    "hourly": 1 / 24, "daily": 1, "weekly": 7, "monthly": 31, "quarterly": 92, "semiannually": 184,
    "yearly": 366, "annually": 366,
}
SNAPSHOT_INTERVALS_H: dict[str, int] = {"hourly": 1, "daily": 24, "weekly": 24 * 7, "monthly": 24 * 31}
"""The longest gap between two snapshots of each sanoid period (hours; a month is at most 31 days)."""
_DATASET_RE = re.compile(r"^[A-Za-z0-9_.:\-]+(?:/[A-Za-z0-9_.:\-]+)*$")
_EMAIL_RE = re.compile(r"^[^@\s,;'\"]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}$")


class SnapshotSchedule(Frozen):
    """Snapshots of the scratch pool (sanoid's template): how many of each period to keep.

    The scratch stripe has no redundancy (seed 5.4): snapshots protect checkpoints from deletion and
    overwrite, not from a lost drive."""

    hourly: NonNegativeInt = 24
    daily: NonNegativeInt = 7
    weekly: NonNegativeInt = 4
    monthly: NonNegativeInt = 0
    datasets: tuple[str, ...] = Field(default=(), description="Datasets under the pool to snapshot, relative "
                                      "to it (e.g. checkpoints); none: the pool's root dataset")
    recursive: bool = Field(default=True, description="Snapshot the child datasets as well")
    grace_minutes: Annotated[int, Field(ge=0, le=1440)] = Field(
        default=30, description="How late past its period the newest snapshot may be before verify fails")

    @field_validator("datasets")
    @classmethod
    def _datasets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not _DATASET_RE.match(name):
                raise ValueError(f"{name!r} is not a dataset name relative to the pool (e.g. checkpoints/run1)")
        if len(set(value)) != len(value):
            raise ValueError(f"datasets listed twice: {sorted({d for d in value if value.count(d) > 1})}")
        return value

    @model_validator(mode="after")
    def _something_kept(self) -> SnapshotSchedule:
        if not any(self.retention.values()):
            raise ValueError("hourly, daily, weekly and monthly are all 0: nothing would be snapshotted "
                             "(leave snapshots out instead)")
        return self

    @property
    def retention(self) -> dict[str, int]:
        """Snapshots kept per period (periods with 0 are not taken)."""
        return {"hourly": self.hourly, "daily": self.daily, "weekly": self.weekly, "monthly": self.monthly}


class ScrubSchedule(Frozen):
    """When the scratch pool is scrubbed (a systemd OnCalendar expression) and how old a scrub may get."""

    on_calendar: str = Field(default="monthly", description="systemd.time(7) calendar event, e.g. monthly or "
                             "'Sun *-*-01..07 03:00:00'")
    max_age_days: PositiveFloat | None = Field(
        default=None, description="Oldest acceptable last scrub; default: the shorthand's period + grace_days "
        "(required for a full calendar expression)")
    grace_days: Annotated[float, Field(ge=0)] = 2.0

    @field_validator("on_calendar")
    @classmethod
    def _calendar(cls, value: str) -> str:
        if value in CALENDAR_SHORTHANDS or _ON_CALENDAR_RE.match(value):
            return value
        raise ValueError(f"{value!r} is not a systemd OnCalendar expression (a shorthand such as "
                         f"{', '.join(CALENDAR_SHORTHANDS)}, or '[DOW] YYYY-MM-DD HH:MM[:SS]' with * , .. /)")

    @model_validator(mode="after")
    def _age_known(self) -> ScrubSchedule:
        if self.on_calendar not in CALENDAR_SHORTHANDS and self.max_age_days is None:
            raise ValueError(f"on_calendar {self.on_calendar!r} is not a shorthand: set max_age_days")
        return self

    @property
    def allowed_age_days(self) -> float:
        """How old the last finished scrub may be before verify fails."""
        if self.max_age_days is not None:
            return self.max_age_days
        return CALENDAR_SHORTHANDS[self.on_calendar] + self.grace_days


class ZedSettings(Frozen):
    """The ZFS Event Daemon: who hears of a faulted drive, a failed scrub or checksum errors."""

    email: str | None = Field(default=None, description="ZED_EMAIL_ADDR")
    hook: str | None = Field(default=None, pattern=r"^/[^\s'\"]+$",
                             description="An executable on the node run for every event (ZEVENT_* environment)")
    notify_verbose: bool = Field(default=False, description="ZED_NOTIFY_VERBOSE: also notify healthy scrubs")
    notify_interval_s: PositiveInt = Field(default=3600, description="ZED_NOTIFY_INTERVAL_SECS")
    notify_data: bool = Field(default=True, description="ZED_NOTIFY_DATA: notify data (checksum) errors")

    @field_validator("email")
    @classmethod
    def _email(cls, value: str | None) -> str | None:
        if value is not None and not _EMAIL_RE.match(value):
            raise ValueError(f"{value!r} is not an e-mail address")
        return value

    @model_validator(mode="after")
    def _someone_hears(self) -> ZedSettings:
        if self.email is None and self.hook is None:
            raise ValueError("zed needs an email or a hook: events would reach no one")
        return self


class ZfsLayout(Frozen):
    """ZFS pool over the scratch drives."""

    pool: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_.\-]*$")
    layout: Literal["stripe", "mirror", "raidz1", "raidz2"]
    vdevs: PositiveInt
    mountpoint: str = Field(pattern=r"^/")
    ashift: Annotated[int, Field(ge=9, le=16)]
    recordsize: str = Field(pattern=r"^[0-9]+[KM]$")
    compression: Literal["off", "lz4", "zstd", "gzip"]
    atime: Literal["on", "off"]
    snapshots: SnapshotSchedule | None = Field(default=None, description="Snapshot schedule (sanoid)")
    scrub: ScrubSchedule | None = Field(default=None, description="Scrub timer; absent: no scrub is scheduled")
    zed: ZedSettings | None = Field(default=None, description="ZFS Event Daemon notifications")

    def dataset_names(self) -> tuple[str, ...]:
        """Full names of the datasets the snapshot schedule covers (the pool itself when it names none)."""
        if self.snapshots is None:
            return ()
        return tuple(f"{self.pool}/{d}" for d in self.snapshots.datasets) or (self.pool,)


class ScratchStorage(Frozen):
    """The high-speed scratch set."""

    count: PositiveInt
    size_tb: PositiveFloat
    interface: Literal["nvme", "sata", "sas"]
    pcie_generation: PositiveInt
    zfs: ZfsLayout

    @model_validator(mode="after")
    def _layout_matches_drives(self) -> ScratchStorage:
        z = self.zfs
        if z.layout == "stripe" and z.vdevs != self.count:
            raise ValueError(f"zfs stripe has {z.vdevs} vdevs but the scratch set has {self.count} drives")
        if z.layout != "stripe" and self.count % z.vdevs:
            raise ValueError(f"{self.count} drives cannot be split into {z.vdevs} {z.layout} vdevs")
        return self


def scratch_zfs(spec: NodeSpec) -> ZfsLayout | None:
    """The scratch pool's ZFS layout, or None when the spec has no scratch set: the one place the checkpoint
    role vars, checks and CLI read `storage.scratch` (a profile without one skips them all)."""
    scratch: ScratchStorage | None = spec.storage.scratch
    return None if scratch is None else scratch.zfs


class Jbod(Frozen):
    enabled: bool
    count: NonNegativeInt
    size_tb: PositiveFloat
    interface: Literal["sas", "sata"]


class NvmeHealth(Frozen):
    max_percentage_used: Annotated[int, Field(ge=0, le=100)]
    max_media_errors: NonNegativeInt
    warn_percentage_used: Annotated[int | None, Field(ge=0, le=100)] = None
    """Optional warning tier for wear: above it a drive warns (never fails the exit code)."""
    warn_available_spare_pct: Annotated[int | None, Field(ge=0, le=100)] = None
    """Optional warning tier: available spare below it warns; below the drive's own threshold fails."""
    warn_media_errors: NonNegativeInt | None = None
    """Optional warning tier for media errors: above it warns; above max_media_errors fails."""
    endurance_tbw: PositiveFloat | None = None
    """Rated endurance in terabytes written (10^12 bytes), every drive alike; when absent it is
    endurance_dwpd x the drive's own capacity x 365 x endurance_years."""
    endurance_dwpd: PositiveFloat = 1.0
    """Drive writes per day over endurance_years. The seed names no drive model or rating: 1 DWPD over 5
    years is the usual rating of read-intensive data-centre U.2 drives, a documented default, not the seed's."""
    endurance_years: PositiveInt = 5
    warn_endurance_used_pct: Annotated[int, Field(ge=0, le=1000)] = 80
    """Bytes written as a share of the rated endurance: above it warns."""
    max_endurance_used_pct: Annotated[int, Field(ge=0, le=1000)] = 100
    """Above it fails: the drive has written more than it is rated for."""
    warn_endurance_days: NonNegativeInt = 365
    """Projected to reach its rated endurance within this many days (from the write rate between two
    verify runs kept in the journal): warns."""
    max_endurance_days: NonNegativeInt = 30
    """Projected within this many days (or already past it): fails."""

    @model_validator(mode="after")
    def _tiers(self) -> NvmeHealth:
        pairs = (("warn_percentage_used", self.warn_percentage_used, "max_percentage_used", self.max_percentage_used),
                 ("warn_media_errors", self.warn_media_errors, "max_media_errors", self.max_media_errors),
                 ("warn_endurance_used_pct", self.warn_endurance_used_pct, "max_endurance_used_pct",
                  self.max_endurance_used_pct))
        for warn_key, warn, max_key, top in pairs:
            if warn is not None and warn > top:
                raise ValueError(f"{warn_key} {warn} is above {max_key} {top}")
        if self.warn_endurance_days < self.max_endurance_days:
            raise ValueError(f"warn_endurance_days {self.warn_endurance_days} is below max_endurance_days "
                             f"{self.max_endurance_days}")
        return self

    def rated_bytes(self, capacity_bytes: int | None) -> int | None:
        """The drive's rated endurance in bytes; None when it is given in DWPD and the capacity is unknown."""
        if self.endurance_tbw is not None:
            return int(self.endurance_tbw * 10**12)
        if capacity_bytes is None:
            return None
        return int(self.endurance_dwpd * capacity_bytes * 365 * self.endurance_years)


class Storage(Frozen):
    boot: BootStorage
    scratch: ScratchStorage | None = None
    """Absent: no scratch set (no ZFS pool, no scratch checks or burn-in gates)."""
    jbod: Jbod | None = None
    nvme_health: NvmeHealth
