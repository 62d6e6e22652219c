"""What the configure stage last applied to each node, and the node's fingerprint right after.

One row per node: the digest of site.yml's inputs at that apply, the manifest of what the run managed
(files, services, the roles' own read-only commands) and the fingerprint of those on the node once the run
ended. The row is deleted before every apply and written only after one succeeded, so a run that failed or
was killed half-way leaves no record, and the next run checks the node in full.
"""

from __future__ import annotations

import json
import time

from pydantic import BaseModel, ConfigDict

from provision.journal.store import Journal


class ConfiguredRecord(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str
    run_id: int | None
    digest: str
    manifest: dict[str, list[str]]
    fingerprint: str
    recorded_at: float


def configured(journal: Journal, node: str) -> ConfiguredRecord | None:
    rows = journal.query("SELECT * FROM configured WHERE node = ?", (node,))
    if not rows:
        return None
    data = dict(rows[0])
    data["manifest"] = json.loads(data["manifest"])
    return ConfiguredRecord(**data)


def record_configured(journal: Journal, node: str, run_id: int | None, digest: str,
                      manifest: dict[str, list[str]], fingerprint: str) -> None:
    journal.execute(
        "INSERT INTO configured(node, run_id, digest, manifest, fingerprint, recorded_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (node) DO UPDATE SET run_id = excluded.run_id, "
        "digest = excluded.digest, manifest = excluded.manifest, fingerprint = excluded.fingerprint, "
        "recorded_at = excluded.recorded_at",
        (node, run_id, digest, json.dumps(manifest, sort_keys=True), fingerprint, time.time()),
    )


def forget_configured(journal: Journal, node: str) -> None:
    journal.execute("DELETE FROM configured WHERE node = ?", (node,))
