"""NVMe wear readings kept between verify runs: one row per drive per run (Data Units Written).

The endurance projection (provision.conformance.checks.nvme.project_endurance) compares a drive's
first reading with today's; a drive is known by its serial, so a replaced drive starts afresh.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from provision.journal.store import Journal


class WearReading(BaseModel):
    """One drive's Data Units Written (NVMe units of 512,000 bytes) at one moment (epoch seconds)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    device: str
    serial: str
    at: float
    data_units_written: int


def record_readings(journal: Journal, readings: list[WearReading]) -> None:
    """Keep today's readings (one transaction)."""
    with journal.transaction() as db:
        for r in readings:
            db.execute(
                "INSERT INTO nvme_readings(node, device, serial, at, data_units_written) VALUES (?, ?, ?, ?, ?)",
                (r.node, r.device, r.serial, r.at, r.data_units_written),
            )


def readings(journal: Journal, node: str) -> list[WearReading]:
    """Every reading kept for the node, oldest first."""
    rows = journal.query(
        "SELECT node, device, serial, at, data_units_written FROM nvme_readings WHERE node = ? ORDER BY at, id",
        (node,),
    )
    return [WearReading(**dict(r)) for r in rows]
