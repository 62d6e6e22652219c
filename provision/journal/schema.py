"""The journal's schema as an ordered list of migrations; PRAGMA user_version counts those applied.

Append new migrations at the end; never edit one that has shipped.
"""

from __future__ import annotations

MIGRATIONS: tuple[str, ...] = (
    # 1: runs, node stages and applied actions (bring-up and campaigns alike)
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        args TEXT NOT NULL DEFAULT '{}',
        pid INTEGER,
        started_at REAL NOT NULL,
        ended_at REAL,
        outcome TEXT
    );
    CREATE TABLE node_stages (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        node TEXT NOT NULL,
        stage TEXT NOT NULL,
        started_at REAL NOT NULL,
        ended_at REAL,
        outcome TEXT,
        detail TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX node_stages_node ON node_stages(node, id);
    CREATE TABLE actions (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        node TEXT NOT NULL,
        stage TEXT NOT NULL,
        action TEXT NOT NULL,
        target TEXT NOT NULL DEFAULT '',
        started_at REAL NOT NULL,
        ended_at REAL,
        outcome TEXT,
        detail TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX actions_node ON actions(node, id);
    """,
    # 2: firmware campaigns
    """
    CREATE TABLE campaigns (
        name TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        digest TEXT NOT NULL,
        state TEXT NOT NULL,
        request TEXT,
        pid INTEGER,
        reason TEXT NOT NULL DEFAULT '',
        waves TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        ended_at REAL
    );
    CREATE TABLE campaign_nodes (
        campaign TEXT NOT NULL REFERENCES campaigns(name),
        node TEXT NOT NULL,
        wave INTEGER NOT NULL,
        state TEXT NOT NULL,
        before TEXT NOT NULL DEFAULT '{}',
        after TEXT NOT NULL DEFAULT '{}',
        flashed TEXT NOT NULL DEFAULT '[]',
        started_at REAL,
        ended_at REAL,
        error TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (campaign, node)
    );
    CREATE TABLE campaign_waves (
        campaign TEXT NOT NULL REFERENCES campaigns(name),
        wave INTEGER NOT NULL,
        state TEXT NOT NULL,
        started_at REAL,
        ended_at REAL,
        gate TEXT NOT NULL DEFAULT '',
        PRIMARY KEY (campaign, wave)
    );
    """,
    # 3: per-node leases: one holder at a time changes a node (provision.journal.locks)
    """
    CREATE TABLE node_locks (
        node TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        token TEXT NOT NULL,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        since REAL NOT NULL,
        expires_at REAL NOT NULL
    );
    """,
    # 4: what the configure stage last applied to a node and how the node looked right after
    # (provision.journal.configured): the converged re-run's evidence
    """
    CREATE TABLE configured (
        node TEXT PRIMARY KEY,
        run_id INTEGER,
        digest TEXT NOT NULL,
        manifest TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        recorded_at REAL NOT NULL
    );
    """,
    # 5: NVMe drives' Data Units Written as verify read them: the write rate between two runs projects
    # when a drive reaches its rated endurance (provision.journal.wear)
    """
    CREATE TABLE nvme_readings (
        id INTEGER PRIMARY KEY,
        node TEXT NOT NULL,
        device TEXT NOT NULL,
        serial TEXT NOT NULL,
        at REAL NOT NULL,
        data_units_written INTEGER NOT NULL
    );
    CREATE INDEX nvme_readings_drive ON nvme_readings(node, serial, at);
    """,
    # 6: several controllers on one campaign (provision.journal.claims): the leader lease that decides wave
    # starts and gates, and each node's health gate as recorded by whichever controller ran its turn
    """
    CREATE TABLE campaign_leases (
        campaign TEXT NOT NULL REFERENCES campaigns(name),
        role TEXT NOT NULL,
        owner TEXT NOT NULL,
        token TEXT NOT NULL,
        pid INTEGER NOT NULL,
        host TEXT NOT NULL,
        since REAL NOT NULL,
        expires_at REAL NOT NULL,
        PRIMARY KEY (campaign, role)
    );
    ALTER TABLE campaign_nodes ADD COLUMN gate TEXT;
    ALTER TABLE campaign_nodes ADD COLUMN controller TEXT NOT NULL DEFAULT '';
    """,
    # 7: the campaign's start/resume count, and the one in which each node's turn last ended: halt thresholds
    # count the nodes finished since the latest start/resume, whichever controller ran them
    """
    ALTER TABLE campaigns ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE campaign_nodes ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
    """,
    # 8: each node's platform identity every time it is read from its BMC (provision.journal.identities): what
    # the node was when a profile or an image was judged against it, and when a board was swapped
    """
    CREATE TABLE platform_identities (
        id INTEGER PRIMARY KEY,
        node TEXT NOT NULL,
        at REAL NOT NULL,
        source TEXT NOT NULL,
        identity TEXT NOT NULL
    );
    CREATE INDEX platform_identities_node ON platform_identities(node, at);
    """,
    # 9: a campaign started before all its targets were read: the targets not planned yet (JSON list), read
    # while its canary runs and added as its later waves (provision.campaign.engine)
    """
    ALTER TABLE campaigns ADD COLUMN unplanned TEXT NOT NULL DEFAULT '[]';
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)
