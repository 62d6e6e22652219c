"""NVMe end of life: Data Units Written, critical warning bits, media-error tiers, bytes written against the
rated endurance, and the endurance date projected from two readings kept in the journal.

The smart-log is nvme-cli 2.3's real JSON (tests/fixtures/nvme/qemu-vm, 128-bit counters as strings) with
the figures of one drive changed; the journal is a real SQLite file in tmp_path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from provision.conformance.checks.nvme import DAY_S, project_endurance, projected_days
from provision.conformance.model import Outcome
from provision.conformance.parsers.nvme import (
    DATA_UNIT_BYTES,
    critical_warning_names,
    parse_nvme_list,
    parse_nvme_smart_log,
)
from provision.conformance.parsers.smartctl import parse_smartctl_nvme
from provision.conformance.wear import keep_wear
from provision.journal.store import Journal
from provision.journal.wear import WearReading, readings
from tests.unit.conformance.helpers import area, fixture, run, spec

NVME_LIST = fixture("nvme/qemu-vm/nvme-list.json")
SMART = fixture("nvme/qemu-vm/nvme-smart-log.nvme0.json")
TB_UNITS = 10**12 // DATA_UNIT_BYTES  # 1,953,125 data units are one TB (10^12 bytes)
T0 = 1_796_000_000.0


def smart(**changes: Any) -> str:
    """The captured smart-log with nvme-cli 2.x's string counters where the real tool prints them."""
    log = json.loads(SMART)
    for key, value in changes.items():
        log[key] = str(value) if isinstance(log.get(key), str) else value
    return json.dumps(log)


def tb1(**changes: Any) -> Any:
    return spec(**{"storage.nvme_health.endurance_tbw": 1.0, **changes})


# ---- parsers -----------------------------------------------------------------------------------------------
def test_smart_log_data_units_written_from_the_capture_and_as_string_counter() -> None:
    assert parse_nvme_smart_log(SMART).data_units_written == 0
    log = parse_nvme_smart_log(smart(data_units_written=31_554_310))
    assert log.data_units_written == 31_554_310 and log.written_bytes == 31_554_310 * 512_000


def test_smart_log_without_data_units_written_is_none() -> None:
    data = json.loads(SMART)
    del data["data_units_written"]
    assert parse_nvme_smart_log(json.dumps(data)).written_bytes is None


def test_newer_nvme_cli_critical_warning_object() -> None:
    data = json.loads(SMART) | {"critical_warning": {"value": 4, "available_spare": 0, "temp_threshold": 0,
                                                     "reliability_degraded": 1, "ro": 0, "vmbu_failed": 0}}
    assert parse_nvme_smart_log(json.dumps(data)).critical_warning == 4


@pytest.mark.parametrize(
    ("value", "names"),
    [
        (0, []),
        (0x01, ["available spare below its threshold"]),
        (0x0C, ["NVM subsystem reliability degraded", "media placed in read-only mode"]),
        (0x22, ["temperature beyond a threshold", "persistent memory region read-only"]),
        (0x80, ["reserved bit 7"]),
    ],
)
def test_critical_warning_bits_named(value: int, names: list[str]) -> None:
    assert critical_warning_names(value) == names


def test_smartctl_health_log_gives_written_units_and_spare_threshold() -> None:
    qemu = parse_smartctl_nvme(fixture("nvme/qemu-vm/smartctl-a-j.nvme0.json"))
    assert (qemu.data_units_written, qemu.available_spare_threshold_pct) == (0, 0)
    dell = parse_smartctl_nvme(fixture("nvme/ironlib/smartctl-nvme0.dell-r6515.json"))
    assert dell.data_units_written is not None and dell.data_units_written > 0


# ---- tiers -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("units", "outcome", "found"),
    [
        (0, Outcome.PASS, "0%"),
        (int(TB_UNITS * 0.8), Outcome.PASS, "80%"),       # warn_endurance_used_pct 80 itself passes
        (int(TB_UNITS * 0.82), Outcome.WARN, "82%"),
        (TB_UNITS, Outcome.WARN, "100%"),                 # max_endurance_used_pct 100 allows the rating
        (int(TB_UNITS * 1.03), Outcome.FAIL, "103%"),
    ],
)
def test_bytes_written_against_rated_endurance(units: int, outcome: Outcome, found: str) -> None:
    nv = area(run(tb1(), {"nvme_list": NVME_LIST, "nvme_smart:/dev/nvme0n1": smart(data_units_written=units)}),
              "nvme")
    result = nv["nvme.nvme0n1.endurance"]
    assert (result.outcome, result.found) == (outcome, found)
    assert result.expected == "<= 100% (warn above 80%)" and "of 1 TBW rated" in result.detail


def test_dwpd_rating_uses_the_drives_own_capacity() -> None:
    s = spec(**{"storage.nvme_health.endurance_dwpd": 3.0, "storage.nvme_health.endurance_years": 5})
    size = parse_nvme_list(NVME_LIST)[0].physical_size
    assert size == 268_435_456
    assert s.storage.nvme_health.rated_bytes(size) == 3 * size * 365 * 5
    rated_units = 3 * size * 365 * 5 // DATA_UNIT_BYTES
    nv = area(run(s, {"nvme_list": NVME_LIST, "nvme_smart:/dev/nvme0n1": smart(data_units_written=rated_units * 2)}),
              "nvme")
    assert nv["nvme.nvme0n1.endurance"].outcome is Outcome.FAIL and "3 DWPD" in nv["nvme.nvme0n1.endurance"].detail


def test_endurance_in_dwpd_without_the_drive_in_nvme_list_is_an_error() -> None:
    nv = area(run(spec(), {"nvme_list": '{"Devices":[]}', "nvme_smart:/dev/nvme0n1": SMART}), "nvme")
    assert nv["nvme.nvme0n1.endurance"].outcome is Outcome.ERROR


@pytest.mark.parametrize(
    ("errors", "outcome"), [(0, Outcome.PASS), (2, Outcome.PASS), (3, Outcome.WARN), (10, Outcome.WARN),
                            (11, Outcome.FAIL)],
)
def test_media_error_tiers(errors: int, outcome: Outcome) -> None:
    s = spec(**{"storage.nvme_health.max_media_errors": 10, "storage.nvme_health.warn_media_errors": 2})
    nv = area(run(s, {"nvme_list": NVME_LIST, "nvme_smart:/dev/nvme0n1": smart(media_errors=errors)}), "nvme")
    assert nv["nvme.nvme0n1.media_errors"].outcome is outcome


@pytest.mark.parametrize(("value", "passed"), [(0, True), (0x01, False), (0x04, False), (0x08, False)])
def test_critical_warning_fails_on_any_bit(value: int, passed: bool) -> None:
    nv = area(run(spec(), {"nvme_list": NVME_LIST, "nvme_smart:/dev/nvme0n1": smart(critical_warning=value)}),
              "nvme")
    result = nv["nvme.nvme0n1.critical_warning"]
    assert result.passed is passed
    assert all(name in result.found for name in critical_warning_names(value))


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"max_media_errors": 1, "warn_media_errors": 2}, "warn_media_errors 2 is above max_media_errors 1"),
        ({"warn_endurance_used_pct": 120}, "warn_endurance_used_pct 120 is above max_endurance_used_pct 100"),
        ({"warn_endurance_days": 10}, "warn_endurance_days 10 is below max_endurance_days 30"),
    ],
)
def test_tiers_in_the_wrong_order_are_refused(changes: dict[str, int], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        spec(**{f"storage.nvme_health.{k}": v for k, v in changes.items()})


# ---- projection -------------------------------------------------------------------------------------------
def reading(units: int, at: float, serial: str = "SCRATCH0000001", device: str = "/dev/nvme0n1") -> WearReading:
    return WearReading(node="n1", device=device, serial=serial, at=at, data_units_written=units)


@pytest.mark.parametrize(
    ("first", "now", "days"),
    [
        ((0, 0.0), (TB_UNITS // 10, 10 * DAY_S), 90.0),       # 0.1 TB in 10 days: 0.9 TB left takes 90 days
        ((TB_UNITS // 2, 0.0), (TB_UNITS // 2, DAY_S), None),  # nothing written: never
        ((0, 0.0), (TB_UNITS, DAY_S), 0.0),                     # the rating written already
    ],
)
def test_projected_days(first: tuple[int, float], now: tuple[int, float], days: float | None) -> None:
    got, _ = projected_days(reading(*first), reading(*now), 10**12)
    assert (got if got is None else round(got, 2)) == days


def project(history: list[WearReading], units: int, at: float, **changes: Any) -> Any:
    ctx = run(tb1(**changes), {"nvme_list": NVME_LIST, "nvme_smart:/dev/nvme0n1": smart(data_units_written=units)})
    today = project_endurance(ctx, history, at)
    return area(ctx, "nvme")["nvme.nvme0n1.endurance_date"], today


@pytest.mark.parametrize(
    ("days_left", "outcome"),
    [(400, Outcome.PASS), (365, Outcome.PASS), (200, Outcome.WARN), (29, Outcome.FAIL)],
)
def test_projection_tiers(days_left: int, outcome: Outcome) -> None:
    # 20,000 units a day over 10 days, from where `days_left` days of that remain of a 10 TBW rating
    per_day, rated = 20_000, 10 * TB_UNITS
    start = rated - per_day * (days_left + 10)
    now = start + 10 * per_day
    result, today = project([reading(start, T0)], now, T0 + 10 * DAY_S,
                            **{"storage.nvme_health.endurance_tbw": 10.0})
    assert result.outcome is outcome and f"in {days_left} days" in result.found
    assert result.expected == ">= 30 days (warn below 365 days)" and "10.2 GB/day" in result.detail
    assert today == [reading(now, T0 + 10 * DAY_S)]


def test_first_run_makes_no_projection_and_says_so() -> None:
    result, today = project([], 1000, T0)
    assert result.outcome is Outcome.WAIVED and "first reading of serial SCRATCH0000001" in result.detail
    assert len(today) == 1


def test_replaced_drive_restarts_the_projection() -> None:
    result, _ = project([reading(1_500_000, T0, serial="OLDDRIVE")], 1000, T0 + 10 * DAY_S)
    assert result.outcome is Outcome.WAIVED and "drive replaced (serial OLDDRIVE -> SCRATCH0000001)" in result.detail


def test_readings_too_close_together_make_no_projection() -> None:
    result, _ = project([reading(0, T0)], TB_UNITS, T0 + 60)
    assert result.outcome is Outcome.WAIVED and "1 min apart" in result.detail


def test_past_the_rating_the_projection_fails() -> None:
    result, _ = project([reading(0, T0)], TB_UNITS + 5, T0 + 10 * DAY_S)
    assert result.outcome is Outcome.FAIL and result.found == "already reached"


# ---- the journal ---------------------------------------------------------------------------------------------
def test_journal_round_trip_projects_on_the_second_run(tmp_path: Path) -> None:
    path = tmp_path / "provision.db"
    Journal(path).close()
    sections = {"nvme_list": NVME_LIST, "nvme_smart:/dev/nvme0n1": smart(data_units_written=TB_UNITS // 10)}
    first = run(tb1(), sections)
    keep_wear(first, path, now=T0)
    assert area(first, "nvme")["nvme.nvme0n1.endurance_date"].outcome is Outcome.WAIVED
    sections["nvme_smart:/dev/nvme0n1"] = smart(data_units_written=TB_UNITS // 5)
    second = run(tb1(), sections)
    keep_wear(second, path, now=T0 + 10 * DAY_S)
    result = area(second, "nvme")["nvme.nvme0n1.endurance_date"]
    assert result.outcome is Outcome.WARN and "in 80 days" in result.found  # 0.8 TB left at 0.01 TB/day
    with Journal(path) as journal:
        kept = readings(journal, "n1")
    assert [(r.serial, r.data_units_written) for r in kept] == [("SCRATCH0000001", TB_UNITS // 10),
                                                                ("SCRATCH0000001", TB_UNITS // 5)]


def test_without_a_journal_nothing_is_created(tmp_path: Path) -> None:
    path = tmp_path / "none" / "provision.db"
    ctx = run(tb1(), {"nvme_list": NVME_LIST, "nvme_smart:/dev/nvme0n1": SMART})
    keep_wear(ctx, path, now=T0)
    result = area(ctx, "nvme")["nvme.nvme0n1.endurance_date"]
    assert result.outcome is Outcome.WAIVED and f"no journal at {path}" in result.detail
    assert not path.exists()
